#!/usr/bin/env python3
"""check_layers.py - calls only go down: checks the built objects of
libordfs against the layer table (docs/layers.txt).

Usage: check_layers.py LAYERS_TXT LIBORDFS_A [--control A B]

Reads every member of the archive with nm, resolves each undefined symbol
to the member that defines it, and fails (exit 1) listing every use of a
symbol of a higher layer, and every member whose folder is in no layer.
--control A B is the control that shows the check catches a call up: it
exchanges layers A and B of the table first (A below B, and B uses A's
symbols) and succeeds only if the check then finds a call up.
"""
import subprocess
import sys


def read_layers(path):
    rank = {}
    names = []
    with open(path) as f:
        for line in f:
            words = line.split('#', 1)[0].split()
            if not words:
                continue
            names.append(words[0])
            for folder in words[1:]:
                rank[folder] = len(names) - 1
    return rank, names


def read_archive(path):
    """{member: (defined symbols, undefined symbols)} from nm."""
    out = subprocess.run(['nm', path], capture_output=True, text=True, check=True).stdout
    members = {}
    cur = None
    for line in out.splitlines():
        if line.endswith(':') and ' ' not in line:
            cur = line[:-1].rsplit("/", 1)[-1]
            members[cur] = (set(), set())
            continue
        parts = line.split()
        if cur is None or len(parts) < 2:
            continue
        if len(parts) == 2 and parts[0] == 'U':
            members[cur][1].add(parts[1])
        elif len(parts) == 3 and parts[1] in 'TDBRCV':
            members[cur][0].add(parts[2])
    return members


def folder_of(member):
    # meson names an object <folder>_<file>.c.o
    return member.split('_', 1)[0] if '_' in member else ''


def main(argv):
    if len(argv) not in (3, 6):
        print(__doc__, file=sys.stderr)
        return 2
    rank, names = read_layers(argv[1])
    control = len(argv) == 6 and argv[3] == '--control'
    if len(argv) == 6 and not control:
        print(__doc__, file=sys.stderr)
        return 2
    if control:
        a, b = names.index(argv[4]), names.index(argv[5])
        rank = {f: (b if r == a else a if r == b else r) for f, r in rank.items()}
    members = read_archive(argv[2])
    definer = {}
    for m, (defs, _) in members.items():
        for s in defs:
            definer[s] = m
    problems = []
    for m in sorted(members):
        if folder_of(m) not in rank:
            problems.append(f'{m}: its folder "{folder_of(m)}" is in no layer of {argv[1]}')
    for m in sorted(members):
        if folder_of(m) not in rank:
            continue
        mine = rank[folder_of(m)]
        for s in sorted(members[m][1]):
            d = definer.get(s)
            if d is None or d == m or folder_of(d) not in rank:
                continue
            theirs = rank[folder_of(d)]
            if theirs > mine:
                problems.append(f'{m} ({names[mine]}) uses {s} of {d} ({names[theirs]}): '
                                'a call up')
    for p in problems:
        print(p)
    if control:
        calls_up = [p for p in problems if p.endswith('a call up')]
        print(f'control ({argv[4]} and {argv[5]} exchanged): '
              f'{len(calls_up)} call(s) up found, as expected' if calls_up else
              'control: no call up found after the exchange: the check is blind')
        return 0 if calls_up and len(calls_up) == len(problems) else 1
    print(f'{len(members)} objects, {len(names)} layers: '
          f'{"OK" if not problems else str(len(problems)) + " problem(s)"}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
