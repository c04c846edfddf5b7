#!/bin/bash
# test_nbd_flush_errors.sh - the NBD server's flush fails (file_plugin.sh,
# an nbdkit sh plugin serving an image file, answers NBD_CMD_FLUSH with
# EIO while a trigger file exists), once under each flush_error= policy
# (design/flush.md, "Flush failures"):
#   report      the fsync that depends on the failed flush gets EIO (also
#               through an open file kept open), ordfsctl stats counts the
#               failed flushes; once the server flushes again the same open
#               file's fsync returns 0 (the error reported once), and after
#               an unmount, fsck -f (clean) and a remount nothing an fsync
#               acknowledged is missing;
#   ignore      fsync returns 0, one log line says so, stats count it;
#   remount-ro  fsync gets EIO, then writes get EROFS (also after the
#               server heals), reads work; the next read-write mount is
#               refused until fsck.ordfs has checked the image (-o ro
#               works); fsck -fy clears the error (exit 1);
#   abort       fsync gets an error, the daemon logs, unmounts itself and
#               exits 1; the next mount replays the journal.
# The daemon runs in the foreground (-f) so its log lines and exit status
# can be checked.  Once the daemon that saw the failures is gone, the same
# image is served on the same socket by nbdkit's file plugin (a server
# that was repaired): the sh plugin forks a shell per request, too slow for
# fsck's many reads.
#
# Usage: test_nbd_flush_errors.sh BUILD_DIR
#   Skips (exit 77) without nbdkit (sh plugin), python3 or /dev/fuse.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit sh file
need_fuse
command -v python3 >/dev/null || skip "python3 is missing (the fsync of an open file)"
PLUGIN=$WORK/file_plugin.sh
install -m 755 "$(dirname "$(readlink -f "$0")")/file_plugin.sh" "$PLUGIN"

head -c 150000 /dev/urandom >"$WORK/data1"
head -c 77777 /dev/urandom >"$WORK/data2"
head -c 4096 /dev/urandom >"$WORK/data3"

# setup POLICY: a fresh image served by the plugin, mounted in the
# foreground with flush_error=POLICY; a file "base" written + fsync'd.
# Sets URI MNT LOG TRIGGER FLOG WANT.
setup() {
	local pol=$1
	echo "=== flush_error=$pol"
	IMG=$WORK/$pol.img
	MNT=$WORK/mnt-$pol
	LOG=$WORK/daemon-$pol.log
	TRIGGER=$WORK/fail-flush-$pol
	FLOG=$WORK/flushes-$pol
	WANT=$WORK/want-$pol
	mkdir -p "$WANT"
	"$MKFS" -q -N 1024 "$IMG" 32M || return 1
	nbd_start "$pol" sh "$PLUGIN" file="$IMG" fail-flush-file="$TRIGGER" flush-log="$FLOG" || return 1
	URI=$(nbd_uri "$pol")
	mount_fg "$URI" "$MNT" "$LOG" -o "flush_error=$pol" || return 1
	cp "$WORK/data1" "$WANT/base"
	wsync "$WANT/base" "$MNT/base"
}

# From `ordfsctl stats` of the mount, and the flush log of the server.
failed_flushes() { "$CTL" stats "$MNT" | sed -n 's/.*, \([0-9][0-9]*\) failed flushes.*/\1/p'; }
flush_state() { "$CTL" stats "$MNT" | sed -n 's/^ *flush state: *//p'; }
server_failed_flushes() { grep -c EIO "$FLOG" 2>/dev/null; }

# repaired POLICY: the same image on the same socket, now served by
# nbdkit's file plugin.
repaired() {
	nbd_stop "$1"
	nbd_start "$1" file "$IMG"
}

# finish_clean STATUS POLICY: unmount (the foreground daemon), check its
# exit status is STATUS, fsck -f exits 0, a remount has the files of $WANT.
finish_clean() {
	local want_status=$1 pol=$2
	check "$pol: unmount" fusermount_u "$MNT"
	wait "$FGPID"
	check "$pol: the daemon exits $want_status" test $? = "$want_status"
	require "$pol: the image served by the file plugin from now on" repaired "$pol"
	check "$pol: fsck -f after the unmount exits 0 (clean)" "$FSCK" -f "$URI"
	require "$pol: mount again" mount_nbd "$URI" "$MNT"
	check "$pol: every file an fsync acknowledged has its bytes" [ "$(sums "$MNT")" = "$(sums "$WANT")" ]
	check "$pol: unmount again" umount_nbd "$URI" "$MNT"
	nbd_stop "$pol"
}

