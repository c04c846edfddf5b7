#!/bin/bash
# test_scrub.sh - ordfsctl scrub on a mounted image (the real daemon,
# check/scrub.c): it finds a block two files map (ordfs-corrupt
# extent-dup) and a mapped block the bitmap calls free (bitmap-free, the
# state in which a new file would take a live file's block), records the
# error for fsck, leaves the files readable; on a clean image it stays
# clean while writers create, write, truncate, rename and remove files
# beside it (no false alarm from an operation half done); a caller who
# neither owns the mount nor has CAP_SYS_ADMIN is refused.
#
# Usage: test_scrub.sh BUILD_DIR
#   Needs root and /dev/fuse (exit 77, skip, otherwise).  ORDFS_SCRUB_BUSY
#   (default 40) is how many scrubs run beside the writers.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

BUILD=$(readlink -f "${1:?usage: test_scrub.sh BUILD_DIR}")
[ "$(id -u)" = 0 ] || skip "not root: the test mounts with the daemon as root"
[ -c /dev/fuse ] && [ -r /dev/fuse ] || skip "/dev/fuse is missing"
DAEMON=$BUILD/src/ordfs
MKFS=$BUILD/tools/mkfs.ordfs
FSCK=$BUILD/tools/fsck.ordfs
CTL=$BUILD/tools/ordfsctl
CORRUPT=$BUILD/tools/ordfs-corrupt

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-scrub.XXXXXX")
MNT=$WORK/mnt
mkdir "$MNT"
WRITERS=()
cleanup() {
	local p
	for p in "${WRITERS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"; }
	rm -rf "$WORK"
}
trap cleanup EXIT

# unmount IMG: MNT unmounted and the image let go of (lib.sh)
unmount() { unmount_image "$MNT" "$1" || fail "unmount $1"; }

# scrub_damaged IMAGE KIND SEED: a populated image damaged one way,
# mounted and scrubbed; the scrub's output in $WORK/out, its exit in rc
scrub_damaged() {
	rm -f "$1"
	"$MKFS" -q "$1" 64M && "$CORRUPT" populate "$1" && "$CORRUPT" "$1" "$2" "$3" >/dev/null ||
		fail "ordfs-corrupt $2"
	"$DAEMON" "$1" "$MNT" || fail "mount the image damaged by $2"
	rc=0
	"$CTL" scrub "$MNT" >"$WORK/out" 2>&1 || rc=$?
	cat "$WORK/out"
}

# every file under MNT reads to its end
all_readable() {
	find "$MNT" -type f -print0 | xargs -0 -r cat >/dev/null
}

# ---- a cross-linked block --------------------------------------------------
IMG=$WORK/dup.img
scrub_damaged "$IMG" extent-dup 1
check "cross-link: scrub exits 4 (problems found)" [ "$rc" = 4 ]
check "cross-link: it names the block and both inodes" \
	grep -Eq "block-claimed-twice: block [0-9]+ is mapped by inodes [0-9]+ and [0-9]+" "$WORK/out"
check "cross-link: the files still read" all_readable
unmount "$IMG"
rc=0
"$FSCK" -fn "$IMG" >"$WORK/fsck" 2>&1 || rc=$?
check "cross-link: the error is recorded for fsck (-fn exits 4)" [ "$rc" = 4 ]
check "cross-link: fsck says the filesystem recorded an error" \
	grep -q "recorded an error" "$WORK/fsck"
rc=0
"$FSCK" -fy "$IMG" >/dev/null 2>&1 || rc=$?
check "cross-link: fsck -fy repairs (exit 1)" [ "$rc" = 1 ]
"$DAEMON" "$IMG" "$MNT" || fail "mount after the repair"
check "cross-link: after fsck the scrub is clean" "$CTL" scrub "$MNT"
unmount "$IMG"

# ---- a mapped block the bitmap says is free --------------------------------
IMG=$WORK/free.img
scrub_damaged "$IMG" bitmap-free 3
check "bitmap-free: scrub exits 4" [ "$rc" = 4 ]
check "bitmap-free: it names the inode and the block" \
	grep -Eq "block-bitmap: inode [0-9]+ maps .* block [0-9]+, which the block bitmap says is free" \
	"$WORK/out"
unmount "$IMG"

# ---- a clean image under load: no false alarm ------------------------------
IMG=$WORK/busy.img
"$MKFS" -q "$IMG" 256M || fail "mkfs"
"$DAEMON" "$IMG" "$MNT" || fail "mount"
writer() { # writer N: churns its own directory until killed
	local d=$MNT/w$1 i=0
	mkdir -p "$d"
	while :; do
		i=$((i + 1))
		head -c $(((i * 7919) % 300000 + 1)) /dev/urandom >"$d/f$((i % 40))" 2>/dev/null
		truncate -s $(((i * 104729) % 200000)) "$d/f$(((i + 7) % 40))" 2>/dev/null
		mv "$d/f$(((i + 3) % 40))" "$d/g$((i % 13))" 2>/dev/null
		rm -f "$d/g$(((i + 5) % 13))"
		mkdir -p "$d/sub$((i % 5))/x" && rmdir "$d/sub$(((i + 2) % 5))/x" 2>/dev/null
		setfattr -n user.k -v "$i$i$i" "$d/f$((i % 40))" 2>/dev/null
		ln -f "$d/f$((i % 40))" "$d/h$((i % 3))" 2>/dev/null
	done
}
for n in 1 2 3; do
	writer "$n" &
	WRITERS+=($!)
done
sleep 1
busy=${ORDFS_SCRUB_BUSY:-40}
clean=0
for i in $(seq "$busy"); do
	rc=0
	"$CTL" scrub "$MNT" >"$WORK/out" 2>&1 || rc=$?
	if [ "$rc" = 0 ]; then
		clean=$((clean + 1))
	else
		cat "$WORK/out"
	fi
done
tail -n 1 "$WORK/out"
for p in "${WRITERS[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
WRITERS=()
check "busy: all $busy scrubs beside three writers are clean" [ "$clean" = "$busy" ]
check "busy: the scrubs saw the writers' inodes" grep -Eq "scrubbed ([4-9][0-9]|[0-9]{3,}) inodes" "$WORK/out"
if id nobody >/dev/null 2>&1; then
	rc=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTL" scrub "$MNT" >"$WORK/out" 2>&1 || rc=$?
	check "another user may not scrub root's mount (exit 1)" [ "$rc" = 1 ]
fi
unmount "$IMG"
check "busy: fsck -fn is clean afterwards (no error recorded)" "$FSCK" -fn "$IMG"

summary
