#!/bin/bash
# test_nbd_resize.sh - resize.ordfs on an NBD export: nbdkit's file plugin
# serves an image file that the test extends (truncate).  Mounted: the
# daemon grows online (it reconnects at the new size, the owner record
# moves to the new end and keeps beating), more than the old size is
# written, kill -9, fsck -f clean at the new size, data intact.
# Unmounted: extended again, grown offline, fsck.ordfs -f passes, more
# written and read back.
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

# online: the export grows under the mounted filesystem, resize.ordfs on
# the URI asks the daemon, which reconnects at the new size and moves the
# owner record to the export's new end
truncate -s 120M "$IMG"
out=$("$RESIZE" "$URI" 2>&1)
rc=$?
check "resize.ordfs of the mounted export exits 0 ($out)" [ $rc -eq 0 ]
check "... and says it grew online" grep -q "online" <<<"$out"
MID=$((((120 << 20) - 512) / 4096))
check "df shows the new size: the export but its last 512 bytes ($MID blocks)" \
	[ "$(stat -f -c '%b' "$MNT")" = "$MID" ]
head -c $((90 << 20)) /dev/urandom >"$WORK/big"
check "90 MiB (more than the old 64 MiB filesystem) written and fsync'd" wsync "$WORK/big" "$MNT/big"
check "it reads back the same" cmp -s "$WORK/big" "$MNT/big"
sleep 2.5 # two heartbeats of the owner record at its new place
check "the daemon still runs (its owner record was not lost)" is_mounted "$MNT"
check "... and writes" wsync "$WORK/keep" "$MNT/keep2"
check "the owner record is at the export's new end, held" \
	grep -q "in use" <<<"$("$RESIZE" "$URI" 2>&1; "$FSCK" -n "$URI" 2>&1)"

# kill -9 after the online grow: fsck clean at the new size, data intact
DPID=$(daemon_pid "$URI")
kill -9 "$DPID"
check "the daemon is gone after kill -9" wait_gone "$DPID" 10
check "fusermount3 -u of the dead mount" fusermount_u "$MNT"
"$FSCK" -fy "$URI" >"$WORK/fsck.out" 2>&1
rc=$?
check "fsck.ordfs -fy after the kill exits 0 or 1 (exit $rc)" [ $rc -le 1 ]
check "fsck.ordfs -f again exits 0" "$FSCK" -f "$URI"
check "... at the new size" [ "$(block_count)" = "$MID" ]
require "the daemon mounts it again" mount_nbd "$URI" "$MNT"
check "the 90 MiB file is intact" cmp -s "$WORK/big" "$MNT/big"
check "... and the first" cmp -s "$WORK/keep" "$MNT/keep"
require "the daemon unmounts" umount_nbd "$URI" "$MNT"

# offline: the export grows again while unmounted
truncate -s 180M "$IMG"
check "resize.ordfs on the unmounted URI exits 0" "$RESIZE" "$URI"
NEW=$(block_count)
check "the filesystem fills the extended export but its last 512 bytes ($NEW blocks)" [ "$NEW" = $((((180 << 20) - 512) / 4096)) ]
check "fsck.ordfs -f on the grown export exits 0" "$FSCK" -f "$URI"

require "the daemon mounts the grown export" mount_nbd "$URI" "$MNT"
check "df shows the new size" [ "$(stat -f -c '%b' "$MNT")" = "$NEW" ]
head -c $((60 << 20)) /dev/urandom >"$WORK/more"
check "60 MiB more (past the online size) written and fsync'd" wsync "$WORK/more" "$MNT/more"
check "every file reads back the same" cmp -s "$WORK/more" "$MNT/more"
check "... the big one" cmp -s "$WORK/big" "$MNT/big"
check "... and the first" cmp -s "$WORK/keep" "$MNT/keep"
require "the daemon unmounts" umount_nbd "$URI" "$MNT"
check "fsck.ordfs -f after the writes exits 0" "$FSCK" -f "$URI"
nbd_stop f
summary
