#!/bin/bash
# test_groups.sh - fsck.ordfs and dump.ordfs on an image with block-bitmap
# groups past the block bitmap area (INCOMPAT_GROUP_BITMAPS, FORMAT.md),
# made by hand with make_groups until resize.ordfs makes such images.
#
# Usage: test_groups.sh MKFS FSCK DUMP CORRUPT MAKE_GROUPS
#   A 4 MiB image of 1 KiB blocks (8000 blocks a group, one bitmap block
#   in its area) grown to 24500 blocks: groups 1..3 past the area, their
#   bitmap blocks at 8000, 16000 and 24000.  fsck.ordfs checks it clean
#   (empty and populated), dump.ordfs shows the feature, the groups and
#   their bitmap blocks and counts what fsck.ordfs counts; a group bitmap
#   block damaged by ordfs-corrupt is found by both, repaired by
#   fsck.ordfs -fy, and the image is clean again.
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MKFS=$(readlink -f "${1:?usage: test_groups.sh MKFS FSCK DUMP CORRUPT MAKE_GROUPS}")
FSCK=$(readlink -f "${2:?}")
DUMP=$(readlink -f "${3:?}")
CORRUPT=$(readlink -f "${4:?}")
MAKE_GROUPS=$(readlink -f "${5:?}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-groups.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

UUID=6f726466-7300-4000-8000-000000000002
BLOCKS=24500

status_of() { local rc=0; "$@" >out.txt 2>err.txt || rc=$?; echo "$rc"; }
field() { sed -n "s/^$1: *//p"; }
fsck_clean() { "$FSCK" -fn "$1" >/dev/null 2>&1; }

# dump.ordfs's counts against fsck.ordfs's summary line.
counts_agree() {
	local summary inodes blocks
	summary=$("$FSCK" -fn "$1" 2>/dev/null | tail -n 1)
	inodes=$(sed -n 's/^[^:]*: \([0-9]*\) inodes.*/\1/p' <<<"$summary")
	blocks=$(sed -n 's/.*, \([0-9]*\) blocks in use.*/\1/p' <<<"$summary")
	"$DUMP" "$1" >dump.txt 2>/dev/null || return 1
	[ -n "$inodes" ] && [ -n "$blocks" ] &&
		[ "$(field "Inodes in use" <dump.txt | cut -d' ' -f1)" = "$inodes" ] &&
		[ "$(field "Blocks in use" <dump.txt | cut -d' ' -f1)" = "$blocks" ]
}

"$MKFS" -q -b 1024 -U "$UUID" img 4M
truncate -s $((BLOCKS * 1024)) img
check "make_groups: exit 0" test "$(status_of "$MAKE_GROUPS" img $BLOCKS)" -eq 0

# ---- the empty grouped image -------------------------------------------------

check "fsck.ordfs -fn: clean (exit 0)" test "$(status_of "$FSCK" -fn img)" -eq 0
check "fsck.ordfs -fn: 0 problems" grep -q ", 0 problems$" out.txt
check "dump.ordfs: exit 0" test "$(status_of "$DUMP" img)" -eq 0
cp out.txt dump.txt
check "dump.ordfs: the feature" test "$(field "Filesystem features" <dump.txt)" = group_bitmaps
check "dump.ordfs: the block count" grep -q "^Block count: *$BLOCKS " dump.txt
check "dump.ordfs: the groups" \
	test "$(field "Block groups" <dump.txt)" = "4 (3 with their bitmap block in their first block)"
check "dump.ordfs: the group bitmap blocks in the area table" \
	grep -q "^  group bitmaps  *3  blocks 8000\.\.24000, every 8000th$" dump.txt
check "dump.ordfs: the data area less the group bitmaps" \
	grep -Eq "^  data  *[0-9]+  blocks [0-9]+\.\.$((BLOCKS - 2)) but the group bitmaps$" dump.txt
check "dump.ordfs: the group bitmaps are not data in use" \
	test "$(field "Data blocks used" <dump.txt)" = 1 # lost+found's block
check "dump.ordfs: free counts agree with the bitmaps" \
	test "$(field "Superblock free counts" <dump.txt)" = "agree with the bitmaps"
check "dump.ordfs: counts agree with fsck.ordfs (empty)" counts_agree img
check "dump.ordfs -h: the groups" bash -c "'$DUMP' -h img | grep -q '^Block groups: '"

# ---- populated ----------------------------------------------------------------

check "ordfs-corrupt populate: exit 0" test "$(status_of "$CORRUPT" populate img)" -eq 0
check "fsck.ordfs -fn: populated, clean" fsck_clean img
check "dump.ordfs: counts agree with fsck.ordfs (populated)" counts_agree img
cp img base.img

# ---- a damaged group bitmap block ---------------------------------------------

# bitmap-bits picks among the two areas and the group bitmap blocks: find
# a seed that picks one of the groups'.
seed=
for s in $(seq 1 40); do
	cp base.img img
	what=$("$CORRUPT" img bitmap-bits "$s")
	case $what in *"block 8000" | *"block 16000" | *"block 24000") seed=$s; break ;; esac
done
check "ordfs-corrupt bitmap-bits reaches a group bitmap block" test -n "$seed"
block=${what##* }
check "fsck.ordfs -fn: finds it (exit 4)" test "$(status_of "$FSCK" -fn img)" -eq 4
check "fsck.ordfs -fn: a bitmap block fails its checksum" \
	grep -q "1 bitmap blocks fail their checksum" out.txt
check "dump.ordfs: finds it (exit 1)" test "$(status_of "$DUMP" img)" -eq 1
check "dump.ordfs: names the block" \
	grep -q "1 block bitmap block failed verification, the first at block $block;" out.txt
check "fsck.ordfs -fy: repairs (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
check "fsck.ordfs -fn: clean after the repair" fsck_clean img
check "the group bitmap block is as it was" \
	cmp -s <(dd if=img bs=1024 skip="$block" count=1 2>/dev/null) \
	<(dd if=base.img bs=1024 skip="$block" count=1 2>/dev/null)
check "dump.ordfs: counts agree with fsck.ordfs (repaired)" counts_agree img

summary
