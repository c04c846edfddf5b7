#!/bin/bash
# atime_writes.sh - what a read-only workload costs in image writes under
# strictatime, relatime and noatime, measured in one run.
#
# Usage: bench/atime_writes.sh [FILES]   (default 10000)
# For each mode: a fresh image with FILES files of 1 KiB (written and
# synced under the default options), then the daemon is restarted with
# the mode and reads every file twice (pass 1 = the first read after the
# files were written, pass 2 = a reread).  After each pass `ordfsctl sync`
# commits whatever the reads changed.  Reported: the bytes of the image
# the daemon made the host write to storage over the pass and its sync
# (write_bytes in /proc/PID/io: pages of the image file it dirtied; not
# wchar, which also counts the daemon's replies to /dev/fuse), in 4 KiB
# blocks.  A page dirtied twice before the host writes it out counts once,
# so this is the storage traffic, a lower bound on pwrite volume.
set -euo pipefail

cd "$(dirname "$0")/.."
files=${1:-10000}
./scripts/build.sh build >/dev/null
ORDFS=build/src/ordfs
CTL=build/tools/ordfsctl

work=$(mktemp -d /var/tmp/ordfs-atime.XXXXXX)
mnt="$work/mnt"
pid=
stop() {
	if [ -n "$pid" ]; then
		fusermount3 -u "$mnt" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	fi
}
trap 'stop; rm -rf "$work"' EXIT
mkdir -p "$mnt"

start() { # start OPTIONS: the daemon in the foreground, its pid in $pid
	"$ORDFS" "$work/img" "$mnt" -f -o "$1" 2>>"$work/log" &
	pid=$!
	for _ in $(seq 200); do
		mountpoint -q "$mnt" && return 0
		sleep 0.05
	done
	echo "atime_writes: the daemon did not mount" >&2
	exit 1
}

image_writes() { awk '/^write_bytes:/ { print $2 }' "/proc/$pid/io"; }

read_pass() { # prints the 4 KiB blocks the daemon wrote for one pass + sync
	local before after
	before=$(image_writes)
	find "$mnt" -type f -print0 | xargs -0 cat >/dev/null
	"$CTL" sync "$mnt"
	after=$(image_writes)
	echo $(((after - before) / 4096))
}

printf '%-12s %18s %18s\n' mode "pass 1 (blocks)" "pass 2 (blocks)"
for mode in strictatime relatime noatime; do
	rm -f "$work/img"
	build/tools/mkfs.ordfs -q "$work/img" 512M
	start relatime
	head -c 1024 /dev/urandom >"$work/payload"
	for ((d = 0; d < 100; d++)); do
		mkdir "$mnt/d$d"
		for ((i = 0; i < files / 100; i++)); do
			cp "$work/payload" "$mnt/d$d/f$i"
		done
	done
	"$CTL" sync "$mnt"
	stop
	start "$mode"
	p1=$(read_pass)
	p2=$(read_pass)
	stop
	printf '%-12s %18s %18s\n' "$mode" "$p1" "$p2"
done
echo "($files files of 1 KiB in 100 directories; image blocks of 4 KiB written to storage"
echo " over each read pass and the ordfsctl sync after it; /proc/PID/io write_bytes)"
