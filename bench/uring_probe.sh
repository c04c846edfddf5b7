#!/bin/bash
# uring_probe.sh - FUSE round trips per second over /dev/fuse and over
# FUSE-over-io_uring on this kernel and machine (issue 29, "Measure first").
#
# Usage: bench/uring_probe.sh [BUILD_DIR [OUT_DIR]]
#
# Builds nothing: BUILD_DIR (default build) must hold
# bench/uring_probe/fuse_transport_probe (scripts/build.sh builds it).
# Runs as root.  For every run (RUNS, default 5), operation (OPS: getattr,
# lookup, create, read, write), client count (CLIENTS: 1 2) and transport
# (TRANSPORTS: dev uring libfuse, in an order that rotates each run), the
# probe mounts a fresh trivial filesystem, loads it for SECS (default 2)
# seconds after a 0.3 s warm-up, unmounts it, and prints one RESULT line;
# each run is under `perf stat` (task-clock, context switches, CPU
# migrations of the client and server together).  Then `perf record -g` of
# getattr and read with 1 client per transport (PERF_RECORD=0 skips it).
# Prints the medians and the uring/dev ratio, and writes OUT_DIR (default
# bench/results/DATE_uring_probe): results.md (machine, load, tables),
# results.tsv (every run), perf-*.txt, raw/ (each run's output).
#
# The probe turns /sys/module/fuse/parameters/enable_uring on for each
# io_uring mount's INIT and back at once; this script also records it and
# /dev/fuse's mode at the start and puts both back at the end (EXIT trap,
# also after an error or ^C).  Extra probe options: PROBE_OPTS (e.g.
# "--depth 8 --taskrun defer").
#
# BUSY_CHECK: a command that succeeds while something else loads the
# machine (e.g. BUSY_CHECK='pgrep -f /work/ci/' for a CI run on the same
# host): each run waits until it fails, and a run during which it
# succeeded is done again.  Every run records the load average.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
OUT=${2:-bench/results/$(date -u +%Y-%m-%d)_uring_probe}
RUNS=${RUNS:-5}
SECS=${SECS:-2}
OPS=${OPS:-getattr lookup create read write}
CLIENTS=${CLIENTS:-1 2}
TRANSPORTS=${TRANSPORTS:-dev uring libfuse}
PERF_RECORD=${PERF_RECORD:-1}
PROBE_OPTS=${PROBE_OPTS:-}
PROBE=$BUILD/bench/uring_probe/fuse_transport_probe
SW=/sys/module/fuse/parameters/enable_uring

[ "$(id -u)" -eq 0 ] || { echo "uring_probe.sh: run as root" >&2; exit 1; }
[ -x "$PROBE" ] || { echo "uring_probe.sh: no $PROBE (scripts/build.sh $BUILD)" >&2; exit 1; }
[ -e "$SW" ] || { echo "uring_probe.sh: no $SW: the kernel has no FUSE-over-io_uring" >&2; exit 1; }
command -v perf >/dev/null || { echo "uring_probe.sh: perf is needed (apt-get install linux-perf)" >&2; exit 1; }

sw0=$(cat "$SW")
fuse_mode0=$(stat -c %a /dev/fuse)
restore() {
	echo "$sw0" >"$SW" || true
	chmod "$fuse_mode0" /dev/fuse || true
	echo "uring_probe.sh: enable_uring $(cat "$SW") (was $sw0), /dev/fuse mode" \
		"$(stat -c %a /dev/fuse) (was $fuse_mode0)" >&2
}
trap restore EXIT
trap 'exit 130' INT TERM HUP

busy() {
	[ -n "${BUSY_CHECK:-}" ] && (eval "$BUSY_CHECK") >/dev/null 2>&1
}

wait_idle() {
	local said=0
	while busy; do
		[ $said = 1 ] || echo "uring_probe.sh: BUSY_CHECK succeeds: waiting ($(date -u +%T))" >&2
		said=1
		sleep 10
	done
	[ $said = 0 ] || echo "uring_probe.sh: idle again ($(date -u +%T))" >&2
}

