#!/bin/bash
# test_replay_untrusted.sh - what journal replay brings in is checked as the
# image itself is, and no journal or owner record an image holds makes the
# daemon or fsck.ordfs fail or hang (issue 36, findings 4, 5 and part of 8).
# Each image is made by ordfs-corrupt from a fresh, populated one:
#   journal-ro-compat   a committed copy of block 0 with an unknown
#                       ro_compat bit: a read-write mount is refused after
#                       the replay, as for the same bit in block 0 itself;
#                       a read-only mount works
#   journal-seq-limit   the journal's sequence at 2^62 - 1: mount, write,
#                       sync twice, unmount, mount again, fsck clean
#   journal-live-limit  committed transactions 2^62 - 1 and 2^62 in the
#                       log: fsck -fy converges in one run (exit 1), then
#                       -fn exit 0; the daemon replays it and mounts again
#   journal-errno-min   the journal's errno field INT_MIN: the mount records
#                       an error (EUCLEAN) without undefined behaviour
#                       (UBSan in the sanitizer build), fsck -fy clears it
#   owner-held          a silent holder on another host claiming an
#                       interval of 0xffffffff ms: the mount waits at most
#                       2 * OWNER_MAX_INTERVAL_MS + 1 s, not two minutes
#
# Usage: test_replay_untrusted.sh BUILD_DIR
#   Needs root and /dev/fuse for the mounts; exits 77 (skip) otherwise.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

BUILD=$(readlink -f "${1:?usage: test_replay_untrusted.sh BUILD_DIR}")
[ "$(id -u)" = 0 ] || skip "not root: the mounts need it"
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
MKFS=$BUILD/tools/mkfs.ordfs
FSCK=$BUILD/tools/fsck.ordfs
CORRUPT=$BUILD/tools/ordfs-corrupt
CTL=$BUILD/tools/ordfsctl
ORDFS=$BUILD/src/ordfs

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-replay.XXXXXX")
MNT=$WORK/mnt
mkdir "$MNT"
cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u -z "$MNT"
	rm -rf "$WORK"
}
trap cleanup EXIT

# fresh IMG: a populated image (ordfs-corrupt's tree)
fresh() {
	rm -f "$1"
	"$MKFS" -q "$1" 64M >/dev/null 2>&1 && "$CORRUPT" populate "$1"
}
# mount IMG [OPTS]: the daemon detaches once mounted (or exits non-zero);
# its messages go to $WORK/daemon.log
mount_img() {
	if [ -n "${2:-}" ]; then
		"$ORDFS" "$1" "$MNT" -o "$2" >"$WORK/daemon.log" 2>&1
	else
		"$ORDFS" "$1" "$MNT" >"$WORK/daemon.log" 2>&1
	fi
}
# umount IMG: waits until the daemon has closed the image (lib.sh)
umount_img() { unmount_image "$MNT" "$1"; }
no_ub() { ! grep -q "runtime error" "$WORK/daemon.log"; }

# ---- finding 4: an unknown ro_compat bit that arrives through replay ----
IMG=$WORK/rocompat.img
fresh "$IMG" || fail "make the populated image"
cp "$IMG" "$WORK/plain.img"
"$CORRUPT" "$IMG" journal-ro-compat 1 >"$WORK/what"
check "ordfs-corrupt journal-ro-compat ($(cat "$WORK/what"))" test $? -eq 0
cp "$IMG" "$WORK/rocompat-ro.img"
mount_img "$IMG"
rc=$?
if [ $rc -eq 0 ]; then
	touch "$MNT/written" 2>/dev/null
	wrote=$?
	umount_img "$IMG"
	fail "a read-write mount after replaying an unknown ro_compat bit is refused (it mounted; touch exit $wrote)"
else
	check "a read-write mount after replaying an unknown ro_compat bit is refused" \
		grep -q "features this ordfs can only mount read-only" "$WORK/daemon.log"
fi
mount_img "$IMG"
check "so is the next one (the bit is now in block 0 itself)" test $? -ne 0
check "for the same reason" grep -q "features this ordfs can only mount read-only" "$WORK/daemon.log"
mount_img "$WORK/rocompat-ro.img" ro
if check "a read-only mount of the same damaged image works (replayed first)" test $? -eq 0; then
	check "and reads the tree" test -s "$MNT/d/f00"
	check "and writes nothing" bash -c "! touch '$MNT/x' 2>/dev/null"
	umount_img "$WORK/rocompat-ro.img"
fi
# control: the same bit set in block 0 directly is refused the same way
"$CORRUPT" "$WORK/plain.img" journal-ro-compat 1 >/dev/null && "$FSCK" -fy "$WORK/plain.img" >/dev/null 2>&1
mount_img "$WORK/plain.img"
rc=$?
[ $rc -eq 0 ] && umount_img "$WORK/plain.img"
check "control: the bit replayed by fsck into block 0 is refused read-write too" \
	bash -c "[ $rc -ne 0 ] && grep -q 'can only mount read-only' '$WORK/daemon.log'"

