#!/bin/bash
# build.sh - configure (once) and build ordfs with meson and ninja.
#
# Usage: scripts/build.sh [BUILD_DIR [MESON_OPTION...]]
#   BUILD_DIR defaults to "build" in the repository.  Options such as
#   -Db_sanitize=address,undefined are applied to a new build directory and
#   to an existing one alike.
set -euo pipefail

cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true

if [ -f "$dir/build.ninja" ]; then
	if [ $# -gt 0 ]; then
		meson configure "$dir" "$@"
	fi
else
	meson setup "$dir" "$@"
fi
ninja -C "$dir"
