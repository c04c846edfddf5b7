#!/usr/bin/env python3
"""report.py OUT_DIR - tables of bench/uring_probe.sh's runs.

Reads OUT_DIR/raw/rN_TRANSPORT_OP_cC.out (the probe's RESULT line) and
.perf (perf stat -x, output) and OUT_DIR/meta.txt; writes results.tsv
(every run) and results.md (medians over the runs), and prints the tables.
"""
import glob
import os
import re
import statistics
import sys

out = sys.argv[1]
OPS = ["getattr", "lookup", "create", "read", "write"]
TRANSPORTS = ["dev", "uring", "libfuse"]


def parse_result(path):
    res, load = None, float("nan")
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT"):
                d = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
                res = {k: v.strip('"') for k, v in d.items()}
            elif line.startswith("LOAD "):
                load = float(line.split()[1])
    if res is not None:
        res["load1"] = load
    return res


def parse_perf(path):
    ev = {}
    if not os.path.exists(path):
        return ev
    with open(path) as f:
        for line in f:
            p = line.strip().split(",")
            if len(p) > 2 and p[0] and p[0][0].isdigit():
                ev[p[2]] = float(p[0])
    return ev


runs = []
for path in sorted(glob.glob(os.path.join(out, "raw", "r*_*_*_c*.out"))):
    m = re.match(r"r(\d+)_(\w+?)_(\w+)_c(\d+)\.out$", os.path.basename(path))
    if not m:
        continue
    res = parse_result(path)
    if not res:
        continue
    perf = parse_perf(path[:-4] + ".perf")
    ops_all = float(res.get("ops_all", res["ops"]))
    runs.append({
        "run": int(m.group(1)), "transport": m.group(2), "op": m.group(3),
        "clients": int(m.group(4)),
        "ops_per_s": float(res["ops_per_s"]),
        "reqs_per_op": float(res["reqs_per_op"]),
        "ring_share": float(res["ring_share"]),
        "client_cpu_us_per_op": float(res["client_cpu_us_per_op"]),
        "client_csw_per_op": float(res["client_csw_per_op"]),
        "server_cpu_s": float(res["server_cpu_s"]),
        "server_csw": float(res["server_csw"]),
        "ops_all": ops_all,
        "task_clock_ms": perf.get("task-clock", float("nan")),
        "csw": perf.get("context-switches", float("nan")),
        "migrations": perf.get("cpu-migrations", float("nan")),
        "load1": res["load1"],
    })

