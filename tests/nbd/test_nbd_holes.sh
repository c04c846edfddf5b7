#!/bin/bash
# test_nbd_holes.sh - fsck.ordfs over NBD skips what the server reports as
# holes.  mkfs leaves a big image's inode table as zeros made the device's
# way (NBD WRITE_ZEROES: holes in the file behind nbdkit), and the NBD
# backend asks the server where data is (NBD_CMD_BLOCK_STATUS,
# base:allocation), so fsck -f of a fresh 16 GiB export reads a few MiB
# instead of its 256 MiB inode table.  The same check against the same
# image with nbdkit's noextents filter (a server that does not say) reads
# the whole table, a run of up to 256 blocks per request (pass 1 reads
# ahead), and both checks find the image clean.  What was read is counted
# by nbdkit's stats filter.
#
# Usage: test_nbd_holes.sh BUILD_DIR
#   Skips (exit 77) without nbdkit or its stats and noextents filters.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file --filter=stats --filter=noextents

IMG=$WORK/big.img
truncate -s 16G "$IMG"
require "nbdkit serves the sparse 16 GiB image" nbd_start mk file "$IMG"
require "mkfs.ordfs on the export exits 0" "$MKFS" -q "$(nbd_uri mk)"
nbd_stop mk

# read_bytes STATSFILE: the bytes the server read, from the stats filter's
# "read: N ops, T s, SIZE UNIT, ..." line (0 if there were no reads); SIZE
# has two decimals.
read_bytes() {
	awk '/^read:/ {
		n = $6; u = $7; sub(/,$/, "", u)
		m = 1
		if (u == "KiB") m = 1024
		if (u == "MiB") m = 1048576
		if (u == "GiB") m = 1073741824
		printf "%d\n", n * m; found = 1
	}
	END { if (!found) print 0 }' "$1"
}

# read_ops STATSFILE: the number of read requests.
read_ops() { awk '/^read:/ { print $2; found = 1 } END { if (!found) print 0 }' "$1"; }

# fsck_counting NAME FILTERS...: fsck -f over a server with FILTERS under
# the stats filter; sets RC, READ (bytes) and OPS (read requests).
fsck_counting() {
	local name=$1
	shift
	require "$name: nbdkit starts" \
		nbd_start "$name" --filter=stats "$@" file "$IMG" statsfile="$WORK/$name.stats"
	"$FSCK" -f "$(nbd_uri "$name")" >"$WORK/$name.fsck" 2>&1
	RC=$?
	nbd_stop "$name" # the stats file is written at exit
	READ=$(read_bytes "$WORK/$name.stats")
	OPS=$(read_ops "$WORK/$name.stats")
}

fsck_counting extents
check "fsck -f over a server that reports holes exits 0 (rc $RC)" [ "$RC" -eq 0 ]
check "it read less than 16 MiB of the 16 GiB export ($READ bytes)" [ "$READ" -lt $((16 << 20)) ]
EXTENTS_READ=$READ

fsck_counting noextents --filter=noextents
check "fsck -f over a server that does not report holes exits 0 (rc $RC)" [ "$RC" -eq 0 ]
check "it read the whole 256 MiB inode table: at least 250 MiB ($READ bytes)" \
	[ "$READ" -ge $((250 << 20)) ]
check "it read ahead: fewer than 2048 requests for its 65536 blocks ($OPS)" [ "$OPS" -lt 2048 ]
check "holes saved at least 90% of the reads ($EXTENTS_READ vs $READ bytes)" \
	[ $((EXTENTS_READ * 10)) -lt "$READ" ]

summary
