#!/bin/bash
# run_pjdfstest.sh - run pjdfstest (POSIX system call conformance) with its
# working directory inside an ordfs mount, then fsck the image.
#
# NOT part of the test suite (meson does not run it); an external check.
#
# Usage (as root; pjdfstest switches to other uids itself):
#   tests/external/run_pjdfstest.sh PJDFSTEST_DIR BUILD_DIR [WORK_DIR]
#     PJDFSTEST_DIR  a built pjdfstest tree (holds the pjdfstest binary and
#                    tests/)
#     BUILD_DIR      the ordfs build directory (src/ordfs, tools/mkfs.ordfs,
#                    tools/fsck.ordfs)
#     WORK_DIR       image, mount point and the prove output
#                    (default /var/tmp/ordfs-pjdfstest; emptied at start)
# Environment:
#   PJD_TESTS   what to give prove (default: PJDFSTEST_DIR/tests, all of it);
#               e.g. "PJDFSTEST_DIR/tests/chmod PJDFSTEST_DIR/tests/rename"
#   ORDFS_OPTS  extra ordfs -o options (allow_other is always added: without
#               it the uids pjdfstest switches to get EACCES on everything)
#
# Getting pjdfstest (never committed here): clone
# https://github.com/pjd/pjdfstest outside this repository, install
# autoconf, automake, gcc, make and perl (prove comes with perl), then in it:
#   autoreconf -ifs && ./configure && make pjdfstest
#
# Exit status: 0 when prove passed and fsck exited 0.
set -u
# shellcheck source=tests/external/lib.sh
. "$(dirname "$0")/lib.sh"
P=${1:?usage: run_pjdfstest.sh PJDFSTEST_DIR BUILD_DIR [WORK_DIR]}
B=${2:?usage: run_pjdfstest.sh PJDFSTEST_DIR BUILD_DIR [WORK_DIR]}
W=${3:-/var/tmp/ordfs-pjdfstest}
P=$(readlink -f "$P"); B=$(readlink -f "$B")
[ -x "$P/pjdfstest" ] || { echo "no $P/pjdfstest (build it first)" >&2; exit 2; }
[ -x "$B/src/ordfs" ] || { echo "no $B/src/ordfs" >&2; exit 2; }
command -v prove >/dev/null || { echo "prove (perl) not found" >&2; exit 2; }
TESTS=${PJD_TESTS:-$P/tests}
OPTS=allow_other${ORDFS_OPTS:+,$ORDFS_OPTS}

rm -rf "$W"; mkdir -p "$W/mnt" || exit 2
img=$W/pjd.img
# shellcheck disable=SC2015
truncate -s 1G "$img" && "$B/tools/mkfs.ordfs" -q "$img" || { echo "mkfs failed" >&2; exit 2; }
"$B/src/ordfs" "$img" "$W/mnt" -o "$OPTS" || { echo "mount failed" >&2; exit 2; }
mkdir "$W/mnt/work"
echo "== prove -r $TESTS (cwd $W/mnt/work, ordfs -o $OPTS)"
t0=$(date +%s)
# shellcheck disable=SC2086
(cd "$W/mnt/work" && prove -r $TESTS) >"$W/prove.out" 2>&1
prc=$?
t1=$(date +%s)
unmount_and_fsck "$B" "$img" "$W/mnt" "$W/fsck.out"
crc=$?

echo "prove: rc=$prc ($((t1 - t0))s; full output $W/prove.out)"
sed -n '/^Test Summary Report/,$p' "$W/prove.out"
grep -E '^(All tests successful|Files=)' "$W/prove.out"
echo "fsck: rc=$crc $(tail -n1 "$W/fsck.out")"
[ $prc -eq 0 ] && [ $crc -eq 0 ]
