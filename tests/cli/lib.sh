# lib.sh - what the command-line tests share (sourced, not run).
#
# pass/fail/check count and print one line per check; summary prints the
# totals and fails the script if any check failed.  skip ends a test that
# cannot run here with one line saying why and exit 77, which meson counts
# as SKIP (exit 0 would count as passed and hide it); skip_part says why a
# part of a test that goes on is left out.

FAILS=0
CHECKS=0
pass() { CHECKS=$((CHECKS + 1)); echo "ok    $1"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "FAIL  $1"; }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
skip() { echo "SKIP  $1"; exit 77; }
skip_part() { echo "SKIP  $1"; }
summary() {
	echo "$CHECKS checks, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}

# unmount_image MOUNTPOINT IMAGE: fusermount3 -u, again while the kernel
# still says busy (a load's last requests), then wait until the daemon has
# closed the image (its lock on it is free), as umount.ordfs waits.
# Non-zero if either did not happen within 10 s.
unmount_image() {
	local i
	for i in $(seq 100); do
		fusermount3 -u "$1" 2>/dev/null && break
		[ "$i" = 100 ] && return 1
		sleep 0.1
	done
	for i in $(seq 200); do
		flock -n "$2" true 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
