#!/usr/bin/env python3
"""report.py - bench/run's report: medians over rounds, ratios to the host
directory and to the FUSE ceiling (passthrough_ll), markdown tables, a
gnuplot plot of fsync latency, a JSON file.

Usage: report.py OUTDIR

Reads what bench/run left in OUTDIR: meta.txt and skips.txt (tab-separated)
and raw/r<ROUND>/<TARGET>/ (fio JSON, dbench text, manyfiles.py JSON,
B9.json, B10's *.check.json).
Writes OUTDIR/results.md, OUTDIR/results.json, OUTDIR/fsync_latency.png
(with its gnuplot script and data under OUTDIR/plot/).  A figure a round
did not produce is left out of that figure's median; one no round
produced is "n/a", and skips.txt says why.
"""
import json
import math
import os
import re
import statistics
import subprocess
import sys

TARGETS = ["host", "ordfs", "ordfs-dev", "ordfs-ref", "ext4", "fuse2fs", "passthrough", "nbd"]
# ordfs-ref's label, ordfs@REV, is set from meta.txt in main()
LABELS = {"host": "host dir", "ordfs": "ordfs", "ordfs-dev": "ordfs /dev/fuse",
          "ordfs-ref": "ordfs@ref",
          "ext4": "ext4 (loop)",
          "fuse2fs": "fuse2fs", "passthrough": "passthrough_ll (FUSE ceiling)",
          "nbd": "ordfs over NBD (+%s per request)" % os.environ.get("NBD_DELAY", "1ms")}
COLORS = {"host": "#000000", "ordfs": "#d62728", "ordfs-dev": "#8c564b",
          "ordfs-ref": "#e377c2",
          "ext4": "#1f77b4",
          "fuse2fs": "#2ca02c", "passthrough": "#9467bd", "nbd": "#ff7f0e"}
# the FUSE ceiling: every figure is also divided by this target's
CEILING = "passthrough"
MIB = 1024 * 1024


def read_json(path):
    """A tool's JSON output; fio may print warnings before it."""
    with open(path) as f:
        text = f.read()
    return json.loads(text[text.index("{"):])


def fio_job(raw, name, job):
    for j in read_json(os.path.join(raw, name))["jobs"]:
        if j["jobname"] == job:
            return j
    raise KeyError(job)


def sync_lat(raw, name, job):
    """The fsync/fdatasync latency section of one fio job."""
    return fio_job(raw, name, job)["sync"]["lat_ns"]


def pct_ms(raw, name, job, p):
    return sync_lat(raw, name, job)["percentile"]["%f" % p] / 1e6


def dbench(raw):
    with open(os.path.join(raw, "B6.txt")) as f:
        text = f.read()
    mbs = float(re.search(r"^Throughput ([\d.]+) MB/sec", text, re.M).group(1))
    flush = re.search(r"^\s*Flush\s+\d+\s+([\d.]+)\s+([\d.]+)", text, re.M)
    return {"mbs": mbs, "flush_avg": float(flush.group(1)),
            "flush_max": float(flush.group(2))}


def reader_mibs(raw):
    with open(os.path.join(raw, "B7-reader.txt")) as f:
        passes = [int(x) for x in f.read().split()]
    with open(os.path.join(raw, "B7-reader-time.txt")) as f:
        start, stop = (float(x) for x in f.read().split())
    return sum(passes) / MIB / (stop - start)


def manyfiles(raw, name, key):
    return read_json(os.path.join(raw, name))[key]


def b9(key):
    return lambda d: read_json(os.path.join(d, "B9.json"))[key]


def b10(jobs, key):
    """A figure of B10's check (workloads.sh b10_check) of the run of JOBS jobs."""
    return lambda d: read_json(os.path.join(d, "B10-%d.check.json" % jobs))[key]


def b2_writer(d):
    """B2's writer, MiB/s (fio's: its bytes over its run, the final
    fdatasync included)."""
    return fio_job(d, "B2.json", "writer")["write"]["bw_bytes"] / MIB


