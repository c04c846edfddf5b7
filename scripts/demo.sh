#!/bin/bash
# demo.sh - the main job: install what is missing, build, and make an ordfs
# image with mkfs.ordfs, showing its geometry.
#
# Usage: scripts/demo.sh [IMAGE [SIZE]]
#   IMAGE defaults to build/demo.img, SIZE to 256M.  An existing IMAGE is
#   replaced.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
image=${1:-$BUILD_DIR/demo.img}
size=${2:-256M}

bash scripts/install-deps.sh
bash scripts/build.sh "$BUILD_DIR"

echo
echo "=== mkfs.ordfs $image $size"
rm -f "$image"
"$BUILD_DIR/tools/mkfs.ordfs" -L demo "$image" "$size"

echo
echo "=== the image on the host"
ls -ls "$image"
echo "(first column: KiB the host really allocated; the data area stays sparse)"
echo
echo "=== superblock, first 64 bytes"
od -A d -t x1 -N 64 "$image"
