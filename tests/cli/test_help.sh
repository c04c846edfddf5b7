#!/bin/bash
# test_help.sh - what `--help` of each command promises, and the usage
# errors of ordfsctl and fsck.ordfs.
#
# Usage: test_help.sh ORDFS FSCK ORDFSCTL
#
# The daemon's --help must document every flush_error= and errors= policy
# and say how to sync; ordfsctl and fsck.ordfs exit 0 on --help and with
# their documented codes on usage errors (one line on stderr).
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

ORDFS=$(readlink -f "${1:?usage: test_help.sh ORDFS FSCK ORDFSCTL}")
FSCK=$(readlink -f "${2:?}")
CTL=$(readlink -f "${3:?}")

exits() { # exits CODE COMMAND...: the command's exit status is CODE
	local want=$1 got=0
	shift
	"$@" >/dev/null 2>&1 || got=$?
	[ "$got" -eq "$want" ]
}
one_stderr_line() { [ "$("$@" 2>&1 >/dev/null | wc -l)" -eq 1 ]; }

help=$("$ORDFS" --help)
for word in "flush_error=" report ignore remount-ro abort "errors=" continue \
	barrier nobarrier "ordfsctl sync"; do
	check "ordfs --help mentions '$word'" grep -q -- "$word" <<<"$help"
done
check "ordfs --help exits 0" exits 0 "$ORDFS" --help

check "ordfsctl --help exits 0" exits 0 "$CTL" --help
check "ordfsctl --help explains sync" grep -q "sync" <<<"$("$CTL" --help)"
check "ordfsctl without arguments exits 2" exits 2 "$CTL"
check "ordfsctl with an unknown command exits 2" exits 2 "$CTL" frobnicate /
check "ordfsctl usage error is one line" one_stderr_line "$CTL" frobnicate /
check "ordfsctl sync on a non-ordfs directory exits 1" exits 1 "$CTL" sync /
check "ordfsctl sync on a missing path exits 1" exits 1 "$CTL" sync /nonexistent/ordfs

check "fsck.ordfs --help exits 0" exits 0 "$FSCK" --help
check "fsck.ordfs without an image exits 16" exits 16 "$FSCK"
check "fsck.ordfs with an unknown flag exits 16" exits 16 "$FSCK" -Z image

summary
