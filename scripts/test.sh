#!/bin/bash
# test.sh - install what is missing, build, and run the whole test suite twice:
# a normal build and an AddressSanitizer + UndefinedBehaviorSanitizer build;
# then the image fuzzer for a bounded time.
#
# Usage: scripts/test.sh
#   BUILD_DIR (default build) and ASAN_BUILD_DIR (default build-asan) name
#   the build directories; FUZZ_SECONDS (default 60, 0 = skip) bounds the
#   fuzz run.  Exits non-zero if anything fails.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}

bash scripts/install-deps.sh

# Sanitizer reports must fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

declare -A result
run_suite() { # run_suite NAME DIR MESON_OPTION...
	local name=$1 dir=$2
	shift 2
	echo "=== $name: build ($dir)"
	if ! bash scripts/build.sh "$dir" "$@"; then
		result[$name]="build FAILED"
		return
	fi
	echo "=== $name: test"
	if meson test -C "$dir" --print-errorlogs; then
		result[$name]="passed"
	else
		result[$name]="tests FAILED (see $dir/meson-logs/testlog.txt)"
	fi
}

run_suite normal "$BUILD_DIR"
run_suite asan+ubsan "$ASAN_BUILD_DIR" -Db_sanitize=address,undefined -Db_lundef=false

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
result[fuzz]="skipped (FUZZ_SECONDS=0)"
if [ "$FUZZ_SECONDS" -gt 0 ]; then
	echo "=== fuzz: fuzz_image for $FUZZ_SECONDS s"
	if bash scripts/fuzz.sh "$FUZZ_SECONDS"; then
		result[fuzz]="passed"
	else
		result[fuzz]="FAILED (crash-* files in build-fuzz/)"
	fi
fi

echo
echo "=== summary"
status=0
for name in normal asan+ubsan fuzz; do
	printf '%-12s %s\n' "$name" "${result[$name]}"
	case "${result[$name]}" in passed | skipped*) ;; *) status=1 ;; esac
done
exit $status
