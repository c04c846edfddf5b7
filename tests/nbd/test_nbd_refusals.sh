#!/bin/bash
# test_nbd_refusals.sh - what must be refused over NBD, each with exit
# non-zero and one line saying why, and nothing changed:
#   - a URI naming no socket, a malformed URI, a socket nobody listens on
#     (daemon, mkfs, fsck, tune, dump);
#   - a read-only export (nbdkit -r) for the daemon read-write, mkfs, fsck
#     -y and tune -L; the daemon with -o ro and fsck -n work on it;
#   - a server that cannot flush (file_plugin.sh flush=no): the daemon
#     without nobarrier, mkfs, fsck and tune; the daemon with -o nobarrier
#     and read-only opens (tune -l) work;
#   - a held export: a second daemon, fsck -f, fsck -fy, mkfs -F and tune
#     -L while the first daemon runs (all five at once) are refused naming
#     the holder ("image is in use
#     by ordfs (pid P ...)"), the image file behind the export is
#     byte-identical afterwards (but for the owner record's sector, which
#     the holder's heartbeat rewrites), the first daemon serves on and its
#     files are intact after an unmount, fsck and a remount.
#
# Usage: test_nbd_refusals.sh BUILD_DIR
#   Skips (exit 77) without nbdkit; the mounted parts are skipped without
#   /dev/fuse.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file sh
HAVE_FUSE=1
[ -c /dev/fuse ] && [ -r /dev/fuse ] && command -v fusermount3 >/dev/null || HAVE_FUSE=0
PLUGIN=$WORK/file_plugin.sh
install -m 755 "$(dirname "$(readlink -f "$0")")/file_plugin.sh" "$PLUGIN"

MNT=$WORK/mnt
MNT2=$WORK/mnt2
mkdir -p "$MNT" "$MNT2"
ERR=$WORK/err

# refused WHAT PATTERN COMMAND...: COMMAND exits non-zero, prints exactly
# one line on stderr, matching PATTERN (grep -E), and mounts nothing.
refused() {
	local what=$1 pattern=$2
	shift 2
	local rc=0
	"$@" >"$WORK/out" 2>"$ERR" || rc=$?
	if [ $rc -eq 0 ]; then
		fail "$what: refused (it exited 0)"
		is_mounted "$MNT" && fusermount3 -u "$MNT"
		is_mounted "$MNT2" && fusermount3 -u "$MNT2"
		return
	fi
	pass "$what: refused (exit $rc)"
	if [ "$(wc -l <"$ERR")" -eq 1 ] && grep -Eq "$pattern" "$ERR"; then
		pass "$what: one line: $(cat "$ERR")"
	else
		fail "$what: one line matching /$pattern/; got: $(cat "$ERR")"
	fi
}

# start_bg NAME COMMAND...: runs COMMAND in the background, its exit status
# and stderr kept under NAME (each refusal over a held export watches the
# holder's heartbeat for 3 s: they run together).
start_bg() {
	local name=$1
	shift
	("$@" >/dev/null 2>"$WORK/$name.err"; echo $? >"$WORK/$name.rc") &
}
# refused_bg NAME WHAT PATTERN [STATUS]: the check of refused for a command
# started by start_bg (after `wait`); STATUS: the exit status it must have.
refused_bg() {
	local name=$1 what=$2 pattern=$3 rc
	rc=$(cat "$WORK/$name.rc")
	cp "$WORK/$name.err" "$ERR"
	if [ "$rc" = 0 ]; then
		fail "$what: refused (it exited 0)"
	elif [ -n "${4:-}" ] && [ "$rc" != "$4" ]; then
		fail "$what: refused with exit $4 (it exited $rc)"
	else
		pass "$what: refused (exit $rc)"
	fi
	if [ "$(wc -l <"$ERR")" -eq 1 ] && grep -Eq "$pattern" "$ERR"; then
		pass "$what: one line: $(cat "$ERR")"
	else
		fail "$what: one line matching /$pattern/; got: $(cat "$ERR")"
	fi
}

