#!/bin/bash
# test.sh - install what is missing, build, and run the whole test suite three
# times: a normal build, an AddressSanitizer + UndefinedBehaviorSanitizer
# build and a ThreadSanitizer build (clang; the daemon under test is the
# TSan build, so a data race in any mounted test fails it); then the image
# fuzzer for a bounded time.  The sanitizer builds check a quarter of the
# crash harness's workloads (tests/crash/meson.build; the normal build
# checks them all), 300 of the SQLite client's power-cut states in ASan,
# 60 in TSan (1500 in the normal build: ORDFS_SQLITE_STATES) and 6 kill -9
# rounds (20: ORDFS_KILL_ROUNDS); the ASan build leaves the NBD suite to
# the normal and TSan builds (its code is the daemon's threads, which TSan
# is for), the normal build leaves the hostile-image harness and the
# corrupt-image sweep to the ASan build (where a sanitizer sees them too).
# The whole run must stay under 40 minutes on 2 cores; the summary gives
# each tier's wall-clock seconds (its build and its tests) and the total.
#
# Usage: scripts/test.sh
#   BUILD_DIR (default build), ASAN_BUILD_DIR (default build-asan) and
#   TSAN_BUILD_DIR (default build-tsan) name the build directories;
#   FUZZ_SECONDS (default 60, 0 = skip) bounds the fuzz run; TSAN=0 skips
#   the ThreadSanitizer suite.  Exits non-zero if anything fails.
#
# A test that cannot run here (no /dev/fuse, not root, no man) is a SKIP,
# not a failure: each suite lists its skipped tests with the reason they
# printed, and the summary gives the counts.  The builds have the daemon's
# test hooks (scripts/build.sh: -Dtest_hooks=true).
set -euo pipefail

cd "$(dirname "$0")/.."
started=$SECONDS
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
TSAN_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}

bash scripts/install-deps.sh

# Sanitizer reports must fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

declare -A result skips seconds
# timed NAME COMMAND...: runs COMMAND and keeps the wall-clock seconds it
# took in seconds[NAME]; returns its status.
timed() {
	local name=$1 t0=$SECONDS rc=0
	shift
	"$@" || rc=$?
	seconds[$name]=$((SECONDS - t0))
	return $rc
}
# report_skips NAME DIR: lists the tests the last `meson test` in DIR
# skipped (exit 77; from meson-logs/testlog.json) with the reason each
# printed, and the cases skipped inside tests that ran (their "SKIP ..."
# lines); keeps the counts for the summary in skips[NAME].
report_skips() {
	local log=$2/meson-logs/testlog.json
	skips[$1]=
	[ -f "$log" ] || return 0
	local out
	out=$(python3 - "$log" <<'PY'
import json, re, sys
skipped, cases = [], []
for line in open(sys.argv[1]):
    t = json.loads(line)
    text = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
    why = [l.strip() for l in text.splitlines() if re.match(r"(SKIP|skip)\b", l)]
    if t.get("result") == "SKIP":
        skipped.append("  skipped %s: %s" % (t["name"], why[0] if why else "(no reason printed)"))
    elif why:
        cases += ["  in %s: %s" % (t["name"], w) for w in why]
print("%d %d" % (len(skipped), len(cases)))
for l in skipped + cases:
    print(l)
PY
) || return 0
	local tests cases
	read -r tests cases <<<"$(head -n 1 <<<"$out")"
	if [ "$tests" -gt 0 ] || [ "$cases" -gt 0 ]; then
		echo "=== $1: $tests test(s) skipped, $cases case(s) skipped inside tests that ran:"
		tail -n +2 <<<"$out"
	fi
	skips[$1]="$tests tests skipped"
	[ "$cases" -eq 0 ] || skips[$1]+=", $cases cases skipped"
}

run_suite() { # run_suite NAME DIR MESON_OPTION...
	local name=$1 dir=$2
	shift 2
	echo "=== $name: build ($dir)"
	if ! bash scripts/build.sh "$dir" "$@"; then
		result[$name]="build FAILED"
		return 1
	fi
	echo "=== $name: test"
	local rc=0
	# shellcheck disable=SC2086 # TEST_ARGS: words for meson test
	meson test -C "$dir" --print-errorlogs ${TEST_ARGS:-} || rc=$?
	report_skips "$name" "$dir"
	if [ "$rc" -eq 0 ]; then
		result[$name]="passed"
	else
		result[$name]="tests FAILED (see $dir/meson-logs/testlog.txt)"
		return 1
	fi
}

