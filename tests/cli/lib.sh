# lib.sh - what the command-line tests share (sourced, not run).
#
# pass/fail/check count and print one line per check; summary prints the
# totals and fails the script if any check failed.

FAILS=0
CHECKS=0
pass() { CHECKS=$((CHECKS + 1)); echo "ok    $1"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "FAIL  $1"; }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
summary() {
	echo "$CHECKS checks, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}