# --- bad URIs, nobody listening ----------------------------------------------------
NOSOCK="nbd+unix:///?socket=$WORK/nonexistent.sock"
WHY_NOSOCK="^[a-z.]+: .*nonexistent.sock: .*connect: No such file or directory"
refused "daemon on a URI naming no socket" "$WHY_NOSOCK" "$ORDFS" "$NOSOCK" "$MNT"
check "nothing is mounted" not_mounted "$MNT"
refused "mkfs on a URI naming no socket" "$WHY_NOSOCK" "$MKFS" -q "$NOSOCK"
refused "fsck -f on a URI naming no socket" "$WHY_NOSOCK" "$FSCK" -f "$NOSOCK"
check "fsck's exit status is 8 (operational error)" [ "$(rc_of "$FSCK" -f "$NOSOCK")" = 8 ]
refused "tune -l on a URI naming no socket" "$WHY_NOSOCK" "$TUNE" -l "$NOSOCK"
refused "dump on a URI naming no socket" "$WHY_NOSOCK" "$DUMP" "$NOSOCK"
refused "daemon on a URI without socket=" "cannot parse socket parameter" "$ORDFS" "nbd+unix://" "$MNT"
refused "mkfs on a malformed URI" "unable to parse URI|cannot parse" "$MKFS" -q "nbd://[::1"

# A socket file nobody listens on: a server that died (nbdkit leaves it).
require "nbdkit memory plugin starts (then is stopped)" nbd_start dead memory 64M
nbd_stop dead
DEAD=$(nbd_uri dead)
check "its socket file is still there" [ -S "$WORK/dead.sock" ]
WHY_REFUSED="connect: Connection refused"
refused "daemon on a socket nobody listens on" "$WHY_REFUSED" "$ORDFS" "$DEAD" "$MNT"
check "nothing is mounted" not_mounted "$MNT"
refused "mkfs on a socket nobody listens on" "$WHY_REFUSED" "$MKFS" -q "$DEAD"
refused "fsck -f on a socket nobody listens on" "$WHY_REFUSED" "$FSCK" -f "$DEAD"

# --- a read-only export ------------------------------------------------------------------
IMG=$WORK/disk.img
check "mkfs.ordfs on an image file" "$MKFS" -q -L refusals "$IMG" 64M
if [ "$HAVE_FUSE" = 1 ]; then
	# a file to read back through the read-only export
	require "nbdkit file plugin for a first mount" nbd_start rw file "$IMG"
	require "mount it" mount_nbd "$(nbd_uri rw)" "$MNT"
	echo "written before the export became read-only" >"$MNT/note"
	check "unmount" umount_nbd "$(nbd_uri rw)" "$MNT"
	nbd_stop rw
fi
cp "$IMG" "$WORK/before.img"
require "nbdkit -r (a read-only export) starts" nbd_start ro -r file "$IMG"
RO=$(nbd_uri ro)
WHY_RO="the NBD export is read-only"
if [ "$HAVE_FUSE" = 1 ]; then
	refused "daemon read-write on a read-only export" "$WHY_RO" "$ORDFS" "$RO" "$MNT"
	check "nothing is mounted" not_mounted "$MNT"
	require "the daemon with -o ro mounts it" mount_nbd "$RO" "$MNT" -o ro
	check "a file reads back through it" grep -qx "written before the export became read-only" "$MNT/note"
	if echo x 2>"$ERR" >"$MNT/new"; then
		fail "a write on the ro mount is refused"
	else
		check "a write on the ro mount gets EROFS" grep -q "Read-only file system" "$ERR"
	fi
	check "unmount the ro mount" umount_nbd "$RO" "$MNT"
else
	skip_part "the daemon on a read-only export: /dev/fuse is missing"
fi
refused "mkfs on a read-only export" "$WHY_RO" "$MKFS" -q -F "$RO"
refused "fsck -fy on a read-only export" "$WHY_RO" "$FSCK" -fy "$RO"
refused "tune -L on a read-only export" "$WHY_RO" "$TUNE" -L x "$RO"
check "fsck -fn on a read-only export exits 0" "$FSCK" -fn "$RO"
check "tune -l on a read-only export exits 0" bash -c "'$TUNE' -l '$RO' | grep -q '^Filesystem volume name: *refusals\$'"
nbd_stop ro
check "the image behind the read-only export is unchanged" cmp -s "$IMG" "$WORK/before.img"

# --- a server that cannot flush ----------------------------------------------------------
require "nbdkit sh plugin without flush starts" nbd_start noflush sh "$PLUGIN" file="$IMG" flush=no
NOFLUSH=$(nbd_uri noflush)
check "nbdinfo: the export cannot flush" bash -c "nbdinfo '$NOFLUSH' | grep -q 'can_flush: false'"
WHY_NOFLUSH="the NBD server cannot flush \(no NBD_CMD_FLUSH\).*nobarrier"
if [ "$HAVE_FUSE" = 1 ]; then
	refused "daemon (barrier, the default) on a server without flush" "$WHY_NOFLUSH" \
		"$ORDFS" "$NOFLUSH" "$MNT"
	check "nothing is mounted" not_mounted "$MNT"
	require "the daemon with -o nobarrier mounts it" mount_nbd "$NOFLUSH" "$MNT" -o nobarrier
	check "ordfsctl stats: flush state disabled (nobarrier)" \
		bash -c "'$CTL' stats '$MNT' | grep -Eq '^ *flush state: *disabled'"
	if wsync /etc/services "$MNT/services"; then
		pass "a write + fsync on it returns 0"
	else
		fail "a write + fsync on it returns 0; dd said: $(cat "$WORK/wsync.err")"
		"$CTL" stats "$MNT" | sed 's/^/  stats: /'
	fi
	require "unmount it" umount_nbd "$NOFLUSH" "$MNT"
