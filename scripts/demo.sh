#!/bin/bash
# demo.sh - the main job: install what is missing, build, make an ordfs
# image, mount it with the daemon, use it, unmount, check it with fsck,
# mount it again and show that everything is still there.
#
# Usage: scripts/demo.sh [IMAGE [SIZE]]
#   IMAGE defaults to build-demo/demo.img, SIZE to 256M.  An existing IMAGE
#   is replaced.  Needs /dev/fuse (it stops after mkfs + fsck without it).
#   The programs are built as users get them (no tests, and no test hooks
#   in the daemon: -Dtest_hooks=false) in their own directory, BUILD_DIR
#   (default build-demo), so the test build in build/ is left alone.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-demo}
image=${1:-$BUILD_DIR/demo.img}
size=${2:-256M}

bash scripts/install-deps.sh
bash scripts/build.sh "$BUILD_DIR" -Dtests=disabled -Dtest_hooks=false
ordfs=$BUILD_DIR/src/ordfs
mkfs=$BUILD_DIR/tools/mkfs.ordfs
fsck=$BUILD_DIR/tools/fsck.ordfs

echo
echo "=== mkfs.ordfs $image $size"
rm -f "$image"
"$mkfs" -L demo "$image" "$size"

if [ ! -c /dev/fuse ]; then
	echo "=== /dev/fuse is missing: cannot mount; checking the new image instead"
	"$fsck" -f "$image"
	exit 0
fi

mnt=$(mktemp -d /tmp/ordfs-demo.XXXXXX)
cleanup() { fusermount3 -u "$mnt" 2>/dev/null || true; rmdir "$mnt" 2>/dev/null || true; }
trap cleanup EXIT

echo
echo "=== ordfs $image $mnt   (backgrounds itself once the mount is live)"
"$ordfs" "$image" "$mnt"
grep " $mnt " /proc/mounts

echo
echo "=== write some files, fsync one, rename one"
mkdir "$mnt/docs"
echo "hello from ordfs" > "$mnt/docs/hello.txt"
head -c 3000000 /dev/urandom > "$mnt/random.bin"
sha256sum "$mnt/random.bin" | tee /tmp/ordfs-demo.sum
sync "$mnt/random.bin"   # fsync(2) of that one file (coreutils)
mv "$mnt/docs/hello.txt" "$mnt/docs/greeting.txt"
ls -lR "$mnt"
df -h "$mnt"

echo
echo "=== fusermount3 -u: the daemon commits, checkpoints and marks the image clean"
fusermount3 -u "$mnt"
# The kernel does not wait for a FUSE daemon at unmount; the daemon holds a
# lock on the image until the image is clean, so wait for the lock.
flock -w 30 "$image" true

echo
echo "=== fsck.ordfs -f $image"
"$fsck" -f "$image"

echo
echo "=== mount again: everything is still there"
"$ordfs" "$image" "$mnt"
cat "$mnt/docs/greeting.txt"
sha256sum -c /tmp/ordfs-demo.sum
fusermount3 -u "$mnt"
