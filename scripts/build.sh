#!/bin/bash
# build.sh - configure (once) and build ordfs with meson and ninja, as a
# test build: the tests are required (-Dtests=enabled: a missing Check or
# SQLite stops the build instead of leaving the tests out) and the daemon
# has its test hooks (-Dtest_hooks=true, which the mounted latch, flush and
# SQLite tests need).  scripts/test.sh, CI, tests/crash/run and the
# benchmarks build with it; `meson setup` alone gives neither (hooks off:
# what `meson install` should install).
#
# Usage: scripts/build.sh [BUILD_DIR [MESON_OPTION...]]
#   BUILD_DIR defaults to "build" in the repository.  Options such as
#   -Db_sanitize=address,undefined are applied to a new build directory and
#   to an existing one alike; a -Dtests=... or -Dtest_hooks=... given here
#   replaces the default above (scripts/demo.sh: -Dtest_hooks=false).
set -euo pipefail

cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true

opts=("$@")
case " $* " in *" -Dtests="*) ;; *) opts+=(-Dtests=enabled) ;; esac
case " $* " in *" -Dtest_hooks="*) ;; *) opts+=(-Dtest_hooks=true) ;; esac

if [ -f "$dir/build.ninja" ]; then
	# Only when an option differs: an unchanged reconfigure still costs a
	# regeneration.
	current=$(meson introspect --buildoptions "$dir" 2>/dev/null |
		python3 -c 'import json, sys
for o in json.load(sys.stdin):
	v = o["value"]
	if isinstance(v, bool):
		v = str(v).lower()
	elif isinstance(v, list):
		v = ",".join(v)
	print("-D%s=%s" % (o["name"], v))' 2>/dev/null || true)
	for o in "${opts[@]}"; do
		if ! grep -qxF -- "$o" <<<"$current"; then
			# --reconfigure (not meson configure): it also knows an
			# option added to meson_options.txt since the last setup.
			meson setup --reconfigure "$dir" "${opts[@]}"
			break
		fi
	done
else
	meson setup "$dir" "${opts[@]}"
fi
ninja -C "$dir"
