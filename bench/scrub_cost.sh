#!/bin/bash
# scrub_cost.sh - what the online scrub (ordfsctl scrub) costs a busy
# mount, and how long it takes idle and busy.
#
# Usage: bench/scrub_cost.sh [ROUNDS [SECONDS [FILES]]]
#        (defaults 3 rounds, 15 s of load per phase, 20000 files)
# Builds if needed (scripts/build.sh), makes a 4 GiB image in /var/tmp,
# fills it through the daemon (FILES files of 16 KiB in 100 directories,
# and two files of 256 MiB), then per round:
#   idle:  one scrub alone (its wall time);
#   load:  fio, 4 KiB random writes with an fdatasync every 16, for
#          SECONDS, alone;
#   busy:  the same fio with scrubs back to back beside it.
# Prints the medians over rounds: the scrub's time idle and busy, fio's
# write IOPS and fdatasync p99 busy over alone (1.00 = no cost), and
# writes them to OUT (default bench/results/DATE_scrub_cost/results.md).
# The machine is shared: trust the ratios of one run, not the figures.
set -euo pipefail

cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-15}
files=${3:-20000}
out=${OUT:-bench/results/$(date +%Y-%m-%d)_scrub_cost}
command -v fio >/dev/null || bash bench/lib/install.sh bench/packages.txt
./scripts/build.sh build >/dev/null

work=$(mktemp -d /var/tmp/ordfs-scrub.XXXXXX)
mnt=$work/mnt
cleanup() {
	[ -n "${scrubber:-}" ] && kill "$scrubber" 2>/dev/null
	fusermount3 -u "$mnt" 2>/dev/null || true
	flock -w 30 "$work/img" true 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$mnt" "$out"
build/tools/mkfs.ordfs -q "$work/img" 4G
build/src/ordfs "$work/img" "$mnt"
python3 bench/lib/manyfiles.py "$mnt" "$files" 100 16384 none >/dev/null
head -c 256M /dev/urandom >"$mnt/big1"
cp "$mnt/big1" "$mnt/big2"
mkdir "$mnt/busy"
build/tools/ordfsctl sync "$mnt"

scrub_secs() { # one scrub; prints its seconds (ordfsctl's own figure)
	build/tools/ordfsctl scrub "$mnt" | sed -n 's/.* in \([0-9.]*\) s: clean$/\1/p'
}
run_fio() { # run_fio JSON: the load; prints "iops p99_us"
	fio --name=load --directory="$mnt/busy" --rw=randwrite --bs=4k --size=64M \
		--fdatasync=16 --time_based --runtime="$secs" --ioengine=psync \
		--output-format=json --output="$1" >/dev/null
	python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
sync = j.get("sync", {}).get("lat_ns", {}).get("percentile", {})
p99 = sync.get("99.000000", 0) / 1000.0
print("%.1f %.1f" % (j["write"]["iops"], p99))
PY
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

idle=() busy_scrub=() iops_ratio=() p99_ratio=() scrubs_done=()
for r in $(seq "$rounds"); do
	t=$(scrub_secs)
	[ -n "$t" ] || { echo "scrub_cost: the idle scrub was not clean" >&2; exit 1; }
	idle+=("$t")
	read -r iops_alone p99_alone < <(run_fio "$work/alone.json")
	: >"$work/scrubs"
	(while :; do scrub_secs >>"$work/scrubs"; done) &
	scrubber=$!
	read -r iops_busy p99_busy < <(run_fio "$work/busy.json")
	kill "$scrubber"
	wait "$scrubber" 2>/dev/null || true
	scrubber=
	mapfile -t ts <"$work/scrubs"
	[ "${#ts[@]}" -gt 0 ] || { echo "scrub_cost: no scrub finished under load" >&2; exit 1; }
	busy_scrub+=("$(median "${ts[@]}")")
	scrubs_done+=("${#ts[@]}")
	iops_ratio+=("$(python3 -c "print('%.2f' % ($iops_busy / $iops_alone))")")
	p99_ratio+=("$(python3 -c "print('%.2f' % ($p99_busy / max($p99_alone, 1)))")")
	echo "round $r: scrub idle ${t}s, busy $(median "${ts[@]}")s (${#ts[@]} scrubs);" \
		"fio alone $iops_alone IOPS p99 ${p99_alone}us, beside scrubs $iops_busy IOPS p99 ${p99_busy}us"
done
inodes=$(build/tools/ordfsctl scrub "$mnt" | sed -n 's/.*scrubbed \([0-9]*\) inodes.*/\1/p')
{
	echo "# Online scrub cost ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, commit $(git rev-parse --short HEAD))"
	echo
	echo "Image: 4 GiB, $inodes inodes in use ($files files of 16 KiB, two of 256 MiB)."
	echo "Load: fio 4 KiB random writes, fdatasync every 16, ${secs} s per phase; $rounds rounds, medians."
	echo
	echo "| figure | median | per round |"
	echo "|---|---|---|"
	echo "| scrub alone (s) | $(median "${idle[@]}") | ${idle[*]} |"
	echo "| scrub beside the load (s) | $(median "${busy_scrub[@]}") | ${busy_scrub[*]} |"
	echo "| scrubs finished during the load | $(median "${scrubs_done[@]}") | ${scrubs_done[*]} |"
	echo "| fio IOPS, scrubbing / alone | $(median "${iops_ratio[@]}") | ${iops_ratio[*]} |"
	echo "| fio fdatasync p99, scrubbing / alone | $(median "${p99_ratio[@]}") | ${p99_ratio[*]} |"
} | tee "$out/results.md"
