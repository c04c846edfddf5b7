#!/bin/bash
# test_nbd_write_errors.sh - the NBD server answers writes with an error
# (nbdkit's error filter: error-pwrite-rate=1, error=EIO, switched on and
# off by its error-pwrite-file trigger).  Under flush_error=report an error
# reply is final and goes to the caller: write + fsync returns EIO (each
# fsync while the server fails, through a new open file and through one
# kept open), reads work on, ordfsctl stats counts the failed writes; once
# the trigger is gone the next fsync of the same open file returns 0, and
# after an unmount fsck -f finds the image clean and a remount finds every
# byte (also of the files whose first fsync failed).
#
# Usage: test_nbd_write_errors.sh BUILD_DIR
#   Skips (exit 77) without nbdkit (file plugin, error filter), python3
#   or /dev/fuse.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file --filter=error
need_fuse
command -v python3 >/dev/null || skip "python3 is missing (the fsync of an open file)"

MNT=$WORK/mnt
IMG=$WORK/disk.img
TRIGGER=$WORK/fail-writes
mkdir "$WORK/want"
"$MKFS" -q "$IMG" 64M || { fail "mkfs.ordfs on the image file"; summary; exit 1; }
require "nbdkit file plugin with the error filter starts" \
	nbd_start srv --filter=error file "$IMG" \
	error-pwrite=EIO error-pwrite-rate=1 error-pwrite-file="$TRIGGER"
URI=$(nbd_uri srv)
require "mount with flush_error=report" mount_fg "$URI" "$MNT" "$WORK/daemon-fg.log" -o flush_error=report
DPID=$FGPID

head -c 200000 /dev/urandom >"$WORK/want/before"
check "a write + fsync before the errors returns 0" wsync "$WORK/want/before" "$MNT/before"

# --- the server fails every write -----------------------------------------------------
touch "$TRIGGER"
head -c 300000 /dev/urandom >"$WORK/want/a"
if wsync "$WORK/want/a" "$MNT/a"; then
	fail "write + fsync while the server fails writes returns an error (it returned 0)"
else
	check "write + fsync while the server fails writes gets EIO" grep -q "Input/output error" "$WORK/wsync.err"
fi
# one open file, kept open across the failure and the healing
head -c 70000 /dev/urandom >"$WORK/want/b"
exec 7>"$MNT/b"
cat "$WORK/want/b" >&7
check "fsync of an open file while the server fails writes returns EIO" \
	[ "$(fsync_fd 7)" = EIO ]
check "again: the failure is still there, EIO again" [ "$(fsync_fd 7)" = EIO ]
# metadata only: the fsync is the journal commit, whose log writes fail
mkdir "$MNT/dir" && touch "$MNT/dir/empty"
if sync "$MNT/dir/empty" 2>"$WORK/err"; then
	fail "fsync of a new empty file (a commit) while writes fail returns an error (it returned 0)"
else
	check "fsync of a new empty file (a commit) while writes fail gets EIO" grep -q "Input/output error" "$WORK/err"
fi
check "reads work while writes fail" cmp -s "$WORK/want/before" "$MNT/before"
STATS=$("$CTL" stats "$MNT")
FW=$(sed -n 's/.* \([0-9][0-9]*\) failed writes.*/\1/p' <<<"$STATS")
check "ordfsctl stats counts failed writes (${FW:-none})" test "${FW:-0}" -ge 1
FC=$(sed -n 's/.*commits:.*, \([0-9][0-9]*\) failed;.*/\1/p' <<<"$STATS")
check "ordfsctl stats counts the failed commit (${FC:-none})" test "${FC:-0}" -ge 1
echo "$STATS" | grep -E 'flushes|flush state|commits'

# --- the server works again -------------------------------------------------------------
rm -f "$TRIGGER"
check "after the trigger is gone: fsync of the same open file returns 0" [ "$(fsync_fd 7)" = OK ]
exec 7>&-
check "fsync (sync FILE) of the file whose write + fsync failed returns 0" sync "$MNT/a"
head -c 123456 /dev/urandom >"$WORK/want/c"
check "fsync of the empty file (the commit retried) returns 0" sync "$MNT/dir/empty"
: >"$WORK/want/empty"
check "a new write + fsync returns 0" wsync "$WORK/want/c" "$MNT/c"
WANT=$(sums "$WORK/want" | sed 's| ./empty$| ./dir/empty|' | sort -k2)
check "the files read back right" [ "$(sums "$MNT" | sort -k2)" = "$WANT" ]
check "ordfsctl stats: flush state ok" bash -c "'$CTL' stats '$MNT' | grep -Eq '^ *flush state: *ok'"

check "unmount" fusermount_u "$MNT"
wait "$DPID"
check "the daemon exits 0 (left the image clean)" test $? = 0
check "fsck -f after the unmount exits 0 (clean)" "$FSCK" -f "$URI"
require "mount again" mount_nbd "$URI" "$MNT"
check "after the remount every file has its bytes" [ "$(sums "$MNT" | sort -k2)" = "$WANT" ]
check "unmount" umount_nbd "$URI" "$MNT"
nbd_stop srv
check "fsck -f on the image file itself exits 0" "$FSCK" -f "$IMG"
summary
