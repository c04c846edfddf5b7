#!/usr/bin/env python3
"""check_design.py - keeps docs/design/ (one page per subsystem) true to
the tree.

Usage: check_design.py ROOT            the checks below; exit 1 on a failure
       check_design.py ROOT --old FILE also: nothing of FILE (the single
                                       design document the pages replaced)
                                       is lost in the move

Checks, each failure one line:
  - every test a page names exists (a meson test, or a test function or
    script in tests/), so a rules table never cites a test that is gone;
  - every rule label in a page's rules table is defined once across pages;
  - every page of docs/design/ that a file of the tree names exists, and
    every folder of src/ names its page in a header comment;
  - no file of the tree names the old single-file design document.
With --old: every heading, every bold lead ("**The order**"), every rule
label (J1, F3, E2, ...) of FILE appears in the pages, and the share of
FILE's non-blank lines found verbatim in them is printed (the lines not
found are listed: text that was edited while moving, to be read by eye).
"""
import os
import re
import subprocess
import sys

OLD_NAME = "DESIGN" + ".md"  # split so this script does not name it
TEST_NAME = re.compile(r"\b((?:test|cli|nbd|hostile)_[a-z0-9_]+|crash_states|layers_control)\b")
PAGE_REF = re.compile(r"design/([A-Za-z0-9-]+\.md)")
TEXT_EXT = (".c", ".h", ".md", ".sh", ".py", ".8", ".build", ".txt", ".supp")


def tree_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split("\n")
        files = [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return [f for f in files if f.endswith(TEXT_EXT) and os.path.isfile(os.path.join(root, f))]


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def known_tests(root, files):
    names = set()
    for f in files:
        if not f.startswith("tests/"):
            continue
        text = read(os.path.join(root, f))
        if f.endswith("meson.build"):
            names |= set(re.findall(r"test\(\s*'([a-z0-9_+-]+)'", text))
            names |= set(re.findall(r"'([a-z0-9_]+)'", text))
        names |= set(re.findall(r"START_TEST\s*\((\w+)\)", text))
        names |= set(re.findall(r"^\w[\w ]*\b(test_[a-z0-9_]+)\s*\(", text, re.M))  # C
        names |= set(re.findall(r"^(test_[a-z0-9_]+)\s*\(\)", text, re.M))  # shell functions
        base = os.path.splitext(os.path.basename(f))[0]
        names.add(base)
        if base.startswith("test_nbd_"):  # registered as nbd_NAME
            names.add(base[len("test_"):])
    # meson options (test_hooks) are named like tests but are not cited as
    # one: accept them
    opts = os.path.join(root, "meson_options.txt")
    if os.path.exists(opts):
        names |= set(re.findall(r"option\(\s*'([a-z0-9_]+)'", read(opts)))
    return names


def check_tree(root):
    fails = []
    design = os.path.join(root, "docs", "design")
    pages = sorted(p for p in os.listdir(design) if p.endswith(".md"))
    files = tree_files(root)
    tests = known_tests(root, files)
    labels = {}
    for p in pages:
        text = read(os.path.join(design, p))
        cited = set(TEST_NAME.findall(text))
        # nbd_* is also libnbd's prefix (nbd_aio_pread): a page cites an NBD
        # test by name only in its rules table
        cited = {n for n in cited if not n.startswith("nbd_")} | \
            {n for l in text.split("\n") if l.startswith("| ") for n in TEST_NAME.findall(l)}
        for name in sorted(cited):
            if name not in tests:
                fails.append(f"docs/design/{p}: names test {name}, which tests/ does not have")
        in_rules = False
        for line in text.split("\n"):
            if line.startswith("## "):
                in_rules = line.startswith("## Rules")
            m = re.match(r"\| ([A-Z]{1,2}[0-9]+(?:-[A-Z]?[0-9]+)?) \|", line)
            if in_rules and m:
                if m.group(1) in labels:
                    fails.append(f"docs/design/{p}: rule {m.group(1)} is also defined in {labels[m.group(1)]}")
                labels[m.group(1)] = p
    for f in files:
        text = read(os.path.join(root, f))
        for page in set(PAGE_REF.findall(text)):
            if page not in pages:
                fails.append(f"{f}: names docs/design/{page}, which does not exist")
        if OLD_NAME in text and not f.endswith("check_design.py") and not f.startswith("bench/results/"):
            fails.append(f"{f}: names {OLD_NAME}, which is now docs/design/")
    src = os.path.join(root, "src")
    for folder in sorted(os.listdir(src)):
        d = os.path.join(src, folder)
        if not os.path.isdir(d):
            continue
        heads = [read(os.path.join(d, n)) for n in os.listdir(d) if n.endswith((".h", ".c"))]
        if not any(PAGE_REF.search(h.split("*/")[0]) for h in heads):
            fails.append(f"src/{folder}/: no header comment names its docs/design/ page")
    return fails, len(pages), len(labels)


def check_move(root, old):
    fails = []
    design = os.path.join(root, "docs", "design")
    new = "\n".join(read(os.path.join(design, p)) for p in sorted(os.listdir(design)))
    new_lines = {l.strip() for l in new.split("\n")}
    old_text = read(old)
    heads = [re.sub(r"^#+ ", "", l).strip() for l in old_text.split("\n") if l.startswith("#")]
    bolds = re.findall(r"\*\*([^*]+)\*\*", old_text)
    labels = set(re.findall(r"\b([JFE][0-9])\b", old_text))
    for h in heads:
        if not re.search(r"^#+ " + re.escape(h) + r"\s*$", new, re.M):
            fails.append(f"heading lost: {h}")
    for b in bolds:
        if f"**{b}**" not in new:
            fails.append(f"bold lead lost: {b}")
    for lab in sorted(labels):
        if not re.search(r"\b" + lab + r"\b", new):
            fails.append(f"rule label lost: {lab}")
    lines = [l.strip() for l in old_text.split("\n") if l.strip()]
    missing = [l for l in lines if l not in new_lines]
    print(f"move: {len(heads)} headings, {len(set(bolds))} bold leads, {len(labels)} rule labels "
          f"({' '.join(sorted(labels))}) checked; {len(lines) - len(missing)} of {len(lines)} "
          f"non-blank lines found verbatim")
    for l in missing:
        print(f"  edited or dropped: {l}")
    return fails


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--old"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    fails, npages, nlabels = check_tree(root)
    if len(sys.argv) == 4:
        fails += check_move(root, sys.argv[3])
    for f in fails:
        print("FAIL " + f)
    print(f"design pages: {npages}, rules in their tables: {nlabels}, failures: {len(fails)}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