def b2_disk(d):
    """The disk's bandwidth measured just before B2 in the same round:
    O_DIRECT 1 MiB writes to a file of the host filesystem, then fsync."""
    return fio_job(d, "B2-disk.json", "disk")["write"]["bw_bytes"] / MIB


# (id, workload, figure, unit, better: "hi", "lo" or "=" (neither: a check),
# extractor of one round)
METRICS = [
    ("B1.rate", "B1", "fsyncs/s", "/s", "hi",
     lambda d: fio_job(d, "B1.json", "B1")["write"]["iops"]),
    ("B1.p50", "B1", "fsync p50", "ms", "lo",
     lambda d: pct_ms(d, "B1.json", "B1", 50)),
    ("B1.p99", "B1", "fsync p99", "ms", "lo",
     lambda d: pct_ms(d, "B1.json", "B1", 99)),
    ("B2.p50", "B2", "fsync p50", "ms", "lo",
     lambda d: pct_ms(d, "B2.json", "fsyncer", 50)),
    ("B2.p99", "B2", "fsync p99", "ms", "lo",
     lambda d: pct_ms(d, "B2.json", "fsyncer", 99)),
    ("B2.max", "B2", "fsync max", "ms", "lo",
     lambda d: sync_lat(d, "B2.json", "fsyncer")["max"] / 1e6),
    ("B2.writer", "B2", "writer MiB/s", "MiB/s", "hi", b2_writer),
    ("B2.disk", "B2", "disk MiB/s (O_DIRECT, same round)", "MiB/s", "hi", b2_disk),
    ("B2.share", "B2", "writer / disk MiB/s", "x", "hi",
     lambda d: b2_writer(d) / b2_disk(d)),
    ("B2.reached", "B2", "disk bytes written / writer bytes", "x", "=",
     lambda d: read_json(os.path.join(d, "B2.check.json"))[
         "disk_written_per_writer_byte"]),
    ("B3.iops", "B3", "IOPS", "/s", "hi",
     lambda d: fio_job(d, "B3.json", "B3")["write"]["iops"]),
    ("B3.p99", "B3", "fdatasync p99", "ms", "lo",
     lambda d: pct_ms(d, "B3.json", "B3", 99)),
    ("B4.write", "B4", "write MiB/s (with fsync)", "MiB/s", "hi",
     lambda d: fio_job(d, "B4-write.json", "B4-write")["write"]["bw_bytes"] / MIB),
    ("B4.cold", "B4", "cold read MiB/s", "MiB/s", "hi",
     lambda d: fio_job(d, "B4-cold.json", "B4-read")["read"]["bw_bytes"] / MIB),
    ("B4.warm", "B4", "warm read MiB/s", "MiB/s", "hi",
     lambda d: fio_job(d, "B4-warm.json", "B4-read")["read"]["bw_bytes"] / MIB),
    ("B5.create", "B5", "create files/s (not durable)", "/s", "hi",
     lambda d: manyfiles(d, "B5-fsync.json", "create_files_per_s")),
    ("B5.fsync", "B5", "files/s, fsync each file+dir", "/s", "hi",
     lambda d: manyfiles(d, "B5-fsync.json", "files_per_s")),
    ("B5.sync", "B5", "files/s, one syncfs / ordfsctl sync", "/s", "hi",
     lambda d: manyfiles(d, "B5-sync.json", "files_per_s")),
    ("B5.stat", "B5", "stat of the warm tree, entries/s", "/s", "hi",
     lambda d: manyfiles(d, "B5-fsync.json", "stat_warm_per_s")),
    ("B6.mbs", "B6", "dbench MB/s", "MB/s", "hi", lambda d: dbench(d)["mbs"]),
    ("B6.flush_avg", "B6", "Flush mean", "ms", "lo",
     lambda d: dbench(d)["flush_avg"]),
    ("B6.flush_max", "B6", "Flush max", "ms", "lo",
     lambda d: dbench(d)["flush_max"]),
    ("B7.p50", "B7", "fsync p50", "ms", "lo",
     lambda d: pct_ms(d, "B7.json", "B7", 50)),
    ("B7.p99", "B7", "fsync p99", "ms", "lo",
     lambda d: pct_ms(d, "B7.json", "B7", 99)),
    ("B7.vsB1", "B7", "fsync p99 / B1 p99", "x", "lo", None),
    ("B7.reader", "B7", "reader MiB/s", "MiB/s", "hi", reader_mibs),
    ("B8.1", "B8", "fsyncs/s, 1 thread", "/s", "hi",
     lambda d: fio_job(d, "B8.json", "t1")["write"]["iops"]),
    ("B8.2", "B8", "fsyncs/s, 2 threads", "/s", "hi",
     lambda d: fio_job(d, "B8.json", "t2")["write"]["iops"]),
    ("B8.4", "B8", "fsyncs/s, 4 threads", "/s", "hi",
     lambda d: fio_job(d, "B8.json", "t4")["write"]["iops"]),
    ("B8.8", "B8", "fsyncs/s, 8 threads", "/s", "hi",
     lambda d: fio_job(d, "B8.json", "t8")["write"]["iops"]),
    ("B9.copy", "B9", "unpack the source (tar -x)", "s", "lo", b9("copy_s")),
    ("B9.setup", "B9", "meson setup", "s", "lo", b9("setup_s")),
    ("B9.build", "B9", "ninja -j2", "s", "lo", b9("build_s")),
    ("B9.clone", "B9", "git clone", "s", "lo", b9("clone_s")),
    ("B9.status", "B9", "git status, all runs", "s", "lo", b9("status_s")),
    ("B9.rm", "B9", "rm -rf of it all", "s", "lo", b9("rm_s")),
    ("B9.total", "B9", "total", "s", "lo", b9("total_s")),
    ("B10.rate1", "B10", "fsyncs/s, 1 job", "/s", "hi",
     lambda d: fio_job(d, "B10-1.json", "j1")["write"]["iops"]),
    ("B10.p50", "B10", "fsync p50, 1 job", "ms", "lo",
     lambda d: pct_ms(d, "B10-1.json", "j1", 50)),
    ("B10.p99", "B10", "fsync p99, 1 job", "ms", "lo",
     lambda d: pct_ms(d, "B10-1.json", "j1", 99)),
    ("B10.flush1", "B10", "flushes per fsync, 1 job", "x", "lo",
     b10(1, "flushes_per_fsync")),
    ("B10.rate8", "B10", "fsyncs/s, 8 jobs", "/s", "hi",
     lambda d: fio_job(d, "B10-8.json", "j8")["write"]["iops"]),
    ("B10.flush8", "B10", "flushes per fsync, 8 jobs", "x", "lo",
     b10(8, "flushes_per_fsync")),
]