meta = {}
if os.path.exists(os.path.join(out, "meta.txt")):
    with open(os.path.join(out, "meta.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v

with open(os.path.join(out, "results.tsv"), "w") as f:
    keys = list(runs[0].keys()) if runs else []
    f.write("\t".join(keys) + "\n")
    for r in runs:
        f.write("\t".join(str(r[k]) for k in keys) + "\n")


def sel(t, op, c):
    return [r for r in runs if r["transport"] == t and r["op"] == op and r["clients"] == c]


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x, nd=0):
    if x != x:
        return "-"
    return f"{x:,.{nd}f}"


clients = sorted({r["clients"] for r in runs})
present = [t for t in TRANSPORTS if any(r["transport"] == t for r in runs)]
nruns = max((r["run"] for r in runs), default=0)

lines = []
lines.append("| op | clients | " + " | ".join(f"{t} ops/s" for t in present) +
             " | uring/dev | uring/dev per run (min-max) | libfuse/dev | requests/op |")
lines.append("|---|---:|" + "---:|" * len(present) + "---:|---|---:|---:|")
for op in OPS:
    for c in clients:
        cells = []
        medians = {}
        for t in present:
            rs = sel(t, op, c)
            medians[t] = med([r["ops_per_s"] for r in rs])
            lo = min((r["ops_per_s"] for r in rs), default=float("nan"))
            hi = max((r["ops_per_s"] for r in rs), default=float("nan"))
            cells.append(f"{fmt(medians[t])} ({fmt(lo)}-{fmt(hi)})")
        ratio = medians.get("uring", float("nan")) / medians.get("dev", float("nan"))
        paired = []
        for n in range(1, nruns + 1):
            u = [r for r in sel("uring", op, c) if r["run"] == n]
            d = [r for r in sel("dev", op, c) if r["run"] == n]
            if u and d:
                paired.append(u[0]["ops_per_s"] / d[0]["ops_per_s"])
        pr = f"{min(paired):.2f}-{max(paired):.2f}" if paired else "-"
        lf = medians.get("libfuse", float("nan")) / medians.get("dev", float("nan"))
        rpo = med([r["reqs_per_op"] for t in present for r in sel(t, op, c)])
        lines.append(f"| {op} | {c} | " + " | ".join(cells) +
                     f" | **{ratio:.2f}** | {pr} | {lf:.2f} | {rpo:.2f} |")
table1 = "\n".join(lines)

lines = []
lines.append("| op | clients | transport | CPU us/op (perf task-clock) | context switches/op (perf) "
             "| migrations per 1k ops | client CPU us/op | client csw/op | server CPU us/op | "
             "server csw/op | ring share |")
lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for op in OPS:
    for c in clients:
        for t in present:
            rs = sel(t, op, c)
            if not rs:
                continue
            lines.append(
                f"| {op} | {c} | {t} | "
                f"{med([r['task_clock_ms'] * 1000 / r['ops_all'] for r in rs]):.2f} | "
                f"{med([r['csw'] / r['ops_all'] for r in rs]):.2f} | "
                f"{med([r['migrations'] * 1000 / r['ops_all'] for r in rs]):.2f} | "
                f"{med([r['client_cpu_us_per_op'] for r in rs]):.2f} | "
                f"{med([r['client_csw_per_op'] for r in rs]):.2f} | "
                f"{med([r['server_cpu_s'] * 1e6 / r['ops_all'] for r in rs]):.2f} | "
                f"{med([r['server_csw'] / r['ops_all'] for r in rs]):.2f} | "
                f"{med([r['ring_share'] for r in rs]):.2f} |")
table2 = "\n".join(lines)

lv = [r["load1"] for r in runs if r["load1"] == r["load1"]]
loads = (f"median {statistics.median(lv):.2f}, {min(lv):.2f} to {max(lv):.2f}" if lv else "not recorded")

md = f"""# FUSE transports on this machine: /dev/fuse, io_uring, libfuse (bench/uring_probe.sh)

Machine: {meta.get('cpus', '?')} CPUs (possible {meta.get('cpus', '').split('possible=')[-1]}),
{meta.get('cpu_model', '?')}, under a hypervisor: {meta.get('hypervisor', '?')};
kernel {meta.get('kernel', '?')}; liburing {meta.get('liburing', '?')}; libfuse {meta.get('libfuse', '?')};
{meta.get('perf', '?')}. Commit {meta.get('commit', '?')}, {meta.get('date_utc', '?')}.

Load average (1, 5, 15 min) at the start {meta.get('load_start', '?')}, at the end
{meta.get('load_end', '?')}; 1-minute load average after each run: {loads}
(top-start.txt, top-end.txt; the probe itself keeps about 2 busy).
BUSY_CHECK `{meta.get('busy_check', '') or 'none'}`: busy at the start {meta.get('busy_start', '?')},
at the end {meta.get('busy_end', '?')} (runs wait while it succeeds and are done again if it
succeeded during them). {meta.get('runs', '?')} runs of {meta.get('secs', '?')} s per figure
(after 0.3 s of warm-up), the transports' order rotating from run to run; the whole took
{meta.get('elapsed_s', '?')} s. Probe options: `{meta.get('probe_opts', '') or 'defaults'}`.

## Operations per second (median of the runs, min-max in brackets)

{table1}

Requests/op: requests the server answered per operation (median over every run of the row);
1.00 means each call is one round trip.

## Cost per operation (medians)

perf stat counts the client and server processes together over the whole
run (mount, file set-up, warm-up, load, unmount) and is divided by the
operations of the warm-up and the load; the client's figures are its own
process over the measured window only (getrusage); the server's cover its
whole life.

{table2}
"""
with open(os.path.join(out, "results.md"), "w") as f:
    f.write(md)
print(table1)
print()
print(table2)