# --- report ---------------------------------------------------------------------------------
require "report: setup (mkfs, nbdkit sh plugin, mount, base file fsync'd)" setup report
touch "$TRIGGER"
cp "$WORK/data2" "$WANT/kept_open"
exec 7>"$MNT/kept_open"
cat "$WANT/kept_open" >&7
check "report: fsync of an open file while flushes fail returns EIO" [ "$(fsync_fd 7)" = EIO ]
cp "$WORK/data3" "$WANT/second"
if wsync "$WANT/second" "$MNT/second"; then
	fail "report: another write + fsync while flushes fail returns an error (it returned 0)"
else
	check "report: another write + fsync while flushes fail gets EIO" grep -q "Input/output error" "$WORK/wsync.err"
fi
check "report: the server saw failing flushes ($(server_failed_flushes))" test "$(server_failed_flushes)" -ge 1
N=$(failed_flushes)
check "report: ordfsctl stats counts failed flushes (${N:-none})" test "${N:-0}" -ge 1
check "report: flush state says failing ($(flush_state))" bash -c "'$CTL' stats '$MNT' | grep -q 'flush state: *failing'"
check "report: reads work meanwhile" cmp -s "$WANT/base" "$MNT/base"
rm -f "$TRIGGER"
check "report: healed: fsync of the same open file returns 0" [ "$(fsync_fd 7)" = OK ]
check "report: and again 0 (the error was reported once)" [ "$(fsync_fd 7)" = OK ]
exec 7>&-
check "report: fsync of the other file whose fsync failed returns 0" sync "$MNT/second"
cp "$WORK/data3" "$WANT/after"
check "report: a new write + fsync returns 0" wsync "$WANT/after" "$MNT/after"
check "report: flush state ok again ($(flush_state))" bash -c "'$CTL' stats '$MNT' | grep -Eq 'flush state: *ok'"
check "report: the log says flush_error=report" grep -q "flush_error=report" "$LOG"
finish_clean 0 report

# --- ignore ---------------------------------------------------------------------------------
require "ignore: setup" setup ignore
touch "$TRIGGER"
ok=1
for i in 1 2 3; do
	cp "$WORK/data2" "$WANT/during$i"
	wsync "$WANT/during$i" "$MNT/during$i" || ok=0
done
check "ignore: 3 writes + fsync while flushes fail all return 0" [ $ok = 1 ]
check "ignore: the server saw a failing flush ($(server_failed_flushes))" test "$(server_failed_flushes)" -ge 1
N=$(failed_flushes)
check "ignore: ordfsctl stats counts it (${N:-none} failed flushes)" test "${N:-0}" -ge 1
check "ignore: exactly one log line says it is ignored" \
	test "$(grep -c 'flush_error=ignore: continuing' "$LOG")" = 1
rm -f "$TRIGGER"
cp "$WORK/data3" "$WANT/after"
check "ignore: a write + fsync after the server heals returns 0" wsync "$WANT/after" "$MNT/after"
finish_clean 0 ignore

# --- remount-ro -----------------------------------------------------------------------------
require "remount-ro: setup" setup remount-ro
touch "$TRIGGER"
if wsync "$WORK/data2" "$MNT/during"; then
	fail "remount-ro: write + fsync while flushes fail returns an error (it returned 0)"
else
	check "remount-ro: write + fsync while flushes fail gets EIO" grep -q "Input/output error" "$WORK/wsync.err"
fi
if echo x 2>"$WORK/err" >"$MNT/new"; then
	fail "remount-ro: a write after the failure gets EROFS (it worked)"
else
	check "remount-ro: a write after the failure gets EROFS" grep -q "Read-only file system" "$WORK/err"
fi
rm -f "$TRIGGER"
if mkdir "$MNT/newdir" 2>"$WORK/err"; then
	fail "remount-ro: mkdir after the server healed gets EROFS (it worked)"