BETTER = {"hi": "higher", "lo": "lower", "=": "neither"}
# figures of the host's disk, not of the target: not divided by the ceiling's
NOT_OVER_CEILING = {"B2.disk", "B2.reached"}

WORKLOADS = {
    "B1": "4 KiB append + fsync, one file, alone",
    "B2": "B1 + a 1 MiB streaming writer on another file that fdatasyncs "
          "every few MiB, so its data reaches the disk on every target; "
          "its MiB/s over the disk's, measured in the same round",
    "B3": "4 KiB random overwrite + fdatasync, preallocated file",
    "B4": "1 MiB sequential write + fsync, read back cold and warm",
    "B5": "create + write 4 KiB + close many files, then durable; then the warm tree listed and statted",
    "B6": "dbench, 2 clients",
    "B7": "B1 + a tar reader looping over a tree on the same target",
    "B8": "N threads, each 4 KiB append + fsync on its own file",
    "B9": "a developer's day: unpack the project's source, meson setup, "
          "ninja, git clone, git status, rm -rf (seconds per phase)",
    "B10": "a log file's pattern: 100-byte append + fsync, 1 job on one "
           "file, then 8 jobs on a file each; flushes per fsync from the "
           "flush counter below the target",
}
CURVES = [("B1", "B1.json", "B1"), ("B2", "B2.json", "fsyncer"),
          ("B7", "B7.json", "B7")]


