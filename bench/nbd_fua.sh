#!/bin/bash
# nbd_fua.sh - what FUA on the commit block saves over NBD.
#
# Usage: bench/nbd_fua.sh [BUILD_DIR] [OUT_DIR]
#
# ordfs on nbdkit's file plugin, on a Unix socket, through its delay filter
# (NBD_DELAY per read and write request, default 1ms: a link to another
# machine).  A fio job appends 128 KiB and fsyncs, for RUNTIME seconds
# (default 5), in data=ordered: more than 64 KiB of new data per fsync is
# written in place, so every commit has F1 (design/journal.md, "The commit
# protocol"), and with FUA its commit block is written with FUA instead of
# a second flush.  Twice per round: with FUA (the file plugin offers it)
# and with the daemon's -o nofua (the commit block is written, then
# flushed).  (nbdkit 1.32's fua filter has no fuamode=none to turn it off
# at the server.)  ROUNDS rounds
# (default 3), alternating; prints fsyncs/s, flushes per fsync (ordfsctl
# stats) and the medians, and writes OUT_DIR/nbd_fua.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
NBD_DELAY=${NBD_DELAY:-1ms}
RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/ordfs-fua.XXXXXX")
SOCK=$WORK/sock
URI="nbd+unix:///?socket=$SOCK"

cleanup() {
	set +e
	mountpoint -q "$WORK/mnt" && fusermount3 -u "$WORK/mnt"
	[ -f "$WORK/daemon.pid" ] && wait_gone "$(cat "$WORK/daemon.pid")"
	[ -f "$WORK/nbdkit.pid" ] && kill "$(cat "$WORK/nbdkit.pid")"
	rm -rf "$WORK"
}
trap cleanup EXIT

wait_gone() { # wait_gone PID: up to 30 s
	local _
	for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

serve() { # (re)start nbdkit
	if [ -f "$WORK/nbdkit.pid" ]; then
		kill "$(cat "$WORK/nbdkit.pid")"
		wait_gone "$(cat "$WORK/nbdkit.pid")"
	fi
	rm -f "$SOCK"
	nbdkit --unix "$SOCK" --pidfile "$WORK/nbdkit.pid" --filter=delay file "$WORK/img" \
		delay-read="$NBD_DELAY" delay-write="$NBD_DELAY"
	local _
	for _ in $(seq 50); do [ -S "$SOCK" ] && return 0; sleep 0.1; done
	echo "nbd_fua.sh: nbdkit did not start" >&2
	return 1
}

one_run() { # one_run yes|no (FUA): prints "fsyncs_per_s flushes_per_fsync"
	serve
	mkdir -p "$WORK/mnt"
	local opts=data=ordered
	[ "$1" = yes ] || opts=$opts,nofua
	"$BUILD/src/ordfs" "$URI" "$WORK/mnt" -f -o "$opts" >"$WORK/daemon.log" 2>&1 &
	echo $! >"$WORK/daemon.pid"
	local _
	for _ in $(seq 100); do mountpoint -q "$WORK/mnt" && break; sleep 0.1; done
	local before after fsyncs
	before=$("$BUILD/tools/ordfsctl" stats --json "$WORK/mnt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["flushes"]["issued"])')
	fio --name=fua --directory="$WORK/mnt" --rw=write --bs=128k --size=1g --fsync=1 \
		--fallocate=none --file_append=1 --ioengine=psync \
		--time_based --runtime="$RUNTIME" --output-format=json >"$WORK/fio.json"
	after=$("$BUILD/tools/ordfsctl" stats --json "$WORK/mnt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["flushes"]["issued"])')
	fsyncs=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print(j["sync"]["total_ios"])' "$WORK/fio.json")
	fusermount3 -u "$WORK/mnt"
	wait_gone "$(cat "$WORK/daemon.pid")"
	rm -f "$WORK/mnt"/* 2>/dev/null || true
	python3 -c 'import sys; n=int(sys.argv[1]); print("%.1f %.2f" % (n / float(sys.argv[3]), (int(sys.argv[2])) / max(n, 1)))' \
		"$fsyncs" "$((after - before))" "$RUNTIME"
}

truncate -s 2G "$WORK/img"
"$BUILD/tools/mkfs.ordfs" -q "$WORK/img"
printf 'round\tfua\tfsyncs_per_s\tflushes_per_fsync\n' >"$OUT/nbd_fua.tsv"
for r in $(seq "$ROUNDS"); do
	for fua in yes no; do
		read -r rate per < <(one_run "$fua")
		printf '%s\t%s\t%s\t%s\n' "$r" "$fua" "$rate" "$per" | tee -a "$OUT/nbd_fua.tsv"
	done
done
python3 - "$OUT/nbd_fua.tsv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
med = {f: statistics.median(float(r["fsyncs_per_s"]) for r in rows if r["fua"] == f) for f in ("yes", "no")}
fl = {f: statistics.median(float(r["flushes_per_fsync"]) for r in rows if r["fua"] == f) for f in ("yes", "no")}
print("median fsyncs/s: with FUA %.1f (%.2f flushes per fsync), without %.1f (%.2f): ratio %.2f"
      % (med["yes"], fl["yes"], med["no"], fl["no"], med["yes"] / med["no"]))
PY
