#!/bin/bash
# install-deps.sh - install the Debian packages ordfs needs to build and test.
#
# Installs only what is missing (checked with dpkg), after one apt-get
# update; does nothing when everything is there.  Runs as root, or through
# sudo when that exists.  Made for Debian 12; other Debian-like systems with
# the same package names work too.
set -euo pipefail

# clang and its runtime (libFuzzer) build the fuzz target (scripts/fuzz.sh).
# acl (setfacl/getfacl) drives the mounted ACL test; attr (setfattr) the
# scrub test's writers (tests/cli/test_scrub.sh).
# e2fsprogs (lsattr, chattr) drives the mounted file-flags test.
# man-db and groff-base render and check the manual pages (tests/cli/test_man.sh).
# dpkg-dev, debhelper and lintian build and check the Debian package
# (debian/, tests/cli/test_deb.sh).
# libnbd-dev: images on an NBD server (src/blockdev/nbd.c); nbdkit serves
# them in the NBD tests (tests/nbd/), which ask nbdinfo (libnbd-bin) what
# a server offers.
# libmount-dev: the daemon records its umount helper in libmount's utab
# (src/daemon/utab.c).
# python3 and binutils (nm) run the layer check (tests/layers/) and
# test.sh's skip report; named here, not left to meson's dependencies.
# liburing-dev: the daemon's FUSE-over-io_uring transport (src/daemon/transport/)
# and the transport probe (bench/uring_probe/).
PACKAGES=(build-essential meson ninja-build pkg-config libfuse3-dev fuse3 check
	libnbd-dev libnbd-bin nbdkit libmount-dev liburing-dev
	libsqlite3-dev clang libclang-rt-14-dev acl attr e2fsprogs man-db groff-base
	dpkg-dev debhelper lintian python3 binutils)

is_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps.sh: not a Debian-like system (no dpkg); install these by hand:" \
		"${PACKAGES[*]}" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	is_installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps.sh: all build and test dependencies are installed"
	exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-deps.sh: need root to install: ${missing[*]}" >&2
		exit 1
	fi
	as_root=(sudo)
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" apt-get install -y "${missing[@]}"