# ---- finding 5: sequence numbers near the reader's limit ----------------
IMG=$WORK/seq.img
fresh "$IMG" || fail "make the populated image"
"$CORRUPT" "$IMG" journal-seq-limit 1 >/dev/null
check "fsck.ordfs -fn on a journal at sequence 2^62 - 1 exits 0" "$FSCK" -fn "$IMG"
mount_img "$IMG"
if check "mount at sequence 2^62 - 1" test $? -eq 0; then
	echo one >"$MNT/one"
	check "sync" "$CTL" sync "$MNT"
	echo two >"$MNT/two"
	check "sync again" "$CTL" sync "$MNT"
	check "unmount" umount_img "$IMG"
fi
mount_img "$IMG"
if check "mount again after the writes" test $? -eq 0; then
	check "the files written are there" bash -c "[ \"\$(cat '$MNT/one' '$MNT/two')\" = \"one
two\" ]"
	umount_img "$IMG"
else
	echo "  daemon: $(cat "$WORK/daemon.log")"
fi
"$FSCK" -fn "$IMG" >"$WORK/fsck.out" 2>&1
check "fsck.ordfs -fn after it exits 0 (got $?)" test $? -eq 0
seq=$("$BUILD/tools/dump.ordfs" "$IMG" 2>/dev/null | sed -n 's/^ *Journal sequence: *//p')
check "the journal started again at 1 (sequence now ${seq:-?})" \
	bash -c "[ -n '$seq' ] && [ '$seq' -lt 1000 ]"

IMG=$WORK/live.img
fresh "$IMG" || fail "make the populated image"
"$CORRUPT" "$IMG" journal-live-limit 1 >/dev/null
cp "$IMG" "$WORK/live-daemon.img"
"$FSCK" -fy "$IMG" >"$WORK/fsck.out" 2>&1
rc=$?
check "fsck.ordfs -fy with live transactions 2^62 - 1 and 2^62 exits 1 (got $rc)" test $rc -eq 1
[ $rc -eq 1 ] || sed 's/^/  /' "$WORK/fsck.out"
"$FSCK" -fn "$IMG" >"$WORK/fsck.out" 2>&1
rc=$?
check "then fsck.ordfs -fn exits 0 (got $rc)" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/  /' "$WORK/fsck.out"
mount_img "$WORK/live-daemon.img"
if check "the daemon replays the same log and mounts" test $? -eq 0; then
	echo three >"$MNT/three"
	check "sync" "$CTL" sync "$MNT"
	umount_img "$WORK/live-daemon.img"
	mount_img "$WORK/live-daemon.img"
	check "and mounts again" test $? -eq 0 && umount_img "$WORK/live-daemon.img"
fi
check "fsck.ordfs -fn after it exits 0" "$FSCK" -fn "$WORK/live-daemon.img"

# ---- finding 8: the journal's errno field at INT_MIN --------------------
IMG=$WORK/errno.img
fresh "$IMG" || fail "make the populated image"
"$CORRUPT" "$IMG" journal-errno-min 1 >/dev/null
mount_img "$IMG"
rc=$?
[ $rc -eq 0 ] && umount_img "$IMG"
check "the mount replays and refuses: the journal recorded an error" \
	grep -q "recorded an error; run fsck.ordfs" "$WORK/daemon.log"
check "without undefined behaviour (no UBSan report)" no_ub
"$FSCK" -fn "$IMG" >"$WORK/fsck.out" 2>&1
check "fsck.ordfs -fn names the recorded error as EUCLEAN (errno 117)" \
	grep -q "recorded an error (errno 117)" "$WORK/fsck.out"
"$FSCK" -fy "$IMG" >"$WORK/fsck.out" 2>&1
check "fsck.ordfs -fy clears it (exit 1, got $?)" test $? -eq 1
check "then -fn exits 0" "$FSCK" -fn "$IMG"
mount_img "$IMG"
check "and it mounts" test $? -eq 0 && umount_img "$IMG"

# ---- finding 8: an owner record that claims an endless heartbeat --------
IMG=$WORK/owner.img
fresh "$IMG" || fail "make the populated image"
"$CORRUPT" "$IMG" owner-held 1 >"$WORK/what"
check "ordfs-corrupt owner-held ($(cat "$WORK/what"))" test $? -eq 0
start=$(date +%s)
timeout 40 "$ORDFS" "$IMG" "$MNT" >"$WORK/daemon.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
check "the mount completes within 20 s (exit $rc after ${took} s)" \
	bash -c "[ $rc -eq 0 ] && [ $took -le 20 ]"
mountpoint -q "$MNT" && umount_img "$IMG"
check "fsck.ordfs -fn after it exits 0" "$FSCK" -fn "$IMG"

summary
