#!/bin/bash
# run_fsx.sh - run xfstests' fsx (file system exerciser) on a file in an
# ordfs mount, under several mount options, then fsck the images.
#
# NOT part of the test suite (meson does not run it); an external check
# used when the kernel caching rules change (keep_cache, attribute/entry
# timeouts, readdir cache).
#
# Usage (as root):
#   tests/external/run_fsx.sh FSX BUILD_DIR [WORK_DIR]
#     FSX        path to the fsx binary (xfstests ltp/fsx)
#     BUILD_DIR  the ordfs build directory (holds src/ordfs, tools/mkfs.ordfs,
#                tools/fsck.ordfs)
#     WORK_DIR   images, mount points and fsx logs (default /var/tmp/ordfs-fsx;
#                emptied at start)
# Environment:
#   FSX_OPS      operations per run (default 100000)
#   FSX_RUNS     space-separated list of runs "name:mountopts:fsx args";
#                mountopts may be empty. Default: see RUNS below.
#
# Getting fsx (never committed here): clone xfstests
# (git://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git) outside this
# repository, install its build dependencies (see tests/xfstests/run.sh) and
# run `make` at its top; the binary is ltp/fsx.  fsx is run with its
# defaults, which include mapped reads and writes (no -R/-W).
#
# Note: fsx -c N closes and reopens the file 1 time in N, and on every such
# reopen runs `echo 3 > /proc/sys/vm/drop_caches` (whole machine).
#
# Exit status: 0 when every fsx run and every fsck passed.
set -u
# shellcheck source=tests/external/lib.sh
. "$(dirname "$0")/lib.sh"
FSX=${1:?usage: run_fsx.sh FSX BUILD_DIR [WORK_DIR]}
B=${2:?usage: run_fsx.sh FSX BUILD_DIR [WORK_DIR]}
W=${3:-/var/tmp/ordfs-fsx}
N=${FSX_OPS:-100000}
FSX=$(readlink -f "$FSX"); B=$(readlink -f "$B")
[ -x "$FSX" ] || { echo "no fsx at $FSX" >&2; exit 2; }
[ -x "$B/src/ordfs" ] || { echo "no $B/src/ordfs" >&2; exit 2; }

DEFAULT_RUNS="relatime::-S1
noatime:noatime:-S3
strictatime:strictatime:-S5
relatime-reopen::-S2_-c_10
noatime-reopen:noatime:-S4_-c_10
strictatime-reopen:strictatime:-S6_-c_10"
RUNS=${FSX_RUNS:-$DEFAULT_RUNS}

rm -rf "$W"; mkdir -p "$W" || exit 2
cd "$W" || exit 2
fail=0
summary=""
for r in $RUNS; do
	name=${r%%:*}; rest=${r#*:}; opts=${rest%%:*}; args=${rest#*:}
	args=${args//_/ }
	img=$W/$name.img; mp=$W/mnt-$name; log=$W/log-$name
	mkdir -p "$mp" "$log"
	# shellcheck disable=SC2015
	truncate -s 1G "$img" && "$B/tools/mkfs.ordfs" -q "$img" || { echo "mkfs failed" >&2; exit 2; }
	if [ -n "$opts" ]; then
		"$B/src/ordfs" "$img" "$mp" -o "$opts"
	else
		"$B/src/ordfs" "$img" "$mp"
	fi || { echo "mount failed ($name)" >&2; exit 2; }
	echo "== $name: ordfs -o '${opts:-(defaults)}'; $FSX -N $N $args $mp/fsx.file"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	"$FSX" -N "$N" $args -P "$log" "$mp/fsx.file" >"$log/fsx.out" 2>&1
	frc=$?
	t1=$(date +%s)
	if [ $frc -eq 0 ]; then fres="pass"; else
		fres="FAIL rc=$frc: $(grep -m1 -iE 'error|bad|expected' "$log/fsx.out")"
		fail=1
	fi
	echo "   fsx: $fres ($((t1 - t0))s; log $log/fsx.out)"
	unmount_and_fsck "$B" "$img" "$mp" "$log/fsck.out"
	crc=$?
	[ $crc -eq 0 ] || fail=1
	echo "   fsck: rc=$crc $(tail -n1 "$log/fsck.out")"
	summary+="$(printf '%-20s fsx %-5s fsck rc=%d' "$name" "${fres%% *}" $crc)"$'\n'
done
echo
echo "Summary (ops per run: $N):"
printf '%s' "$summary"
[ $fail -eq 0 ] && echo "ALL PASSED" || echo "SOME RUNS FAILED"
exit $fail
