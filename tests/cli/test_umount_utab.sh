#!/bin/bash
# test_umount_utab.sh - the daemon's line in libmount's utab
# (src/daemon/utab.c): recorded through libmount whatever PATH says, so
# umount(8) runs umount.ordfs and waits for the daemon; gone once the mount
# is gone, however it went (umount, fusermount3 -u, umount -l, kill -9 and
# the next mount); never another mount's line.
#
# Usage: test_umount_utab.sh BUILD_DIR
#   Needs root, /dev/fuse, fusermount3, util-linux's unshare, mount and
#   umount, and overlayfs; exits 77 (skip) with a line saying what is
#   missing otherwise.
#
# It runs in a mount namespace of its own (unshare -m) and changes nothing
# outside it: a tmpfs on /run/mount gives it a utab of its own (empty, no
# other program's lines), and an overlay on the directory of /sbin gives it
# a view where umount.ordfs is this build's and umount.fuse.ordfs is
# hidden, so umount(8) can run the helper only through the daemon's utab
# line.  The machine's /sbin and /run/mount/utab stay as they are.
#
# Every daemon is started with a PATH whose `mount` is a script that fails
# and leaves a trace: recording the helper must not depend on it.  The
# mount point has a space in its name, which utab and mountinfo write
# escaped ("\040"): the daemon must still know its own line.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

BUILD=$(readlink -f "${1:?usage: test_umount_utab.sh BUILD_DIR}")

