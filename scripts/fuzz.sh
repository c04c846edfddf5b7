#!/bin/bash
# fuzz.sh - build the libFuzzer targets with clang (ASan + UBSan) and run
# them for a bounded time.
#
# Usage: scripts/fuzz.sh [SECONDS]   (default 60; 0 = only build)
# Builds build-fuzz/ (CC=clang, -Dfuzz=enabled, -Db_sanitize=address,undefined)
# and runs fuzz_image for SECONDS on 2 workers, starting from the corpus
# in tests/fuzz/corpus.  New inputs go to build-fuzz/corpus-new (not into
# the repository; copy interesting ones into tests/fuzz/corpus by hand).
# A crash leaves crash-* files in build-fuzz/ and exits non-zero.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! command -v clang >/dev/null; then
	echo "fuzz.sh: clang is missing (scripts/install-deps.sh installs it)" >&2
	exit 1
fi
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzz=enabled -Dtests=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C build-fuzz tests/fuzz/fuzz_image >/dev/null
[ "$seconds" -gt 0 ] || exit 0
mkdir -p build-fuzz/corpus-new
cd build-fuzz
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	./tests/fuzz/fuzz_image -max_total_time="$seconds" -max_len=4096 -timeout=20 \
	-rss_limit_mb=2048 -print_final_stats=1 corpus-new ../tests/fuzz/corpus 2>&1 |
	grep -E "^#|stat::|ERROR|SUMMARY|Done" | tail -15
exit "${PIPESTATUS[0]}"
