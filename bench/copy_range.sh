#!/bin/bash
# copy_range.sh - what copy_file_range inside the image saves `cp` (issue 28).
#
# Usage: bench/copy_range.sh [BUILD_DIR] [OUT_DIR]
#
# Copies a SIZE_MB (default 512) MiB file of random bytes to a new file in
# the same filesystem with `cp` (coreutils 9.1 copies with copy_file_range
# when the kernel offers it) on four targets, one after another in each of
# ROUNDS rounds (default 3):
#   host       a directory on the host filesystem (the work directory's)
#   ext4       kernel ext4 on a loop-mounted image file (default options)
#   ordfs      ordfs with its copy_file_range: the bytes stay in the daemon
#   ordfs-rw   the same daemon with ORDFS_NO_COPY_FILE_RANGE=1: it answers
#              ENOSYS, so the kernel copies through read and write across
#              /dev/fuse (what every ordfs did before)
# Each figure is
# the time of the copy and then `sync DST` (an fsync of the copy: durable
# on every target, so delayed work is not left out); the copy alone is
# recorded too.  CACHE=cold (the default) drops, before each copy, the
# source's cached pages (posix_fadvise DONTNEED through `dd iflag=nocache`:
# that file only, nothing machine-wide on a shared machine) on the
# target, and for ordfs also the image file's pages on the host, so every
# target reads its source from the disk, as `cp` of a file written long
# ago does.  CACHE=warm leaves them: then the kernel serves the source to
# ordfs-rw (and to host and ext4) from its page cache, where ordfs's
# daemon reads the image (whose writes bypass the host's page cache).  The
# ordfs targets' statistics (ordfsctl stats --json) must show the copy as
# bytes copied in the image for `ordfs` and as bytes written through FUSE
# for `ordfs-rw`, or the script fails.  Also recorded: the CPU time the
# copy cost (cp's and sync's user + system time, in which the kernel's own
# copying is, plus the ordfs daemon's).  Prints the medians and the ratios
# to the host's figure and ordfs-rw's, and writes OUT_DIR/copy_range_CACHE.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
OUT=${2:-$(mktemp -d)}
SIZE_MB=${SIZE_MB:-512}
CACHE=${CACHE:-cold}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/ordfs-copy.XXXXXX")