if [ "${ORDFS_UTAB_TEST_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "not root: utab is root's, and the namespace needs it"
	[ -c /dev/fuse ] && [ -r /dev/fuse ] || skip "/dev/fuse is missing"
	command -v fusermount3 >/dev/null || skip "no fusermount3 (Debian package fuse3)"
	command -v unshare >/dev/null || skip "no unshare (util-linux)"
	umount --version 2>/dev/null | grep -q util-linux || skip "umount(8) is not util-linux's"
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
		skip "no overlayfs (needed for a private view of /sbin)"
	[ -d /run/mount ] || mkdir -p /run/mount || skip "no /run/mount"
	ORDFS_UTAB_TEST_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
	skip "cannot enter a mount namespace of its own"
fi

# The build's helper_dir (where the daemon looks for umount.ordfs) must
# be the directory umount(8) searches, and the flush latch needs the
# daemon's test hooks.
build_option() {
	python3 -c 'import json, sys
for o in json.load(open(sys.argv[1])):
	if o["name"] == sys.argv[2]:
		print(str(o["value"]).lower())' "$BUILD/meson-info/intro-buildoptions.json" "$1"
}
SBIN=$(readlink -f /sbin)
HELPER_DIR=$(readlink -f "$(build_option helper_dir)")
[ "$HELPER_DIR" = "$SBIN" ] ||
	skip "this build looks for umount.ordfs in $HELPER_DIR; umount(8) looks in /sbin ($SBIN)"
HOOKS=$(build_option test_hooks)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-utab.XXXXXX")
IMG=$WORK/disk.img
IMG2=$WORK/other.img
MNT="$WORK/mnt point" # a space: utab and mountinfo escape it ("\040")
MNT_IN_UTAB=${MNT// /\\040}
LATCH=$WORK/latch
SHADOW=$WORK/shadow
UTAB=/run/mount/utab
mkdir "$MNT" "$SHADOW" "$WORK/ovl"

cleanup() {
	rm -f "$LATCH"
	local p
	exec 3<&-
	while mountpoint -q "$MNT"; do umount -l "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT" || break; done
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done # our daemons not yet reaped
	wait
	for _ in $(seq 100); do flock -n "$IMG" true && flock -n "$IMG2" true && break; sleep 0.1; done
	umount "$SBIN" "$WORK/ovl" /run/mount 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# --- the namespace's own utab and /sbin --------------------------------------
mount -t tmpfs -o mode=755 tmpfs /run/mount || skip "cannot mount a tmpfs on /run/mount"
mount -t tmpfs tmpfs "$WORK/ovl" && mkdir "$WORK/ovl/up" "$WORK/ovl/work" &&
	mount -t overlay overlay \
		-o "lowerdir=$SBIN,upperdir=$WORK/ovl/up,workdir=$WORK/ovl/work" "$SBIN" ||
	skip "cannot put an overlay on $SBIN"
ln -sfn "$BUILD/tools/umount.ordfs" "$SBIN/umount.ordfs"
rm -f "$SBIN/umount.fuse.ordfs"

printf '#!/bin/sh\necho "mount $*" >>"%s/shadow.log"\nexit 1\n' "$WORK" >"$SHADOW/mount"
chmod +x "$SHADOW/mount"

"$BUILD/tools/mkfs.ordfs" -q "$IMG" 64M && "$BUILD/tools/mkfs.ordfs" -q "$IMG2" 64M ||
	{ fail "mkfs.ordfs"; summary; exit 1; }

# --- helpers -----------------------------------------------------------------
# utab lines for the mount point, and those of them that name the helper
# (awk reads the values from its environment: -v would undo the \040)
lines_at() { # lines_at [SOURCE]: how many lines for $MNT (from SOURCE)
	T="TARGET=$MNT_IN_UTAB" S="${1:+SRC=$1}" awk '
		{ at = 0; from = (ENVIRON["S"] == "") }
		{ for (i = 1; i <= NF; i++) { if ($i == ENVIRON["T"]) at = 1; if ($i == ENVIRON["S"]) from = 1 } }
		at && from { n++ } END { print n + 0 }' "$UTAB" 2>/dev/null || echo 0
}
helper_lines_at() {
	T="TARGET=$MNT_IN_UTAB" awk '
		{ for (i = 1; i <= NF; i++) if ($i == ENVIRON["T"]) { if ($0 ~ /OPTS=(.*,)?helper=ordfs(,|$)/) n++ } }
		END { print n + 0 }' "$UTAB" 2>/dev/null || echo 0
}
no_line() { [ "$(lines_at)" = 0 ]; }
one_line_of() { [ "$(lines_at)" = 1 ] && [ "$(lines_at "$1")" = 1 ] && [ "$(helper_lines_at)" = 1 ]; }
wait_for() { # wait_for COMMAND...: true within 10 s
	local i
	for i in $(seq 100); do "$@" && return 0; sleep 0.1; done
	"$@"
}
image_closed() { flock -n "${1:-$IMG}" true; }
mounted() { mountpoint -q "$MNT"; }

DAEMON=
start_daemon() { # start_daemon IMAGE: ordfs -f in the background, shadowed PATH
	PATH="$SHADOW:$PATH" ORDFS_TEST_FLUSH_LATCH="$LATCH" \
		"$BUILD/src/ordfs" "$1" "$MNT" -f 2>>"$WORK/daemon.log" 3<&- &
	DAEMON=$!
	wait_for mounted
}
daemon_exits_0() { # daemon_exits_0 PID: it exits 0 within 20 s
	local i
	for i in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then
		echo "      (daemon $1 still runs after 20 s)"
		return 1
	fi
	wait "$1"
	local rc=$?
	[ "$rc" = 0 ] || echo "      (daemon $1 exit status $rc)"
	[ "$rc" = 0 ]
}
show_utab() { echo "      utab: $(cat "$UTAB" 2>/dev/null | tr '\n' '|')"; }

# --- recorded through libmount, not through `mount` on PATH ------------------
# The detached start, as mount.fuse3 runs it: ordfs returns once the line
# is written (and says on stderr, before it detaches, if it could not).
check "ordfs IMAGE MOUNTPOINT (detached) with a PATH whose mount fails" \
	env PATH="$SHADOW:$PATH" ORDFS_TEST_FLUSH_LATCH="$LATCH" \
	"$BUILD/src/ordfs" "$IMG" "$MNT" 2>"$WORK/start.err"
check "  it said nothing on stderr" test ! -s "$WORK/start.err"
grep -q "cannot record the umount helper" "$WORK/start.err" &&
	fail "  it logged: $(head -1 "$WORK/start.err")"
check "  the shadowing mount was never run" test ! -e "$WORK/shadow.log"
check "  utab has one line for the mount point: its image, helper=ordfs" one_line_of "$IMG"
one_line_of "$IMG" || show_utab
check "  libmount merges it into the mount (findmnt --mtab shows helper=ordfs)" \
	eval 'findmnt --mtab -n -o OPTIONS --mountpoint "$MNT" | tr , "\n" | grep -qx helper=ordfs'
echo data >"$MNT/f"

# --- umount(8) runs umount.ordfs and waits for the daemon ---------------------
if [ "$HOOKS" = true ]; then
	touch "$LATCH" # the daemon's flushes (its last ones at unmount) wait
	umount "$MNT" 2>"$WORK/umount.err" &
	um=$!
	sleep 1
	check "umount is still waiting while the daemon's last flush is held" kill -0 "$um"
	check "  and the mount is already gone" eval '! mounted'
	rm -f "$LATCH"
	wait "$um"
	check "umount exits 0 once the daemon can finish" test $? = 0
else
	skip_part "the held-flush check of umount's wait: this build has no test hooks"
	check "umount exits 0" unmount_retrying umount "$MNT"
fi
check "  the image is closed when umount returns (its lock is free)" image_closed
check "  no utab line is left for the mount point" no_line
no_line || show_utab

# --- fusermount3 -u: the daemon drops its line on its way out -----------------
check "mount again (ordfs -f)" start_daemon "$IMG"
check "  its line is written" wait_for one_line_of "$IMG"
check "fusermount3 -u exits 0" fusermount_u "$MNT"
check "  the daemon exits 0" daemon_exits_0 "$DAEMON"
check "  no utab line is left for the mount point" no_line
no_line || show_utab

# --- umount -l: a lazily detached daemon, and a new mount on the same point ---
check "mount again" start_daemon "$IMG"
check "  its line is written" wait_for one_line_of "$IMG"
old=$DAEMON
exec 3<"$MNT/f" # keeps the detached filesystem, and its daemon, alive
check "umount -l exits 0" umount -l "$MNT"
check "  no utab line is left for the mount point" no_line
check "  the daemon still serves the open file" eval 'grep -qx data <&3'
check "another image mounted on the same mount point" start_daemon "$IMG2"
check "  its line is written" wait_for one_line_of "$IMG2"
exec 3<&-
check "the detached daemon exits 0 once its last file is closed" daemon_exits_0 "$old"
check "  the new mount's line is still there (the old daemon left it alone)" \
	one_line_of "$IMG2"
one_line_of "$IMG2" || show_utab
check "umount of the new mount exits 0" unmount_retrying umount "$MNT"
check "  its daemon exits 0" daemon_exits_0 "$DAEMON"
check "  no utab line is left" no_line

# --- kill -9: the next mount on the mount point drops the stale line ----------
check "mount again" start_daemon "$IMG"
check "  its line is written" wait_for one_line_of "$IMG"
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
check "fusermount3 -u -z of the dead mount exits 0" fusermount3 -u -z "$MNT"
check "  the killed daemon's line is still there (nobody could remove it)" one_line_of "$IMG"
# detached: ordfs returns once its line is written
check "mount the image again on the same mount point" \
	env PATH="$SHADOW:$PATH" "$BUILD/src/ordfs" "$IMG" "$MNT" 2>>"$WORK/daemon.log"
check "  utab has one line for it, not two" one_line_of "$IMG"
one_line_of "$IMG" || show_utab
check "umount exits 0" unmount_retrying umount "$MNT"
check "  the image is closed when umount returns" image_closed
check "  no utab line is left" no_line

check "the daemons logged nothing about utab" \
	eval '! grep -i "utab\|umount helper" "$WORK/daemon.log"'
check "and nobody ran the shadowing mount" test ! -e "$WORK/shadow.log"
summary