# ThreadSanitizer: the unit, mounted and nbd tests (the programs with
# threads: the commit and writeback threads, the daemon's workers, the NBD
# backend's poller and the owner record's heartbeat), the daemons the
# mounted and nbd tests start included.  Every program writes its reports to one
# folder, and any report fails the suite, also from a daemon killed on
# purpose or one that detached (its exit status is not seen); a process
# with a report also exits 66.  Left out: the crash harness and the cli
# scripts (single-threaded tools, long under TSan) and the corrupt-image
# sweep (suite 'corruption', covered by ASan); the unit tests of one
# structure's logic that start no thread of their own (suite 'no_tsan':
# test_dir, 90 s under TSan, whose directory code the mounted tests drive
# from many threads here); the unit tests' fault and seed sweeps run every
# fourth case (ORDFS_TEST_SWEEP_STRIDE; they test error paths one case at a
# time, run whole in the other builds); and 60 of the SQLite client's
# power-cut states (each is a replay and a check in one thread, all 1500 of
# them in the normal build; the daemon the client drives runs whole).
# tests/tsan.supp holds the suppressions, each with the reason it is benign.
run_tsan_suite() {
	local reports
	reports="$(pwd)/$TSAN_BUILD_DIR/tsan-reports"
	rm -rf "$reports"
	mkdir -p "$reports"
	chmod 1777 "$reports" # the rootless tier's daemons run as nobody
	TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 log_path=$reports/report suppressions=$(pwd)/tests/tsan.supp" \
		ORDFS_KILL_ROUNDS=${ORDFS_KILL_ROUNDS:-6} ORDFS_TEST_SWEEP_STRIDE=${ORDFS_TEST_SWEEP_STRIDE:-4} \
		ORDFS_SQLITE_STATES=${ORDFS_SQLITE_STATES:-60} \
		CK_TIMEOUT_MULTIPLIER=4 \
		TEST_ARGS="--suite unit --suite mounted --suite nbd --no-suite corruption --no-suite no_tsan --timeout-multiplier 3" \
		CC=clang run_suite tsan "$TSAN_BUILD_DIR" -Db_sanitize=thread -Db_lundef=false || true
	if [ -n "$(ls -A "$reports")" ]; then
		echo "=== tsan: $(ls "$reports" | wc -l) program(s) reported data races:"
		cat "$reports"/*
		result[tsan]="FAILED: ThreadSanitizer reports in $reports"
	fi
}

# The transport (src/daemon/transport/): the normal build's daemons serve
# over /dev/fuse (enable_uring off: -o io_uring=auto finds no io_uring,
# the default for a user of a stock kernel); the sanitizer builds' daemons
# over FUSE-over-io_uring (enable_uring on, and ORDFS_TEST_URING=require
# makes a daemon that could not use it fail its mount instead of falling
# back unnoticed).  The switch is put back as found when the run ends,
# however it ends.  Without the switch (a kernel before 6.14) every tier
# runs over /dev/fuse and the summary says so.
ENABLE_URING=/sys/module/fuse/parameters/enable_uring
if [ -w "$ENABLE_URING" ]; then
	uring_note="transport: normal over /dev/fuse; asan+ubsan and tsan over io_uring"
	enable_uring_was=$(cat "$ENABLE_URING")
	trap 'echo "$enable_uring_was" > "$ENABLE_URING" 2>/dev/null || true' EXIT
	# bash runs no EXIT trap when a signal kills it: make them exits
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	set_uring() {
		echo "$1" > "$ENABLE_URING"
		if [ "$1" = 1 ]; then export ORDFS_TEST_URING=require; else unset ORDFS_TEST_URING; fi
	}
else
	uring_note="transport: every tier over /dev/fuse: $ENABLE_URING is missing or not writable (FUSE over io_uring needs Linux 6.14+ with CONFIG_FUSE_IO_URING, and root)"
	set_uring() { :; }
fi
echo "=== $uring_note"

set_uring 0
# The hostile-image harness (suite 'hostile', tests/hostile/README.md: a
# bounded 150 s of mutated images through the daemon's request handlers
# and fsck) runs in the ASan+UBSan tier, where a sanitizer report is
# caught too; the normal tier leaves it to that one, and so the
# corrupt-image sweep (suite 'corruption': test_hostile, the same damaged
# images through the library, 90 s in the ASan+UBSan build).
TEST_ARGS="--no-suite hostile --no-suite corruption" timed normal run_suite normal "$BUILD_DIR" || true
set_uring 1
ORDFS_KILL_ROUNDS=${ORDFS_KILL_ROUNDS:-6} ORDFS_SQLITE_STATES=${ORDFS_SQLITE_STATES:-300} \
	TEST_ARGS="--no-suite nbd" \
	timed asan+ubsan run_suite asan+ubsan "$ASAN_BUILD_DIR" -Db_sanitize=address,undefined -Db_lundef=false || true
result[tsan]="skipped (TSAN=0)"
if [ "${TSAN:-1}" != 0 ]; then
	timed tsan run_tsan_suite
fi
set_uring 0

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
result[fuzz]="skipped (FUZZ_SECONDS=0)"
if [ "$FUZZ_SECONDS" -gt 0 ]; then
	echo "=== fuzz: fuzz_image for $FUZZ_SECONDS s"
	if timed fuzz bash scripts/fuzz.sh "$FUZZ_SECONDS"; then
		result[fuzz]="passed"
	else
		result[fuzz]="FAILED (crash-* files in build-fuzz/)"
	fi
fi

echo
echo "=== summary ($uring_note)"
status=0
for name in normal asan+ubsan tsan fuzz; do
	skipped=${skips[$name]:-}
	took=${seconds[$name]:-}
	printf '%-12s %s%s%s\n' "$name" "${result[$name]}" "${skipped:+ ($skipped)}" \
		"${took:+ [$took s]}"
	case "${result[$name]}" in passed | skipped*) ;; *) status=1 ;; esac
done
printf '%-12s [%d s] (the dependencies, every tier and the fuzz run)\n' total \
	$((SECONDS - started))
exit $status
