#!/bin/bash
# test_fsck.sh - fsck.ordfs from the command line, on images made by
# mkfs.ordfs (no mount needed).
#
# Usage: test_fsck.sh MKFS FSCK CORRUPT
#
# Checks: a clean image is summarized without -f and checked with it; a
# damaged primary superblock is exit 8 with a hint naming the backup;
# -n -b checks through the backup without changing a byte; -b restores the
# primary (exit 1) and a second -fn run exits 0; a wrong -b block is
# refused; -C FD writes progress lines, -C 0 draws a bar; damage made by
# ordfs-corrupt is repaired by -fy (exit 1) and a second -fn exits 0,
# while -p refuses what would lose names (exit 4); usage errors exit 16
# with one line (-n with -y or -p among them); a directory or /dev/null is
# one line naming it, exit 8; a primary superblock claiming more blocks
# than the image has gets the backup hint too, and -b works.
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MKFS=$(readlink -f "${1:?usage: test_fsck.sh MKFS FSCK}")
FSCK=$(readlink -f "${2:?}")
CORRUPT=$(readlink -f "${3:?}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-fsck.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

status_of() { local rc=0; "$@" >out.txt 2>err.txt || rc=$?; echo "$rc"; }
digest() { sha256sum "$1" | cut -d' ' -f1; }

"$MKFS" -q img 64M
check "clean image without -f: exit 0" test "$(status_of "$FSCK" img)" -eq 0
check "clean image without -f: summarized, not checked" grep -q "clean," out.txt
check "clean image with -f: exit 0" test "$(status_of "$FSCK" -f img)" -eq 0
check "clean image with -f: checked" grep -q "0 problems" out.txt
check "clean image with -fn: exit 0" test "$(status_of "$FSCK" -fn img)" -eq 0

backup=$("$MKFS" -n plan.img 64M | awk '/Backup superblock/ { print $4 }')
check "mkfs.ordfs names the backup superblock" test -n "$backup"
dd if=/dev/zero of=img bs=1024 count=1 conv=notrunc status=none
check "bad primary superblock: exit 8" test "$(status_of "$FSCK" -f img)" -eq 8
check "bad primary superblock: the hint names -b $backup" grep -q -- "-b $backup" err.txt
before=$(digest img)
check "-n -b $backup: exit 0" test "$(status_of "$FSCK" -fn -b "$backup" img)" -eq 0
check "-n -b: the image is unchanged" test "$(digest img)" = "$before"
check "-b 5 (no superblock there): exit 8" test "$(status_of "$FSCK" -f -b 5 img)" -eq 8
check "-b $backup: restored, exit 1" test "$(status_of "$FSCK" -y -b "$backup" img)" -eq 1
check "-b: says it restored the primary" grep -q "restored" out.txt
check "after -b, -fn: exit 0 (run-twice rule)" test "$(status_of "$FSCK" -fn img)" -eq 0

check "-C 3: exit 0" test "$(status_of "$FSCK" -f -C 3 img 3>progress.txt)" -eq 0
check "-C 3: a line per pass start and end" test "$(grep -c " img$" progress.txt)" -ge 10
check "-C 3: pass 5 ends" grep -q "^5 1 1 img$" progress.txt
check "-C 0: exit 0" test "$(status_of "$FSCK" -f -C 0 img)" -eq 0
check "-C 0: draws a bar" grep -q "pass 5/5" err.txt

for kind in bitmap-bits bitmap-free inode-links dir-zero any-metadata; do
	for seed in 1 2 3; do
		"$MKFS" -q -F img 64M
		"$CORRUPT" img "$kind" "$seed" >/dev/null 2>&1 || continue
		check "$kind $seed: -fy repairs (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
		check "$kind $seed: a second -fn is clean" test "$(status_of "$FSCK" -fn img)" -eq 0
	done
done
"$MKFS" -q -F img 64M
"$CORRUPT" img dir-zero 1 >/dev/null
check "-p on a zeroed directory block: exit 4" test "$(status_of "$FSCK" -fp img)" -eq 4
check "-p says to run -y" grep -q "run fsck.ordfs -y" out.txt
check "then -fy: exit 1" test "$(status_of "$FSCK" -fy img)" -eq 1
check "then -fn: exit 0" test "$(status_of "$FSCK" -fn img)" -eq 0

# SIGINT: exit 32.  The progress lines go to a FIFO nobody reads (this
# shell holds it open read-write, so opening does not block); with enough
# of them (1.5M inodes, a long path) fsck blocks on it, so the signal
# always finds it running.
long="$WORK/$(printf 'p%.0s' $(seq 1 180))"
mkdir -p "$long"
"$MKFS" -q -N 1500000 "$long/big.img" 24G
mkfifo progress.fifo
exec 4<>progress.fifo
rc=0
"$FSCK" -f -C 3 "$long/big.img" 3>&4 >/dev/null 2>err.txt &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid" || rc=$?
exec 4>&-
check "SIGINT: exit 32" test "$rc" -eq 32
check "SIGINT: says cancelled" grep -q "cancelled" err.txt
rm -rf "$long"

"$MKFS" -q -F img 64M
check "-fv: exit 0" test "$(status_of "$FSCK" -fv img)" -eq 0
check "-fv: names the five passes" test "$(grep -c ': pass [1-5]: ' out.txt)" -eq 5

check "unknown flag: exit 16" test "$(status_of "$FSCK" -Z img)" -eq 16
check "unknown flag: one line" test "$(wc -l <err.txt)" -eq 1
check "-b without a number: exit 16" test "$(status_of "$FSCK" -b)" -eq 16
check "missing image file: exit 8" test "$(status_of "$FSCK" -f nonexistent)" -eq 8

# -n with -y or -p: refused as e2fsck refuses it (usage error, one line).
for pair in "-fn -fy" "-fny" "-n -p" "-y -p"; do
	check "$pair: exit 16" test "$(status_of "$FSCK" $pair img)" -eq 16
	check "$pair: one line" test "$(wc -l <err.txt)" -eq 1
	check "$pair: says which options clash" grep -q "only one of -n, -y and -p" err.txt
done
# Not an image: a directory, a character device; one line naming the path
# and what it is, exit 8.
mkdir adir
check "a directory: exit 8" test "$(status_of "$FSCK" -fn adir)" -eq 8
check "a directory: one line" test "$(wc -l <err.txt)" -eq 1
check "a directory: says so" grep -q "adir: is a directory, not an ordfs image" err.txt
check "/dev/null: exit 8" test "$(status_of "$FSCK" -fn /dev/null)" -eq 8
check "/dev/null: one line" test "$(wc -l <err.txt)" -eq 1
check "/dev/null: says so" grep -q "/dev/null: is a character device, not an ordfs image" err.txt

# A primary superblock that verifies but claims more blocks than the image
# has (super-csum 19 on a populated 32M image: block_count): the hint
# names the backup, found from the image's size, and -b restores it.
rm -f img
"$MKFS" -q -U 6f726466-7300-4000-8000-000000000001 img 32M
"$CORRUPT" populate img
"$CORRUPT" img super-csum 19 >/dev/null
check "primary larger than the image: exit 8" test "$(status_of "$FSCK" -fy img)" -eq 8
check "primary larger than the image: says so" grep -q "smaller than the filesystem" err.txt
check "primary larger than the image: the hint names -b 8191" \
	grep -qx "fsck.ordfs: a valid backup superblock is at block 8191: try fsck.ordfs -b 8191 img" err.txt
check "-b 8191: restored, exit 1" test "$(status_of "$FSCK" -fy -b 8191 img)" -eq 1
check "after -b 8191, -fn: exit 0" test "$(status_of "$FSCK" -fn img)" -eq 0

# A reserved superblock byte not zero (checksum valid): refused as
# FORMAT.md says, the hint names the backup, -b restores it.
rm -f img
"$MKFS" -q -U 6f726466-7300-4000-8000-000000000001 img 32M
"$CORRUPT" img super-reserved 1 >/dev/null
check "reserved superblock byte: exit 8" test "$(status_of "$FSCK" -fn img)" -eq 8
check "reserved superblock byte: says so" grep -q "reserved superblock bytes not zero" err.txt
check "reserved superblock byte: the hint names -b 8191" grep -q -- "-b 8191 img" err.txt
check "reserved superblock byte: -b 8191 restores, exit 1" test "$(status_of "$FSCK" -fy -b 8191 img)" -eq 1
check "reserved superblock byte: then -fn exit 0" test "$(status_of "$FSCK" -fn img)" -eq 0

# A long symlink whose size runs past the blocks it maps (1 KiB blocks):
# readlink meets a hole (EUCLEAN); fsck must see it too, and clear it.
rm -rf tree img && mkdir tree
ln -s "$(printf 'x%.0s' $(seq 1 300))" tree/slow
echo hi >tree/file
"$MKFS" -q -b 1024 -d tree img 16M
"$CORRUPT" img symlink-hole 1 >/dev/null
check "symlink past its blocks: -fn finds it (exit 4)" test "$(status_of "$FSCK" -fn img)" -eq 4
check "symlink past its blocks: named" grep -q "(symlink): inode 5: symlink target block 1 not mapped" out.txt
check "symlink past its blocks: -fy repairs (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
check "symlink past its blocks: then -fn exit 0" test "$(status_of "$FSCK" -fn img)" -eq 0

summary
