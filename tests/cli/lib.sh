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

# unmount_retrying COMMAND... MOUNTPOINT: runs an unmount (fusermount3 -u,
# umount) and runs it again while it fails because the kernel still holds
# the mount busy (EBUSY: the last references of files closed a moment ago,
# dropped later on a loaded machine), with a backoff of 0.01 s doubling to
# 0.5 s, for 30 s at most.  Any other failure, or a mount still busy after
# 30 s, returns the command's status with its message on stderr: a leaked
# open file still fails the test (no lazy unmount hides it).
unmount_retrying() {
	local err rc ms=10 deadline=$((SECONDS + 30))
	while :; do
		err=$("$@" 2>&1 >/dev/null) && return 0 || rc=$? # set -e safe
		case $err in
		*"Device or resource busy"* | *"target is busy"*)
			[ $SECONDS -lt $deadline ] || break ;;
		*) break ;;
		esac
		sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
		ms=$((ms * 2 > 500 ? 500 : ms * 2))
	done
	printf '%s\n' "$err" >&2
	return $rc
}

# fusermount_u MOUNTPOINT: fusermount3 -u, again while busy (unmount_retrying).
fusermount_u() { unmount_retrying fusermount3 -u "$1"; }

# unmount_image MOUNTPOINT IMAGE: fusermount3 -u, again while the kernel
# still says busy (unmount_retrying), then wait until the daemon has
# closed the image (its lock on it is free), as umount.ordfs waits.
# Non-zero if the unmount failed or the lock was not free within 60 s (a
# daemon's last writeback on a loaded machine).
unmount_image() {
	local i
	fusermount_u "$1" || return 1
	for i in $(seq 1200); do
		flock -n "$2" true 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