def read_tsv(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return rows


def unit_suffix(what, unit):
    """ " (ms)" after a figure's name, unless the name already says it."""
    if unit in ("/s", "x") or unit in what.split():
        return ""
    return " (%s)" % unit


def fmt(v):
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3f" % v


def main():
    out = sys.argv[1]
    meta = {}
    busy = []
    for row in read_tsv(os.path.join(out, "meta.txt")):
        if row[0] == "busy":
            busy.append(row[1])
        else:
            meta[row[0]] = row[1] if len(row) > 1 else ""
    skips = []
    for s in read_tsv(os.path.join(out, "skips.txt")):
        if s not in skips:
            skips.append(s)
    LABELS["ordfs-ref"] = "ordfs@%s" % meta.get("ref", "?")
    active = meta.get("targets", "").split()
    skipped_all = [s[0] for s in skips if s[1] == "all"]
    columns = [t for t in TARGETS if t in active or t in skipped_all]
    rawroot = os.path.join(out, "raw")
    rounds = sorted((d for d in os.listdir(rawroot) if re.fullmatch(r"r\d+", d)),
                    key=lambda d: int(d[1:]))

    # every figure of every round, then the medians
    values = {}
    for mid, _, _, _, _, get in METRICS:
        for t in active:
            vals = []
            for r in rounds:
                d = os.path.join(rawroot, r, t)
                try:
                    vals.append(float(get(d)) if get else None)
                except (OSError, KeyError, ValueError, AttributeError, TypeError,
                        ZeroDivisionError):
                    vals.append(None)
            values[(mid, t)] = vals
    med = {}
    for key, vals in values.items():
        got = [v for v in vals if v is not None]
        med[key] = statistics.median(got) if got else None
    for t in active:
        b1, b7 = med.get(("B1.p99", t)), med.get(("B7.p99", t))
        med[("B7.vsB1", t)] = b7 / b1 if b1 and b7 is not None else None

    def ratio(mid, t, ref="host"):
        h, v = med.get((mid, ref)), med.get((mid, t))
        return v / h if h and v is not None else None

    # the table
    lines = []
    head = "| workload | figure | better |" + "".join(
        " %s |" % LABELS[t] for t in columns)
    lines.append(head)
    lines.append("|---|---|---|" + "---:|" * len(columns))
    for mid, w, what, unit, better, get in METRICS:
        if not any(med.get((mid, t)) is not None for t in active):
            continue
        unit_s = unit_suffix(what, unit)
        cells = []
        for t in columns:
            if t not in active:
                cells.append("skipped")
                continue
            v = med.get((mid, t))
            if v is None:
                cells.append("n/a")
                continue
            cell = fmt(v)
            if t != "host":
                r = ratio(mid, t)
                cell += " (%s)" % ("%.2f" % r if r is not None else "-")
            vals = values.get((mid, t))
            if vals and get is not None:
                k = sum(v is not None for v in vals)
                if k < len(vals):
                    cell += " [%d of %d rounds]" % (k, len(vals))
            cells.append(cell)
        lines.append("| %s | %s%s | %s |%s" % (
            w, what, unit_s, BETTER[better],
            "".join(" %s |" % c for c in cells)))
    table = "\n".join(lines)

    # the second table: every figure over the FUSE ceiling's
    ceiling_table = None
    others = [t for t in columns if t not in ("host", CEILING)]
    if CEILING in active and others:
        lines = ["| workload | figure | better |" + "".join(
            " %s |" % LABELS[t] for t in others)]
        lines.append("|---|---|---|" + "---:|" * len(others))
        for mid, w, what, unit, better, _ in METRICS:
            if med.get((mid, CEILING)) is None or mid in NOT_OVER_CEILING:
                continue
            cells = []
            for t in others:
                r = ratio(mid, t, CEILING) if t in active else None
                cells.append("%.2f" % r if r is not None else
                             ("skipped" if t not in active else "n/a"))
            unit_s = unit_suffix(what, unit)
            lines.append("| %s | %s%s | %s |%s" % (
                w, what, unit_s, BETTER[better],
                "".join(" %s |" % c for c in cells)))
        ceiling_table = "\n".join(lines)

    # the latency curves: per target, per percentile, the median over rounds
    curves = {}
    for w, name, job in CURVES:
        for t in active:
            per_p, samples = {}, []
            for r in rounds:
                try:
                    lat = sync_lat(os.path.join(rawroot, r, t), name, job)
                except (OSError, KeyError, ValueError):
                    continue
                samples.append(lat["N"])
                for p, ns in lat["percentile"].items():
                    per_p.setdefault(float(p), []).append(ns / 1e6)
            if per_p:
                # a percentile with less than one sample above it is only
                # the maximum again: drop it
                n_med = statistics.median(samples)
                curves[(w, t)] = {p: statistics.median(v)
                                  for p, v in sorted(per_p.items())
                                  if (1 - p / 100) * n_med >= 1}
    plot_ok = plot(out, curves, active)

    # results.md
    n = len(rounds)
    load = "load average %s at the start, %s at the end" % (
        meta.get("load_start", "?"), meta.get("load_end", "?"))
    md = []
    md.append("# ordfs benchmark, %s run of %s\n" % (
        meta.get("mode", "?"), meta.get("date", "?")))
    md.append("Each figure is the **median of %d round%s**; in brackets, its "
              "ratio to the host directory measured in the same run (for "
              "rates higher is better, for latencies lower is better; the "
              "column `better` says which). The machine is shared and noisy "
              "(%s, %s CPUs%s): medians of rounds, and the ratios, are what "
              "to trust, not single absolute figures.\n" % (
                  n, "" if n == 1 else "s", load, meta.get("cpus", "?"),
                  "; busy at the start: " + ", ".join(busy) if busy else ""))
    md.append(table + "\n")
    if ceiling_table:
        md.append("Against the FUSE ceiling: each median over that of "
                  "**passthrough_ll** (libfuse's example, `-o cache=always`, "
                  "over a directory of the same host filesystem) from the same "
                  "run: what a FUSE daemon that does nothing of its own "
                  "reaches. For rates above 1 is better than the ceiling, for "
                  "latencies and seconds below 1.\n")
        md.append(ceiling_table + "\n")
    md.append("Workloads (sizes of this run: %s s per fio run for B1, B2, B3 "
              "and B7, B8 %s per thread count, B2 writer file %s with an "
              "fdatasync every %s MiB and a disk probe of %s s, B3 file %s, "
              "B4 %s, B5 %s files in %s directories, B6 %s s, B7 tree of %s; "
              "B9 the project's tree at %s, `%s`, `%s`, %s git status runs; "
              "B10 %s s per fio run):\n"
              % (meta.get("runtime_s"), meta.get("b8_runtime"),
                 meta.get("b2_writer_size"), meta.get("b2_sync_mib"),
                 meta.get("b2_disk_runtime_s"), meta.get("b3_size"),
                 meta.get("b4_size"), meta.get("b5_files"), meta.get("b5_dirs"),
                 meta.get("b6_time"), meta.get("tree"), meta.get("b9_source"),
                 meta.get("b9_meson"), meta.get("b9_ninja"),
                 meta.get("b9_status_runs"), meta.get("runtime_s")))
    for w, text in WORKLOADS.items():
        md.append("- **%s** %s" % (w, text))
    md.append("")
    md.append("Targets, on images of %s in one directory of the host's %s "
              "filesystem: **host dir** a plain directory there (the "
              "reference); **ordfs** a fresh mkfs.ordfs image mounted by the "
              "daemon (default options: data=ordered, barrier, commit=5); "
              "**ext4 (loop)** mkfs.ext4 on an image file, mount -o loop; "
              "**fuse2fs** the same kind of ext4 image served by fuse2fs; "
              "**passthrough_ll** libfuse's passthrough_ll example (built "
              "from Debian's libfuse3-dev examples) with `-o cache=always` "
              "over a directory of the host filesystem: the FUSE ceiling.%s "
              "**ordfs** was built from %s.\n"
              % (meta.get("image_size"), meta.get("host_fs"),
                 (" **%s** the same as ordfs (same options, same image "
                  "size), with mkfs.ordfs, the daemon and ordfsctl built from "
                  "revision %s (`bench/run --ref`): before and after in one "
                  "run." % (LABELS["ordfs-ref"], meta.get("ref_commit")))
                 if "ordfs-ref" in active else "",
                 "the work tree at %s" % meta.get("ordfs_source", "?")))
    md.append("Notes: latencies are fio's, of the fsync (fdatasync for B3) "
              "call alone. B4 cold: the FUSE targets are unmounted and "
              "mounted again, then the host's caches are dropped for all; "
              "warm: read again at once (ordfs lets the kernel keep a file's "
              "pages across opens when no read could change its atime, as "
              "after the first read under relatime: the warm read then comes "
              "from the kernel's cache). B5 makes everything durable "
              "either by fsync of every file and directory, or by one call: "
              "syncfs (`sync -f`) on host and ext4, `ordfsctl sync` on ordfs "
              "(syncfs does not reach FUSE daemons; fuse2fs has no such call), "
              "syncfs of its backing directory for passthrough_ll (it writes "
              "through at once, without -o writeback). "
              "B6: dbench's own MB/s and its Flush latency (mean and max: "
              "dbench gives no percentiles). B7's reader counts complete tar "
              "passes only. B9 runs everything with -j2 and no compiler "
              "cache; its git status runs are counted together, and the "
              "clone must come out clean.\n")
    if any(med.get(("B2.writer", t)) is not None for t in active):
        md.append("B2: the writer writes 1 MiB blocks, buffered, and calls "
                  "fdatasync after every %s MiB (and once at the end, timed): "
                  "at most that much of its data is not on the disk yet, "
                  "wherever it waits (the host's page cache, that of a loop "
                  "device's image file: the loop device turns ext4's flush "
                  "into an fsync of the image; a FUSE daemon's memory: FUSE "
                  "passes fsync to the daemon). The disk's bandwidth is "
                  "measured just before each target's B2, in the same round: "
                  "fio, 1 MiB writes with O_DIRECT for %s s over a %s MiB file "
                  "of the host filesystem that holds the images, written in "
                  "place, then one fsync, timed. `writer / disk MiB/s` is the "
                  "median over rounds of each round's ratio. `disk bytes "
                  "written / writer bytes`: what the disk below the work "
                  "directory (%s) wrote during the fio run, from "
                  "/proc/diskstats, over the writer's bytes; at 1 or above "
                  "the writer's data did reach the disk; it counts everything "
                  "written there (the fsyncer's appends and every journal, "
                  "and other processes' writes: an upper bound on a shared "
                  "machine).\n" % (
                      meta.get("b2_sync_mib"), meta.get("b2_disk_runtime_s"),
                      meta.get("b2_disk_size_mib"), meta.get("b2_disk", "?")))
    sources = b10_sources(rawroot, rounds, active)
    if sources:
        md.append("B10's flushes per fsync: the flushes between the start and "
                  "the end of each fio run over the fsyncs it did. The host "
                  "directory's counter is that of its whole disk, other "
                  "processes' flushes included (an upper bound on a busy "
                  "machine). Counters: %s.\n" % "; ".join(
                      "%s: %s" % (LABELS[t], s) for t, s in sources))
    try:
        with open(os.path.join(out, "fuse2fs.log")) as f:
            if "journal is not supported" in f.read():
                md.append("fuse2fs said: \"Writing to the journal is not "
                          "supported\": it updates the ext4 image without "
                          "journaling, so it has less to write per fsync than "
                          "ext4 or ordfs and is not crash-consistent the same "
                          "way.\n")
    except OSError:
        pass
    if plot_ok:
        md.append("![fsync latency](fsync_latency.png)\n")
        md.append("`fsync_latency.png`: for B1, B2 and B7, the share of fsyncs "
                  "slower than a latency (log-log; each point the median over "
                  "rounds of one fio percentile, from p1 to p99.99, leaving "
                  "out those with less than one fsync beyond them).\n")
    if skips:
        md.append("Skipped or failed:\n")
        for s in skips:
            md.append("- %s: %s: %s" % (LABELS.get(s[0], s[0]), s[1], s[2]))
        md.append("")
    md.append("Tools: %s;%s fio %s; dbench %s; fuse2fs %s; libfuse %s; %s; "
              "kernel %s. The run took %s s. Raw output of every tool: "
              "`raw/r<round>/<target>/`."
              % (meta.get("ordfs"),
                 " ordfs@%s: %s;" % (meta.get("ref"), meta.get("ordfs_ref"))
                 if "ref" in meta else "",
                 meta.get("fio"), meta.get("dbench"),
                 meta.get("fuse2fs"), meta.get("libfuse3"), meta.get("tools"),
                 meta.get("kernel"), meta.get("elapsed_s")))
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    # results.json
    result = {
        "meta": meta, "busy_at_start": busy, "skips": skips,
        "rounds": n,
        "metrics": [{
            "id": mid, "workload": w, "figure": what, "unit": unit,
            "better": BETTER[better],
            "targets": {t: {"median": med.get((mid, t)),
                            "ratio_to_host": ratio(mid, t),
                            "ratio_to_ceiling": ratio(mid, t, CEILING),
                            "rounds": values.get((mid, t))} for t in active},
        } for mid, w, what, unit, better, _ in METRICS],
        "fsync_latency_ms": {"%s/%s" % k: {"%g" % p: v for p, v in c.items()}
                             for k, c in curves.items()},
    }
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("report: wrote %s" % os.path.join(out, "results.md"))


def b10_sources(rawroot, rounds, active):
    """Where each target's B10 flush count came from (or why it has none),
    as the first round that ran B10 says."""
    sources = []
    for t in active:
        for r in rounds:
            try:
                src = read_json(os.path.join(rawroot, r, t, "B10-1.check.json"))[
                    "flush_source"]
            except (OSError, KeyError, ValueError):
                continue
            sources.append((t, src))
            break
    return sources


def plot(out, curves, active):
    """fsync_latency.png: one panel per workload, one line per target."""
    if not curves:
        return False
    pdir = os.path.join(out, "plot")
    os.makedirs(pdir, exist_ok=True)
    gp = ['set terminal pngcairo size 1500,520 font "sans,10"',
          'set output "%s"' % os.path.join(out, "fsync_latency.png"),
          "set multiplot layout 1,%d title \"fsync latency distribution "
          "(median over rounds of each percentile)\"" % len(CURVES),
          "set logscale xy", 'set format y "10^{%L}"', "set yrange [5e-5:1]",
          "set grid xtics ytics mxtics", 'set xlabel "fsync latency (ms)"',
          'set ylabel "share of fsyncs slower"', "set key bottom left"]
    every = [ms for c in curves.values() for ms in c.values() if ms > 0]
    if every:  # one x range for all panels, whole decades
        gp.append("set xrange [%g:%g]" % (10 ** math.floor(math.log10(min(every))),
                                         10 ** math.ceil(math.log10(max(every)))))
    for w, _, _ in CURVES:
        plots = []
        for t in active:
            c = curves.get((w, t))
            if not c:
                continue
            path = os.path.join(pdir, "%s_%s.dat" % (w, t))
            with open(path, "w") as f:
                f.write("# latency_ms share_slower (percentile)\n")
                for p, ms in c.items():
                    f.write("%g %g %g\n" % (ms, 1 - p / 100, p))
            plots.append('"%s" using 1:2 with linespoints lw 2 pt 7 ps 0.5 '
                         'lc rgb "%s" title "%s"' % (path, COLORS[t], LABELS[t]))
        gp.append('set title "%s: %s"' % (w, WORKLOADS[w]))
        gp.append("plot " + ", ".join(plots) if plots else "plot 2 notitle")
    gp.append("unset multiplot")
    script = os.path.join(pdir, "fsync_latency.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    try:
        subprocess.run(["gnuplot", script], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("report: no plot (gnuplot: %s)" % e, file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    main()
