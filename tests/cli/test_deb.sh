#!/bin/bash
# test_deb.sh - the Debian package (debian/): builds it with
# `dpkg-buildpackage -us -uc -b` in a scratch copy of the source tree,
# runs lintian on it (any E: line fails), checks what the .deb holds
# (the daemon, every tool, the umount helper, every manual page in
# docs/man) and runs mkfs.ordfs and fsck.ordfs unpacked from it into a
# scratch root (`dpkg -x`).  Nothing is installed on the machine.
#
# Usage: test_deb.sh SOURCE_ROOT
#   Needs dpkg-buildpackage (dpkg-dev), dh (debhelper), lintian and the
#   build dependencies in debian/control (scripts/install-deps.sh installs
#   them all); exits 77 (skip) with a line saying what is missing otherwise.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

SRC=$(readlink -f "${1:?usage: test_deb.sh SOURCE_ROOT}")
skip() { echo "SKIP  $1"; exit 77; }
[ -f "$SRC/debian/control" ] || skip "no debian/ in $SRC"
for tool in dpkg-buildpackage dpkg-checkbuilddeps dh lintian; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip "no $tool (Debian packages dpkg-dev, debhelper, lintian: scripts/install-deps.sh)"
done
unmet=$(cd "$SRC" && dpkg-checkbuilddeps 2>&1) ||
	skip "build dependencies missing: ${unmet##*: }"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-deb.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
TREE=$WORK/ordfs
mkdir "$TREE"

# --- the scratch copy: dpkg-buildpackage writes its results to the parent
# directory, so it builds in $WORK/ordfs and they land in $WORK -----------------
# From git: the tracked and the new (not ignored) files as they are in the
# work tree, so uncommitted changes are built.  Otherwise everything but
# build directories and images (.gitignore's /build*/ and *.img).
copy_tree() {
	local top
	top=$(git -C "$SRC" rev-parse --show-toplevel 2>/dev/null)
	if [ -n "$top" ] && [ "$(readlink -f "$top")" = "$SRC" ]; then
		(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do
				[ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"
			done | tar --null -T - -cf -) | tar -xf - -C "$TREE"
	else
		(cd "$SRC" && tar --exclude='./build*' --exclude='./obj-*' --exclude='*.img' \
			--exclude='./.git' -cf - .) | tar -xf - -C "$TREE"
	fi
}
check "copy of the source tree in $WORK" copy_tree

# --- the build ---------------------------------------------------------------------
MESON_VERSION=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$SRC/meson.build" | head -n1)
DEB_VERSION=$(cd "$TREE" && dpkg-parsechangelog -S Version)
check "debian/changelog's upstream version ($DEB_VERSION) is meson's ($MESON_VERSION)" \
	test "${DEB_VERSION%-*}" = "$MESON_VERSION"

build() {
	(cd "$TREE" && dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1 && return 0
	echo "--- last lines of the build log:"
	tail -n 40 "$WORK/build.log"
	return 1
}
if ! check "dpkg-buildpackage -us -uc -b builds it" build; then
	summary
	exit 1
fi
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
DEB=$WORK/ordfs_${DEB_VERSION}_${ARCH}.deb
CHANGES=$WORK/ordfs_${DEB_VERSION}_${ARCH}.changes
check "it made $(basename "$DEB")" test -f "$DEB"
check "the build ran no tests (override_dh_auto_test)" \
	bash -c "! grep -Eq '^[^#]*(meson test|ninja .*test)' '$WORK/build.log'"
check "the build turned the Check tests off (-Dtests=disabled)" \
	grep -q -- '-Dtests=disabled' "$WORK/build.log"
check "the build used the hardening flags (-fstack-protector-strong, -z now)" \
	bash -c "grep -q -- -fstack-protector-strong '$WORK/build.log' && grep -q -- '-z,now' '$WORK/build.log'"

# --- lintian: warnings are shown, errors fail ---------------------------------------
# (lintian says it should not run as root; that line is not a finding.)
lintian -I -E --pedantic "$CHANGES" >"$WORK/lintian.log" 2>&1
lintian_rc=$?
grep -E '^[EWIPX]: ' "$WORK/lintian.log" | sed 's/^/      lintian: /'
check "lintian ran (exit $lintian_rc: 0 clean, 1 errors, more: it failed)" test "$lintian_rc" -le 1
check "lintian finds no errors (no E: line)" bash -c "! grep -q '^E: ' '$WORK/lintian.log'"

# --- what the .deb holds ------------------------------------------------------------
dpkg-deb -c "$DEB" | awk '{ p = $6; sub(/^\./, "", p); print p ($7 == "->" ? " -> " $8 : "") }' \
	>"$WORK/contents"
has() { grep -qx -- "$1" "$WORK/contents"; }
for prog in ordfs mkfs.ordfs fsck.ordfs tune.ordfs dump.ordfs resize.ordfs ordfsctl umount.ordfs; do
	check "the .deb has /usr/sbin/$prog" has "/usr/sbin/$prog"
done
# umount(8) runs /sbin/umount.<type>; on Debian 12 /sbin is /usr/sbin.
check "the .deb has /usr/sbin/umount.fuse.ordfs -> umount.ordfs" \
	has "/usr/sbin/umount.fuse.ordfs -> umount.ordfs"
for page in "$SRC"/docs/man/*.8; do
	check "the .deb has the manual page $(basename "$page")" \
		has "/usr/share/man/man8/$(basename "$page").gz"
done
check "the .deb has umount.fuse.ordfs.8.gz -> umount.ordfs.8.gz" \
	has "/usr/share/man/man8/umount.fuse.ordfs.8.gz -> umount.ordfs.8.gz"
check "the .deb has the copyright file" has /usr/share/doc/ordfs/copyright
check "everything is under /usr (merged /usr: nothing in /sbin, /bin, /lib)" \
	bash -c "! grep -Ev '^/(usr(/.*)?)?$|^/usr/' '$WORK/contents'"
check "no test or benchmark program is shipped (ordfs-corrupt, fsync_latency, fuse_transport_probe)" \
	bash -c "! grep -Eq 'ordfs-corrupt|fsync_latency|fuse_transport_probe|/test' '$WORK/contents'"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
check "it depends on fuse3 (mount.fuse3) and libfuse3 ($DEPENDS)" \
	bash -c "grep -Eq '(^|, )fuse3( |,|$)' <<<'$DEPENDS' && grep -q libfuse3 <<<'$DEPENDS'"

# --- the programs, unpacked into a scratch root --------------------------------------
ROOT=$WORK/root
IMG=$WORK/disk.img
check "dpkg -x unpacks it into a scratch root" dpkg -x "$DEB" "$ROOT"
SBIN=$ROOT/usr/sbin
check "its mkfs.ordfs --version says $MESON_VERSION" \
	bash -c "'$SBIN/mkfs.ordfs' --version | grep -qF '$MESON_VERSION'"
check "its ordfs --version says $MESON_VERSION" \
	bash -c "'$SBIN/ordfs' --version 2>&1 | grep -qF '$MESON_VERSION'"
check "its mkfs.ordfs makes a 64 MiB image" "$SBIN/mkfs.ordfs" -q "$IMG" 64M
check "its fsck.ordfs -fn on the image exits 0" "$SBIN/fsck.ordfs" -fn "$IMG"
check "its dump.ordfs reads the image" bash -c "'$SBIN/dump.ordfs' '$IMG' >/dev/null"
check "its umount.ordfs answers --help" bash -c "'$SBIN/umount.ordfs' --help >/dev/null"

summary