else
	skip_part "the daemon on a server without flush: /dev/fuse is missing"
fi
refused "mkfs on a server without flush" "$WHY_NOFLUSH" "$MKFS" -q -F "$NOFLUSH"
refused "fsck -f on a server without flush" "$WHY_NOFLUSH" "$FSCK" -f "$NOFLUSH"
refused "tune -L on a server without flush" "$WHY_NOFLUSH" "$TUNE" -L x "$NOFLUSH"
check "tune -l (a read-only open) on a server without flush exits 0" \
	bash -c "'$TUNE' -l '$NOFLUSH' | grep -q '^Filesystem volume name: *refusals\$'"
nbd_stop noflush
if [ "$HAVE_FUSE" = 1 ]; then
	check "what the nobarrier mount wrote is in the image file" \
		bash -c "'$FSCK' -f '$IMG' >/dev/null"
fi

# --- a held export ------------------------------------------------------------------------
if [ "$HAVE_FUSE" = 0 ]; then
	skip_part "a held export: /dev/fuse is missing"
	summary
	exit
fi
require "nbdkit file plugin for the held export" nbd_start held file "$IMG"
HELD=$(nbd_uri held)
require "the first daemon mounts it" mount_nbd "$HELD" "$MNT" -o noatime
DPID=$(daemon_pid "$HELD")
check "its pid is found ($DPID)" [ -n "$DPID" ]
mkdir "$MNT/d"
for i in 1 2 3 4; do head -c $((i * 50000)) /dev/urandom >"$WORK/h$i"; wsync "$WORK/h$i" "$MNT/d/h$i"; done
SUMS=$(sums "$MNT")
check "ordfsctl sync (the image is now idle)" "$CTL" sync "$MNT"
SIZE=$(stat -c %s "$IMG")
head -c $((SIZE - 512)) "$IMG" >"$WORK/held-before"
WHY_HELD="image is in use by ordfs \(pid $DPID on [^ ]+, heartbeat [0-9]+ s ago\)"
t0=$SECONDS
start_bg daemon2 "$ORDFS" "$HELD" "$MNT2"
start_bg fsck "$FSCK" -f "$HELD"
start_bg fsck_y "$FSCK" -fy "$HELD"
start_bg mkfs "$MKFS" -q -F "$HELD"
start_bg tune "$TUNE" -L changed "$HELD"
wait
echo "(the five refusals took $((SECONDS - t0)) s together)"
refused_bg daemon2 "a second daemon on the held export" "$WHY_HELD"
check "nothing is mounted on the second mount point" not_mounted "$MNT2"
refused_bg fsck "fsck -f on the held export" "$WHY_HELD" 8
refused_bg fsck_y "fsck -fy on the held export" "$WHY_HELD" 8
refused_bg mkfs "mkfs -F on the held export" "$WHY_HELD"
refused_bg tune "tune -L on the held export" "$WHY_HELD"
head -c $((SIZE - 512)) "$IMG" >"$WORK/held-after"
check "the image file is byte-identical but for the owner record" \
	cmp -s "$WORK/held-before" "$WORK/held-after"
check "the first daemon still runs" running "$DPID"
check "and still serves: its files are intact" [ "$(sums "$MNT")" = "$SUMS" ]
check "and a new write + fsync returns 0" wsync "$WORK/h1" "$MNT/after"
check "unmount the first daemon" umount_nbd "$HELD" "$MNT"
check "fsck -f after it exits 0" "$FSCK" -f "$HELD"
check "the label is the one mkfs set (tune -L was refused)" \
	bash -c "'$TUNE' -l '$HELD' | grep -q '^Filesystem volume name: *refusals\$'"
require "the export is free again: a mount works at once" mount_nbd "$HELD" "$MNT2"
check "every file the first daemon had is intact" \
	[ "$(sums "$MNT2" | grep -v ' ./after$')" = "$SUMS" ]
check "and the one written after the refusals" cmp -s "$WORK/h1" "$MNT2/after"
check "unmount" umount_nbd "$HELD" "$MNT2"
nbd_stop held
summary