cleanup() {
	set +e
	for m in "$WORK"/mnt-*; do
		[ -d "$m" ] || continue
		if mountpoint -q "$m"; then
			case $m in
			*ext4) umount "$m" ;;
			*) # a release the kernel sends after close may still be in
			   # flight (EBUSY): try again
				local _
				for _ in $(seq 50); do fusermount3 -u "$m" 2>/dev/null && break; sleep 0.2; done ;;
			esac
		fi
	done
	for p in "$WORK"/*.pid; do [ -f "$p" ] && wait_gone "$(cat "$p")"; done
	rm -rf "$WORK"
}
trap cleanup EXIT

wait_gone() { # wait_gone PID: up to 30 s
	local _
	for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

mount_ordfs() { # mount_ordfs NAME [ENV=VALUE]
	local m=$WORK/mnt-$1
	mkdir -p "$m"
	truncate -s 4G "$WORK/$1.img"
	"$BUILD/tools/mkfs.ordfs" -q "$WORK/$1.img"
	env ${2:+"$2"} "$BUILD/src/ordfs" "$WORK/$1.img" "$m" -f >"$WORK/$1.log" 2>&1 &
	echo $! >"$WORK/$1.pid"
	local _
	for _ in $(seq 100); do mountpoint -q "$m" && return 0; sleep 0.1; done
	echo "copy_range.sh: $1 did not mount" >&2
	return 1
}

stat_of() { # stat_of MOUNTPOINT KEY: a data_in figure of ordfsctl stats
	"$BUILD/tools/ordfsctl" stats --json "$1" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["data_in"][sys.argv[1]])' "$2"
}

now() { date +%s.%N; }

# cpu_ticks PID: user + system clock ticks of a process so far (0 for none).
cpu_ticks() {
	[ -n "$1" ] || { echo 0; return; }
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# one_copy TARGET DIR: prints "copy_s total_s cpu_s" (the copy; the copy
# and its fsync; the CPU time of cp and sync, and of the daemon for
# ordfs), the copy removed afterwards.
one_copy() {
	local dir=$2 t0 t1 t2 pid= d0 d1
	case $1 in ordfs*) pid=$(cat "$WORK/$1.pid") ;; esac
	if [ "$CACHE" = cold ]; then
		dd if="$dir/src" iflag=nocache count=0 status=none
		case $1 in ordfs*) dd if="$WORK/$1.img" iflag=nocache count=0 status=none ;; esac
	fi
	d0=$(cpu_ticks "$pid")
	t0=$(now)
	/usr/bin/time -f '%U %S' -o "$WORK/cp.time" cp "$dir/src" "$dir/dst"
	t1=$(now)
	/usr/bin/time -f '%U %S' -o "$WORK/sync.time" sync "$dir/dst"
	t2=$(now)
	d1=$(cpu_ticks "$pid")
	cmp -s "$dir/src" "$dir/dst" || { echo "copy_range.sh: $1: the copy differs" >&2; return 1; }
	rm -f "$dir/dst"
	python3 -c 'import os, sys
a, b, c = map(float, sys.argv[1:4])
tools = sum(float(x) for f in sys.argv[4:6] for x in open(f).read().split())
daemon = (int(sys.argv[7]) - int(sys.argv[6])) / os.sysconf("SC_CLK_TCK")
print("%.3f %.3f %.2f" % (b - a, c - a, tools + daemon))' \
		"$t0" "$t1" "$t2" "$WORK/cp.time" "$WORK/sync.time" "$d0" "$d1"
}

head -c "$((SIZE_MB << 20))" /dev/urandom >"$WORK/src"
mkdir -p "$WORK/mnt-host"
truncate -s 4G "$WORK/ext4.img"
mkfs.ext4 -q -F "$WORK/ext4.img"
mkdir -p "$WORK/mnt-ext4"
mount -o loop "$WORK/ext4.img" "$WORK/mnt-ext4"
mount_ordfs ordfs
mount_ordfs ordfs-rw ORDFS_NO_COPY_FILE_RANGE=1
for t in host ext4 ordfs ordfs-rw; do
	cat "$WORK/src" >"$WORK/mnt-$t/src"
	sync "$WORK/mnt-$t/src"
done

TSV=$OUT/copy_range_$CACHE.tsv
printf 'round\ttarget\tcopy_s\tcopy_fsync_s\tcpu_s\n' >"$TSV"
for r in $(seq "$ROUNDS"); do
	for t in host ext4 ordfs ordfs-rw; do
		dir=$WORK/mnt-$t
		case $t in ordfs*) w0=$(stat_of "$dir" written_bytes); c0=$(stat_of "$dir" copied_bytes) ;; esac
		read -r copy total cpu < <(one_copy "$t" "$dir")
		case $t in ordfs*)
			w=$(($(stat_of "$dir" written_bytes) - w0))
			c=$(($(stat_of "$dir" copied_bytes) - c0))
			want=$((SIZE_MB << 20))
			case $t in
			ordfs) ok=$((c == want && w == 0)) ;;
			*) ok=$((c == 0 && w >= want)) ;;
			esac
			[ "$ok" = 1 ] || {
				echo "copy_range.sh: $t: $c bytes copied, $w written: not the route meant" >&2
				exit 1
			}
		esac
		printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$t" "$copy" "$total" "$cpu" | tee -a "$TSV"
	done
done

python3 - "$TSV" "$SIZE_MB" "$CACHE" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
mb = float(sys.argv[2])
targets = ["host", "ext4", "ordfs", "ordfs-rw"]
med = {t: {k: statistics.median(float(r[k]) for r in rows if r["target"] == t)
           for k in ("copy_s", "copy_fsync_s", "cpu_s")} for t in targets}
print("%d MiB, source %s, medians of %d rounds (MiB/s; ratios of throughput)" %
      (mb, sys.argv[3], len(rows) // len(targets)))
print("| target | copy s | copy+fsync s | MiB/s (copy+fsync) | x host | x ordfs-rw | CPU s |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in targets:
    m = med[t]
    print("| %s | %.2f | %.2f | %.0f | %.2f | %.2f | %.2f |" % (
        t, m["copy_s"], m["copy_fsync_s"], mb / m["copy_fsync_s"],
        med["host"]["copy_fsync_s"] / m["copy_fsync_s"],
        med["ordfs-rw"]["copy_fsync_s"] / m["copy_fsync_s"], m["cpu_s"]))
PY
