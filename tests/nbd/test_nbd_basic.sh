#!/bin/bash
# test_nbd_basic.sh - ordfs on an NBD export, end to end: mkfs.ordfs takes
# the size from the server, the daemon mounts the URI, files written and
# fsync'd are read back, unmount leaves the export clean (fsck -f exits
# 0), a second mount finds the same bytes; dump.ordfs and tune.ordfs (-l,
# -L) work on the URI.  Twice: nbdkit's file plugin serving an image file
# (whose bytes are then checked directly too) and its memory plugin.
#
# Usage: test_nbd_basic.sh BUILD_DIR
#   Skips (exit 77) without nbdkit; the mounted half is skipped without
#   /dev/fuse.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file memory
HAVE_FUSE=1
[ -c /dev/fuse ] && [ -r /dev/fuse ] && command -v fusermount3 >/dev/null || HAVE_FUSE=0

SIZE_MB=96
SIZE=$((SIZE_MB << 20))
MNT=$WORK/mnt

# Source files of several sizes (a block, unaligned, several MiB).
mkdir "$WORK/src" "$WORK/src/dir"
head -c 4096 /dev/urandom >"$WORK/src/one_block"
head -c 100001 /dev/urandom >"$WORK/src/odd_size"
head -c $((3 << 20)) /dev/urandom >"$WORK/src/three_mib"
for i in 1 2 3 4 5; do echo "small file $i" >"$WORK/src/dir/s$i"; done
EXPECT=$(sums "$WORK/src")

run_backend() { # run_backend NAME: the server NAME is running
	local name=$1 uri
	uri=$(nbd_uri "$name")
	echo "=== $name plugin: $uri"

	check "$name: mkfs.ordfs on the URI (size from the server) exits 0" \
		"$MKFS" -q -L "nbd-$name" "$uri"
	local listing bc bs
	listing=$("$TUNE" -l "$uri")
	check "$name: tune.ordfs -l on the URI exits 0" [ $? -eq 0 ]
	bc=$(sed -n 's/^Block count: *\([0-9]*\).*/\1/p' <<<"$listing")
	bs=$(sed -n 's/^Block size: *\([0-9]*\).*/\1/p' <<<"$listing")
	check "$name: the filesystem fills the export but for at most 2 blocks ($bc x $bs of $SIZE)" \
		test -n "$bc" -a $((bc * bs)) -le $SIZE -a $((bc * bs)) -ge $((SIZE - 2 * bs))
	check "$name: tune.ordfs -l shows the label mkfs set" grep -q "^Filesystem volume name: *nbd-$name\$" <<<"$listing"
	check "$name: fsck.ordfs -f on the fresh export exits 0" "$FSCK" -f "$uri"

	if [ "$HAVE_FUSE" = 1 ]; then
		require "$name: the daemon mounts the URI (exit 0)" mount_nbd "$uri" "$MNT"
		check "$name: /proc/mounts has it as fuse.ordfs with the URI as source" \
			grep -qF "$uri $MNT fuse.ordfs " /proc/mounts
		local f ok=1
		mkdir "$MNT/dir"
		for f in one_block odd_size three_mib dir/s1 dir/s2 dir/s3 dir/s4 dir/s5; do
			wsync "$WORK/src/$f" "$MNT/$f" || ok=0
		done
		check "$name: write + fsync of 8 files all return 0" [ $ok = 1 ]
		check "$name: read back through the mount: the same bytes" [ "$(sums "$MNT")" = "$EXPECT" ]
		local stats
		stats=$("$CTL" stats "$MNT")
		check "$name: ordfsctl stats on the mount exits 0" [ $? -eq 0 ]
		check "$name: stats: flushes happened, none failed" \
			grep -Eq '^ *flushes: *[1-9][0-9]* .*, 0 failed flushes, 0 failed writes' <<<"$stats"
		check "$name: stats: flush state ok" grep -Eq '^ *flush state: *ok' <<<"$stats"
		check "$name: dump.ordfs on the URI of the mounted export exits 0" \
			bash -c "'$DUMP' -h '$uri' >'$WORK/dump.out' 2>'$WORK/dump.err'"
		check "$name: and warns that the export is in use" \
			grep -q "in use by a running ordfs daemon" "$WORK/dump.err"
		check "$name: unmount; the daemon exits" umount_nbd "$uri" "$MNT"
		check "$name: the mount is gone" not_mounted "$MNT"
		check "$name: fsck.ordfs -f after the unmount exits 0 (clean)" "$FSCK" -f "$uri"
	else
		skip_part "$name: the mounted checks: /dev/fuse is missing"
	fi

	local dump
	dump=$("$DUMP" "$uri")
	check "$name: dump.ordfs on the URI exits 0" [ $? -eq 0 ]
	check "$name: dump: the journal is empty, no replay" grep -q '^Journal needs replay: *no' <<<"$dump"
	check "$name: dump: the free counts agree with the bitmaps" \
		grep -q '^Superblock free counts: *agree with the bitmaps' <<<"$dump"
	check "$name: dump: state clean" grep -q '^Filesystem state: *clean' <<<"$dump"
	check "$name: tune.ordfs -L (a write over NBD) exits 0" "$TUNE" -L "relabelled-$name" "$uri"
	check "$name: tune.ordfs -l shows the new label" \
		bash -c "'$TUNE' -l '$uri' | grep -q '^Filesystem volume name: *relabelled-$name\$'"
	check "$name: fsck.ordfs -f after tune exits 0" "$FSCK" -f "$uri"

	if [ "$HAVE_FUSE" = 1 ]; then
		require "$name: mount again" mount_nbd "$uri" "$MNT"
		check "$name: after the remount: every file has its checksum" [ "$(sums "$MNT")" = "$EXPECT" ]
		require "$name: unmount again" umount_nbd "$uri" "$MNT"
		check "$name: fsck.ordfs -f after the second unmount exits 0" "$FSCK" -f "$uri"
	fi
}

# --- the file plugin: the export is an image file ---------------------------------
truncate -s $SIZE "$WORK/file.img"
require "nbdkit file plugin starts" nbd_start file file "$WORK/file.img"
run_backend file
nbd_stop file
# What went over NBD is in the file: the tools read it as a plain image.
check "file: fsck.ordfs -f on the served image file itself exits 0" "$FSCK" -f "$WORK/file.img"
check "file: and it has the label tune set over NBD" \
	bash -c "'$TUNE' -l '$WORK/file.img' | grep -q '^Filesystem volume name: *relabelled-file\$'"

# --- the memory plugin -------------------------------------------------------------
require "nbdkit memory plugin starts" nbd_start mem memory ${SIZE_MB}M
run_backend mem
nbd_stop mem
summary
