#!/bin/bash
# test_blockdev.sh - ordfs on a block device (a loop device over a file):
# mkfs.ordfs takes the size from the device, the daemon mounts it, fsync
# flushes it (the flush state stays ok), a kill -9 is recovered by the next
# mount, fsck.ordfs checks it.
#
# Usage: test_blockdev.sh BUILD_DIR
#   Needs root, losetup and a free loop device, /dev/fuse; exits 77 (skip)
#   with a line saying what is missing otherwise.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

BUILD=$(readlink -f "${1:?usage: test_blockdev.sh BUILD_DIR}")
[ "$(id -u)" = 0 ] || skip "not root: loop devices need it"
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
command -v losetup >/dev/null || skip "no losetup (Debian package mount)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-blk.XXXXXX")
MNT=$WORK/mnt
mkdir "$MNT"
truncate -s 80M "$WORK/backing"
DEV=$(losetup -f --show "$WORK/backing" 2>/dev/null) || { rm -rf "$WORK"; skip "no free loop device"; }
DAEMON=
cleanup() {
	[ -n "$DAEMON" ] && kill -9 "$DAEMON" 2>/dev/null
	mountpoint -q "$MNT" && fusermount3 -u -z "$MNT"
	sleep 0.2
	losetup -d "$DEV"
	rm -rf "$WORK"
}
trap cleanup EXIT

"$BUILD/tools/mkfs.ordfs" "$DEV" >"$WORK/mkfs.out" 2>&1
check "mkfs.ordfs on $DEV without a size" test $? -eq 0
check "it took the size from the device (80 MiB)" grep -q "(80 MiB)" "$WORK/mkfs.out"
check "fsck.ordfs -fn on the fresh device exits 0" "$BUILD/tools/fsck.ordfs" -fn "$DEV"

"$BUILD/src/ordfs" "$DEV" "$MNT" -f 2>"$WORK/daemon.log" &
DAEMON=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.05; done
check "the daemon mounts the device" mountpoint -q "$MNT"
dd if=/dev/urandom of="$WORK/data" bs=1M count=8 status=none
check "write and fsync a file on the device (dd conv=fsync)" \
	dd if="$WORK/data" of="$MNT/data" bs=1M conv=fsync status=none
"$BUILD/tools/ordfsctl" stats "$MNT" >"$WORK/stats"
check "flushes reach the device (flush state ok)" grep -q "flush state:    ok" "$WORK/stats"
check "and some were issued" bash -c "! grep -q 'flushes:        0 ' '$WORK/stats'"
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
DAEMON=
fusermount3 -u -z "$MNT"
"$BUILD/src/ordfs" "$DEV" "$MNT"
check "a new daemon mounts after kill -9 (journal replay)" mountpoint -q "$MNT"
check "the fsync'd file is intact" cmp "$WORK/data" "$MNT/data"
check "unmount; the daemon lets go of the device" unmount_image "$MNT" "$DEV"
check "fsck.ordfs -fn after the unmount exits 0" "$BUILD/tools/fsck.ordfs" -fn "$DEV"
summary
