#!/bin/bash
# test_nbd_kill9.sh - kill -9 of the daemon while the NBD server stays up:
# the daemon's owner record is stale at once (same host, its process is
# gone), so fsck.ordfs -fy starts without the heartbeat wait, replays the
# journal (exit 1, or 0 if nothing was left), and every file whose fsync
# returned 0 before the kill is intact (checksums); a mount works after.
# Files written without fsync and a writer busy at the moment of the kill
# are left to chance, but the image must check clean whatever they did.
#
# Usage: test_nbd_kill9.sh BUILD_DIR
#   Skips (exit 77) without nbdkit or /dev/fuse.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file
need_fuse

MNT=$WORK/mnt
IMG=$WORK/disk.img
truncate -s 64M "$IMG"
require "nbdkit file plugin starts" nbd_start srv file "$IMG"
URI=$(nbd_uri srv)
require "mkfs.ordfs on the URI" "$MKFS" -q "$URI"

for round in 1 2; do
	echo "=== round $round"
	require "round $round: mount" mount_nbd "$URI" "$MNT"
	DPID=$(daemon_pid "$URI")
	require "round $round: the daemon's pid is found ($DPID)" [ -n "$DPID" ]
	mkdir -p "$MNT/r$round" "$WORK/want/r$round"
	ok=1
	for i in $(seq 12); do
		head -c $((i * 9000 + round)) /dev/urandom >"$WORK/want/r$round/f$i"
		wsync "$WORK/want/r$round/f$i" "$MNT/r$round/f$i" || ok=0
	done
	# an fsync'd overwrite in place of part of an fsync'd file
	head -c 8192 /dev/urandom >"$WORK/patch"
	dd if="$WORK/patch" of="$WORK/want/r$round/f12" bs=4096 seek=3 conv=notrunc status=none
	dd if="$WORK/patch" of="$MNT/r$round/f12" bs=4096 seek=3 conv=notrunc,fsync status=none || ok=0
	# an fsync'd rename over an older file
	head -c 5000 /dev/urandom >"$WORK/want/r$round/renamed"
	wsync "$WORK/want/r$round/renamed" "$MNT/r$round/tmp" && mv "$MNT/r$round/tmp" "$MNT/r$round/renamed" &&
		wsync "$WORK/want/r$round/renamed" "$MNT/r$round/renamed" || ok=0
	check "round $round: 14 writes + fsync returned 0" [ $ok = 1 ]
	# unsynced work, and a writer still busy when the daemon dies
	for i in $(seq 10); do head -c 20000 /dev/urandom >"$MNT/r$round/unsynced$i"; done
	(while :; do head -c 65536 /dev/urandom || break; done >"$MNT/r$round/busy" 2>/dev/null) &
	WRITER=$!
	sleep 0.5
	kill -9 "$DPID"
	check "round $round: the daemon is gone after kill -9" wait_gone "$DPID" 10
	wait "$WRITER" 2>/dev/null
	# Over io_uring the kernel tears the dead daemon's rings down after
	# the process is gone (io_uring's exit work), and a request queued
	# meanwhile ends with ECONNABORTED; once that is done, ENOTCONN.
	# Nothing else, and no answer, is right.
	dead_ok=0
	for _ in $(seq 100); do
		if stat "$MNT" >/dev/null 2>"$WORK/err"; then
			break
		elif grep -q "Transport endpoint is not connected" "$WORK/err"; then
			dead_ok=1 && break
		elif ! grep -q "Software caused connection abort" "$WORK/err"; then
			break
		fi
		sleep 0.05
	done
	check "round $round: the dead mount says ENOTCONN (within 5 s, ECONNABORTED before)" [ $dead_ok = 1 ]
	[ $dead_ok = 1 ] || cat "$WORK/err"
	check "round $round: fusermount3 -u of the dead mount" fusermount_u "$MNT"

	t0=$EPOCHREALTIME
	"$FSCK" -fy "$URI" >"$WORK/fsck.out" 2>&1
	rc=$?
	t1=$EPOCHREALTIME
	ms=$(((${t1/./} - ${t0/./}) / 1000))
	cat "$WORK/fsck.out"
	check "round $round: fsck -fy replays and exits 0 or 1 (exit $rc)" test $rc -le 1
	check "round $round: it replayed the journal" grep -q "journal replayed" "$WORK/fsck.out"
	check "round $round: it did not wait for the dead daemon's heartbeat (${ms} ms < 3000)" [ "$ms" -lt 3000 ]
	check "round $round: fsck -f again exits 0" "$FSCK" -f "$URI"
	require "round $round: mount after the kill" mount_nbd "$URI" "$MNT"
	for r in $(seq "$round"); do
		check "round $round: every fsync'd file of round $r is intact" \
			[ "$(sums "$MNT/r$r" | grep -v -e unsynced -e busy)" = "$(sums "$WORK/want/r$r")" ]
	done
	check "round $round: a write + fsync on the new mount returns 0" wsync "$WORK/patch" "$MNT/after$round"
	check "round $round: unmount" umount_nbd "$URI" "$MNT"
	check "round $round: fsck -f after the unmount exits 0" "$FSCK" -f "$URI"
done
nbd_stop srv
summary
