#!/bin/bash
# kill_stress.sh - kill -9 of the io_uring server at random moments under
# load, ROUNDS times: every client must return (with an error) within 5 s
# and the dead mount must unmount; the kernel must log no warning.
#
# Usage: bench/uring_probe/kill_stress.sh [BUILD_DIR [ROUNDS [DEPTH]]]
# (defaults build, 30, 2).  Root.  Three clients loop over 1 MiB reads, 256
# KiB writes and stats on the mount; the kill comes 0 to 0.3 s after they
# start, so it finds entries in every state (waiting in the kernel, held
# by the server, being committed).  The probe turns enable_uring on for
# each mount's INIT and back; so does this script's EXIT trap.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(realpath "${1:-build}")
ROUNDS=${2:-30}
DEPTH=${3:-2}
P=$BUILD/bench/uring_probe/fuse_transport_probe
SW=/sys/module/fuse/parameters/enable_uring
[ -x "$P" ] || { echo "kill_stress.sh: no $P" >&2; exit 1; }
sw0=$(cat "$SW")
M=$(mktemp -d /tmp/fuse_kill_stress.XXXXXX)
cleanup() {
	set +e
	mountpoint -q "$M" && { umount "$M" 2>/dev/null || umount -l "$M"; }
	rmdir "$M"
	echo "$sw0" >"$SW"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP # bash runs no EXIT trap when a signal kills it
before=$(dmesg | grep -cE 'WARNING|BUG:' || true)
hung=0
for i in $(seq 1 "$ROUNDS"); do
	"$P" serve "$M" --transport uring --depth "$DEPTH" --quiet &
	sp=$!
	for _ in $(seq 200); do mountpoint -q "$M" && break; sleep 0.01; done
	head -c 1048576 /dev/zero >"$M/f"
	pids=()
	for c in 1 2 3; do
		(
			while :; do
				dd if="$M/f" of=/dev/null bs=4k count=256 status=none || exit 0
				dd if=/dev/zero of="$M/g$c" bs=4k count=64 status=none || exit 0
				stat "$M/f" >/dev/null || exit 0
			done
		) 2>/dev/null &
		pids+=($!)
	done
	sleep "0.$((RANDOM % 300))"
	kill -9 "$(pgrep -P "$sp")"
	for p in "${pids[@]}"; do
		for _ in $(seq 500); do kill -0 "$p" 2>/dev/null || break; sleep 0.01; done
		if kill -0 "$p" 2>/dev/null; then
			echo "round $i: client $p still running 5 s after kill -9:" >&2
			cat "/proc/$p/stack" >&2 || true
			hung=1
			umount -f "$M" || true	# aborts the connection
		fi
	done
	wait "$sp" || true
	umount "$M" 2>/dev/null || umount -l "$M"
	wait 2>/dev/null || true
done
after=$(dmesg | grep -cE 'WARNING|BUG:' || true)
echo "kill_stress.sh: $ROUNDS rounds at depth $DEPTH, clients hung: $hung," \
	"new kernel warnings: $((after - before))"
[ "$hung" = 0 ] && [ "$after" = "$before" ]
