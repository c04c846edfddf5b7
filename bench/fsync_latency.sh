#!/bin/bash
# fsync_latency.sh - fsync/fdatasync latency on an idle ordfs image next to
# raw fsync/fdatasync of a host file in the same directory, same run.
#
# Usage: bench/fsync_latency.sh [ROUNDS [COUNT]]   (defaults 5 and 200)
# Builds if needed (scripts/build.sh), makes a 256 MiB image in a
# temporary directory on the host filesystem that holds /var/tmp, mounts
# it, and alternates the two targets ROUNDS times (COUNT calls per
# workload and round).  Prints, per workload, the median over rounds of
# each round's median and p99 in microseconds, and ordfs / host ratios.
# The machine is shared: trust the ratios, not the absolute figures.
set -euo pipefail

cd "$(dirname "$0")/.."
rounds=${1:-5}
count=${2:-200}
./scripts/build.sh build >/dev/null

work=$(mktemp -d /var/tmp/ordfs-bench.XXXXXX)
mnt="$work/mnt"
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	flock -w 30 "$work/img" true 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$mnt" "$work/host"
build/tools/mkfs.ordfs -q "$work/img" 256M
build/src/ordfs "$work/img" "$mnt"

declare -A results
for ((r = 0; r < rounds; r++)); do
	for target in host ordfs; do
		dir="$work/host"
		[ "$target" = ordfs ] && dir="$mnt"
		while read -r name median p99; do
			results["$target/$name/median"]+="$median "
			results["$target/$name/p99"]+="$p99 "
		done < <(build/bench/fsync_latency "$dir" "$count")
	done
done

median_of() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-10s %-7s %12s %12s %8s\n' workload stat "host (us)" "ordfs (us)" ratio
for name in append overwrite; do
	for stat in median p99; do
		h=$(median_of "${results[host/$name/$stat]}")
		o=$(median_of "${results[ordfs/$name/$stat]}")
		ratio=$(awk -v o="$o" -v h="$h" 'BEGIN { printf "%.2f", (h > 0 ? o / h : 0) }')
		printf '%-10s %-7s %12s %12s %8s\n' "$name" "$stat" "$h" "$o" "$ratio"
	done
done
echo "($rounds rounds x $count calls; append = 4 KiB write + fsync, overwrite = 4 KiB in place + fdatasync;"
echo " host = a file next to the image on $(df --output=fstype "$work" | tail -1))"
