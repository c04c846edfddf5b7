#!/bin/bash
# install.sh - install the missing Debian packages named in a list file.
#
# Usage: bench/lib/install.sh LIST   (one package a line; # starts a comment)
# Checks each with dpkg-query and runs apt-get update + apt-get install -y
# only when something is missing; says what it installs.  Needs root (or
# sudo).  On a system without dpkg it names the packages and fails.
set -euo pipefail

list=$1
mapfile -t packages < <(sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$list")

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install.sh: no dpkg here; install these by hand: ${packages[*]}" >&2
	exit 1
fi
missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install.sh: the benchmark packages are installed (${packages[*]})"
	exit 0
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install.sh: need root to install: ${missing[*]}" >&2
		exit 1
	}
	as_root=(sudo)
fi
echo "install.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq "${missing[@]}"
