#!/bin/bash
# profile.sh - where the ordfs daemon spends its time under one workload: a
# flame graph (SVG) of the daemon's stacks, recorded with perf.
#
# Usage: bench/profile.sh WORKLOAD OUT_DIR
#   WORKLOAD  create   10 directories of 1000 small files each (bench B5's
#                      create, without fsync)
#             dbench   dbench, 2 clients, 10 s (bench B6)
#             build    the project's own sources copied into the mount and
#                      built there with meson and ninja -j2 (bench B9's
#                      build)
#   OUT_DIR   gets flame-WORKLOAD.svg and perf-WORKLOAD.txt (the top of
#             perf report, flat)
#
# Needs root, /dev/fuse, perf (Debian: linux-perf) and Brendan Gregg's
# FlameGraph scripts (stackcollapse-perf.pl, flamegraph.pl), which Debian
# does not package: clone https://github.com/brendangregg/FlameGraph
# outside this repository and set FLAMEGRAPH_DIR to it.  Builds ordfs into
# build-bench/ like bench/run.  Stacks are unwound with DWARF (the build
# keeps frame pointers out), so the recording is short and sampled at
# 499 Hz.  The image is made in a scratch directory under $TMPDIR (or
# /var/tmp) and removed at exit, after fsck.ordfs -fn has checked it.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO=$(pwd)
workload=${1:-}
out=${2:-}
case $workload in
create | dbench | build) ;;
*) sed -n '5,14p' "$0" | sed 's/^# \{0,1\}//' >&2 && exit 2 ;;
esac
[ -n "$out" ] || { echo "profile: no OUT_DIR" >&2 && exit 2; }
fg=${FLAMEGRAPH_DIR:-}
if [ ! -x "$fg/flamegraph.pl" ] || [ ! -x "$fg/stackcollapse-perf.pl" ]; then
	echo "profile: set FLAMEGRAPH_DIR to a clone of github.com/brendangregg/FlameGraph" >&2
	exit 2
fi
command -v perf >/dev/null || { echo "profile: perf is missing (apt-get install -y linux-perf)" >&2 && exit 2; }
[ "$workload" != dbench ] || command -v dbench >/dev/null ||
	{ echo "profile: dbench is missing (apt-get install -y dbench)" >&2 && exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

./scripts/build.sh build-bench >/dev/null
BUILD=$REPO/build-bench
work=$(mktemp -d "${TMPDIR:-/var/tmp}/ordfs-profile.XXXXXX")
mnt=$work/mnt
cleanup() {
	if grep -q " $mnt " /proc/mounts; then
		fusermount3 -u "$mnt" || fusermount3 -uz "$mnt" || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

mkdir "$mnt"
truncate -s 4G "$work/img"
"$BUILD/tools/mkfs.ordfs" -q "$work/img"
"$BUILD/src/ordfs" "$work/img" "$mnt"
pid=$(pgrep -n -f "^$BUILD/src/ordfs $work/img")

perf record -q -F 499 --call-graph dwarf,16384 -p "$pid" -o "$work/perf.data" &
perf_pid=$!
sleep 1

case $workload in
create)
	for d in $(seq 0 9); do
		mkdir "$mnt/d$d"
		for i in $(seq 1 1000); do
			printf 'hello %s\n' "$i" >"$mnt/d$d/f$i"
		done
	done
	;;
dbench)
	dbench -D "$mnt" -t 10 2 >"$work/dbench.out"
	;;
build)
	mkdir "$mnt/tree"
	git -C "$REPO" archive HEAD | tar -x -C "$mnt/tree"
	meson setup "$mnt/tree/b" "$mnt/tree" -Dtests=disabled >/dev/null
	ninja -C "$mnt/tree/b" -j2 >/dev/null
	;;
esac

kill -INT "$perf_pid"
wait "$perf_pid" || true
perf report -i "$work/perf.data" --no-children --stdio -g none --percent-limit 0.5 2>/dev/null |
	awk 'NF && n++ < 80' >"$out/perf-$workload.txt"
perf script -i "$work/perf.data" 2>/dev/null | "$fg/stackcollapse-perf.pl" |
	"$fg/flamegraph.pl" --title "ordfs daemon: $workload ($(date -u +%F))" \
		>"$out/flame-$workload.svg"
fusermount3 -u "$mnt"
for _ in $(seq 1 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
"$BUILD/tools/fsck.ordfs" -fn "$work/img" >/dev/null
echo "profile: $out/flame-$workload.svg"
