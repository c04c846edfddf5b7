#!/bin/bash
# fsck_time.sh - how long fsck.ordfs -f takes, and its peak memory, on a
# large populated image.
#
# Usage: bench/fsck_time.sh [SIZE [FILES [KIB_PER_FILE]]]
#        (defaults 10G, 100000 files, 40 KiB each: 10^6 blocks of 4 KiB)
# Makes the image in /var/tmp, fills it through the daemon (100 directories,
# files of KIB_PER_FILE), unmounts, then times `fsck.ordfs -f` and
# `fsck.ordfs -fn` three times each (median) with /usr/bin/time for the
# peak resident size.  Needs FUSE.
set -euo pipefail

cd "$(dirname "$0")/.."
size=${1:-10G}
files=${2:-100000}
kib=${3:-40}
./scripts/build.sh build >/dev/null

work=$(mktemp -d /var/tmp/ordfs-fsck.XXXXXX)
trap 'fusermount3 -u "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/mnt"
build/tools/mkfs.ordfs -q "$work/img" "$size"
build/src/ordfs "$work/img" "$work/mnt" -o commit=30
head -c $((kib * 1024)) /dev/urandom >"$work/payload"
per_dir=$((files / 100))
start=$(date +%s)
for ((d = 0; d < 100; d++)); do
	mkdir "$work/mnt/d$d"
	for ((i = 0; i < per_dir; i++)); do
		cp "$work/payload" "$work/mnt/d$d/f$i"
	done
done
fusermount3 -u "$work/mnt"
flock -w 120 "$work/img" true
echo "filled in $(($(date +%s) - start)) s: $files files of $kib KiB in 100 directories"

run() { # run LABEL ARGS...: median wall seconds and max RSS of 3 runs
	local label=$1
	shift
	local times=() rss=0
	for _ in 1 2 3; do
		/usr/bin/time -f "%e %M" -o "$work/t" build/tools/fsck.ordfs "$@" "$work/img" \
			>"$work/out" || true
		read -r t m <"$work/t"
		times+=("$t")
		[ "$m" -gt "$rss" ] && rss=$m
	done
	local med
	med=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 2p)
	printf '%-14s %8s s  peak RSS %6d MiB   (%s)\n' "$label" "$med" $((rss / 1024)) \
		"$(tail -1 "$work/out")"
}
run "fsck -f" -f
run "fsck -fn" -fn
du -h --apparent-size "$work/img" | awk '{ print "image: " $1 " apparent" }'
du -h "$work/img" | awk '{ print "image: " $1 " on disk" }'