else
	check "remount-ro: mkdir after the server healed still gets EROFS" grep -q "Read-only file system" "$WORK/err"
fi
check "remount-ro: reads work" cmp -s "$WANT/base" "$MNT/base"
check "remount-ro: flush state says stopped ($(flush_state))" \
	bash -c "'$CTL' stats '$MNT' | grep -q 'flush state: *stopped'"
check "remount-ro: the log says the journal aborted" grep -q "journal aborted" "$LOG"
check "remount-ro: unmount" fusermount_u "$MNT"
wait "$FGPID"
echo "(the remount-ro daemon exited $?)"
require "remount-ro: the image served by the file plugin from now on" repaired remount-ro
if "$ORDFS" "$URI" "$MNT" 2>"$WORK/err"; then
	fail "remount-ro: the next read-write mount is refused (it mounted)"
	umount_nbd "$URI" "$MNT"
else
	check "remount-ro: the next read-write mount is refused: run fsck.ordfs" grep -q "run fsck.ordfs" "$WORK/err"
	check "remount-ro: with one line" test "$(wc -l <"$WORK/err")" = 1
fi
check "remount-ro: nothing is mounted" not_mounted "$MNT"
require "remount-ro: a read-only mount works" mount_nbd "$URI" "$MNT" -o ro
check "remount-ro: the file fsync'd before the failure reads back" cmp -s "$WANT/base" "$MNT/base"
check "remount-ro: unmount the ro mount" umount_nbd "$URI" "$MNT"
check "remount-ro: fsck -fn exits 4 (the recorded error)" test "$(rc_of "$FSCK" -fn "$URI")" = 4
"$FSCK" -fy "$URI" >"$WORK/fsck.out" 2>&1
rc=$?
cat "$WORK/fsck.out"
check "remount-ro: fsck -fy exits 1 (corrected)" test $rc = 1
check "remount-ro: it cleared the recorded error" grep -q "recorded error state cleared" "$WORK/fsck.out"
check "remount-ro: fsck -f then exits 0" "$FSCK" -f "$URI"
require "remount-ro: a read-write mount works after fsck" mount_nbd "$URI" "$MNT"
check "remount-ro: every file an fsync acknowledged has its bytes" [ "$(sums "$MNT")" = "$(sums "$WANT")" ]
cp "$WORK/data3" "$WANT/after"
check "remount-ro: a write + fsync works again" wsync "$WANT/after" "$MNT/after"
check "remount-ro: unmount" umount_nbd "$URI" "$MNT"
check "remount-ro: fsck -f exits 0" "$FSCK" -f "$URI"
nbd_stop remount-ro

# --- abort ----------------------------------------------------------------------------------
require "abort: setup" setup abort
touch "$TRIGGER"
if wsync "$WORK/data2" "$MNT/during"; then
	fail "abort: write + fsync while flushes fail returns an error (it returned 0)"
else
	pass "abort: write + fsync while flushes fail returns an error: $(tr '\n' ' ' <"$WORK/wsync.err")"
fi
if wait_gone "$FGPID" 20; then
	pass "abort: the daemon exits"
	wait "$FGPID"
	check "abort: with status 1" test $? = 1
else
	fail "abort: the daemon exits (still running after 20 s)"
fi
check "abort: the mount is gone" not_mounted "$MNT"
check "abort: the log says it stops" grep -q "stopping: the filesystem hit an error its policy says is fatal" "$LOG"
rm -f "$TRIGGER"
require "abort: the image served by the file plugin from now on" repaired abort
require "abort: the next mount" mount_fg "$URI" "$MNT" "$WORK/daemon-abort2.log"
check "abort: every file an fsync acknowledged has its bytes" \
	[ "$(sums "$MNT" | grep -v ' ./during$')" = "$(sums "$WANT")" ]
check "abort: the mount replayed the journal" grep -q "recovered the journal" "$WORK/daemon-abort2.log"
cp "$WORK/data3" "$WANT/after"
check "abort: a write + fsync works" wsync "$WANT/after" "$MNT/after"
check "abort: unmount" fusermount_u "$MNT"
wait "$FGPID"
check "abort: the daemon exits 0" test $? = 0
check "abort: fsck -f exits 0" "$FSCK" -f "$URI"
nbd_stop abort
summary
