#!/bin/bash
# test_nbd_resize.sh - resize.ordfs on an NBD export: nbdkit's file plugin
# serves an image file that the test extends (truncate) after mkfs and a
# mount; resize.ordfs on the URI grows the filesystem to the export's new
# size, fsck.ordfs -f passes, the daemon mounts it and more than the old
# size is written and read back; a mounted export is refused (the owner
# record: no flock reaches NBD), leaving the image unchanged.
#
# Usage: test_nbd_resize.sh BUILD_DIR
#   Skips (exit 77) without nbdkit or /dev/fuse.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file
need_fuse
RESIZE=$BUILD/tools/resize.ordfs
[ -x "$RESIZE" ] || { echo "FAIL  $RESIZE is not built"; exit 1; }

IMG=$WORK/export.img
MNT=$WORK/mnt
truncate -s 64M "$IMG"
require "nbdkit file plugin starts" nbd_start f file "$IMG"
URI=$(nbd_uri f)

block_count() { "$TUNE" -l "$URI" | sed -n 's/^Block count: *\([0-9]*\).*/\1/p'; }

check "mkfs.ordfs on the URI exits 0" "$MKFS" -q "$URI"
OLD=$(block_count)
require "the daemon mounts the URI" mount_nbd "$URI" "$MNT"
head -c $((5 << 20)) /dev/urandom >"$WORK/keep"
check "a file written and fsync'd" wsync "$WORK/keep" "$MNT/keep"

# the mounted export is refused (before it grows: the owner record is at
# the export's end, see DESIGN.md "Growing a filesystem", NBD)
before=$(head -c $(((64 << 20) - 512)) "$IMG" | sha256sum)
out=$("$RESIZE" "$URI" 2>&1)
rc=$?
check "resize.ordfs of the mounted export exits 1 ($out)" [ $rc -eq 1 ]
check "... with one line" [ "$(wc -l <<<"$out")" -eq 1 ]
check "... saying it is in use" grep -q "in use" <<<"$out"
check "... the image unchanged but for the owner record" \
	[ "$(head -c $(((64 << 20) - 512)) "$IMG" | sha256sum)" = "$before" ]
# the file grows while mounted, then the daemon unmounts
truncate -s 120M "$IMG"
require "the daemon unmounts" umount_nbd "$URI" "$MNT"
check "... and the filesystem kept its size ($OLD blocks)" [ "$(block_count)" = "$OLD" ]

check "resize.ordfs on the URI exits 0" "$RESIZE" "$URI"
NEW=$(block_count)
check "the filesystem fills the extended export but its last 512 bytes ($NEW blocks)" [ "$NEW" = $((((120 << 20) - 512) / 4096)) ]
check "fsck.ordfs -f on the grown export exits 0" "$FSCK" -f "$URI"

require "the daemon mounts the grown export" mount_nbd "$URI" "$MNT"
check "df shows the new size" [ "$(stat -f -c '%b' "$MNT")" = "$NEW" ]
head -c $((90 << 20)) /dev/urandom >"$WORK/big"
check "90 MiB (more than the old 64 MiB filesystem) written and fsync'd" wsync "$WORK/big" "$MNT/big"
check "both files read back the same" cmp -s "$WORK/big" "$MNT/big"
check "... and the first" cmp -s "$WORK/keep" "$MNT/keep"
require "the daemon unmounts" umount_nbd "$URI" "$MNT"
check "fsck.ordfs -f after the writes exits 0" "$FSCK" -f "$URI"
nbd_stop f
summary
