#!/bin/bash
# test_fsck_cases.sh - e2fsprogs-style fsck cases: an image damaged one
# known way, and the expected output (and exit code) of two runs:
# `fsck.ordfs -fy` (expect.1: the problems found and the repair) and then
# `fsck.ordfs -fn` (expect.2: clean, exit 0).
#
# Usage: test_fsck_cases.sh MKFS FSCK CORRUPT CASES_DIR
#   Each case directory holds `case`: one line "KIND SEED" (comments
#   with #).  The image is made with a fixed UUID (so directory hashing,
#   and with it every inode and block number, is the same on every run),
#   filled by `ordfs-corrupt populate`, then damaged.  UPDATE=1 rewrites
#   the expect files from this build instead of comparing.
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MKFS=$(readlink -f "${1:?usage: test_fsck_cases.sh MKFS FSCK CORRUPT CASES_DIR}")
FSCK=$(readlink -f "${2:?}")
CORRUPT=$(readlink -f "${3:?}")
CASES=$(readlink -f "${4:?}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-cases.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

UUID=6f726466-7300-4000-8000-000000000001

run_case() { # run_case DIR
	local dir=$1 name kind seed
	name=$(basename "$dir")
	read -r kind seed < <(grep -v '^#' "$dir/case")
	rm -f image
	"$MKFS" -q -U "$UUID" image 32M
	"$CORRUPT" populate image
	"$CORRUPT" image "$kind" "$seed" >/dev/null
	local rc1=0 rc2=0
	"$FSCK" -fy image >out.1 2>&1 || rc1=$?
	echo "exit $rc1" >>out.1
	"$FSCK" -fn image >out.2 2>&1 || rc2=$?
	echo "exit $rc2" >>out.2
	if [ "${UPDATE:-0}" = 1 ]; then
		cp out.1 "$dir/expect.1"
		cp out.2 "$dir/expect.2"
		pass "$name: expect files written"
		return
	fi
	check "$name: first run (-fy) as expected" diff -u "$dir/expect.1" out.1
	check "$name: second run (-fn) as expected" diff -u "$dir/expect.2" out.2
	check "$name: second run is clean (exit 0)" grep -qx "exit 0" out.2
}

for dir in "$CASES"/*/; do
	run_case "${dir%/}"
done
summary