mkdir -p "$OUT/raw"
OUT=$(realpath "$OUT")
{
	echo "date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- bench/uring_probe || echo '+changes')"
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc) possible=$(cat /sys/devices/system/cpu/possible)"
	echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "hypervisor=$(grep -qw hypervisor /proc/cpuinfo && echo yes || echo no)"
	echo "liburing=$(dpkg-query -W -f='${Version}' liburing2 2>/dev/null || echo '?')"
	echo "libfuse=$(dpkg-query -W -f='${Version}' libfuse3-3 2>/dev/null || echo '?')"
	echo "perf=$(perf --version)"
	echo "enable_uring_at_start=$sw0 dev_fuse_mode=$fuse_mode0"
	echo "io_uring_disabled=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo '?')"
	echo "runs=$RUNS secs=$SECS probe_opts=$PROBE_OPTS busy_check=${BUSY_CHECK:-}"
	echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "busy_start=$(busy && echo yes || echo no)"
} >"$OUT/meta.txt"
top -bn1 -w 200 | head -20 >"$OUT/top-start.txt"

run_one() { # run_one RUN TRANSPORT OP CLIENTS
	local base="$OUT/raw/r$1_$2_$3_c$4"
	while :; do
		wait_idle
		run_probe "$@"
		busy || break
		echo "uring_probe.sh: something else ran during run $1 $2 $3 x$4: again" >&2
	done
	echo "LOAD $(cut -d' ' -f1-3 /proc/loadavg)" >>"$base.out"
	grep '^RESULT' "$base.out"
}

run_probe() { # run_probe RUN TRANSPORT OP CLIENTS
	local base="$OUT/raw/r$1_$2_$3_c$4"
	# shellcheck disable=SC2086 # PROBE_OPTS: words
	if ! perf stat -x, -e task-clock,context-switches,cpu-migrations -o "$base.perf" -- \
		"$PROBE" bench --quiet --transport "$2" --op "$3" --clients "$4" --seconds "$SECS" \
		$PROBE_OPTS >"$base.out" 2>"$base.err"; then
		echo "uring_probe.sh: run $1 $2 $3 x$4 failed:" >&2
		cat "$base.err" >&2
		exit 1
	fi
}

read -ra T <<<"$TRANSPORTS"
start=$(date +%s)
for r in $(seq 1 "$RUNS"); do
	for op in $OPS; do
		for c in $CLIENTS; do
			# rotate the transports' order from run to run
			for i in $(seq 0 $((${#T[@]} - 1))); do
				t=${T[$(((i + r - 1) % ${#T[@]}))]}
				run_one "$r" "$t" "$op" "$c"
			done
		done
	done
	echo "uring_probe.sh: run $r of $RUNS done ($(($(date +%s) - start)) s," \
		"load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

if [ "$PERF_RECORD" = 1 ]; then
	for op in getattr read; do
		for t in "${T[@]}"; do
			wait_idle
			# shellcheck disable=SC2086
			perf record -q -F 2999 -g -o "$OUT/raw/perf-$t-$op.data" -- \
				"$PROBE" bench --quiet --transport "$t" --op "$op" --clients 1 \
				--seconds "$SECS" $PROBE_OPTS >"$OUT/raw/perf-$t-$op.out" 2>&1
			perf report -i "$OUT/raw/perf-$t-$op.data" --no-children --sort comm,dso,sym \
				--stdio -g none --percent-limit 0.7 2>/dev/null |
				grep -v '^$' >"$OUT/perf-$t-$op.txt" || true
			perf report -i "$OUT/raw/perf-$t-$op.data" --children --sort sym \
				--stdio -g none --percent-limit 4 2>/dev/null |
				grep -v '^$' >"$OUT/perf-$t-$op-children.txt" || true
			rm -f "$OUT/raw/perf-$t-$op.data" "$OUT/raw/perf-$t-$op.data.old"
		done
	done
fi

{
	echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "busy_end=$(busy && echo yes || echo no)"
	echo "elapsed_s=$(($(date +%s) - start))"
} >>"$OUT/meta.txt"
top -bn1 -w 200 | head -20 >"$OUT/top-end.txt"
python3 bench/uring_probe/report.py "$OUT"
