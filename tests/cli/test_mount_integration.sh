#!/bin/bash
# test_mount_integration.sh - ordfs through the system's own tools:
# mkfs -t ordfs, mount -t fuse.ordfs (mount(8) -> mount.fuse3 -> ordfs),
# an fstab line (mount -T FSTAB MOUNTPOINT), umount(8) (-> umount.ordfs,
# which waits until the daemon has closed the image), fsck -t ordfs.
#
# Usage: test_mount_integration.sh BUILD_DIR
#   Needs root, /dev/fuse, util-linux mount and /sbin/mount.fuse (fuse3);
#   exits 77 (skip) with a line saying what is missing otherwise.
#
# mount(8) finds the daemon only on its own PATH (/usr/local/sbin, /usr/sbin,
# ...) and umount(8) its helpers only in /sbin, so for the length of the
# test this build's binaries are linked where `meson install` would put
# them: /usr/local/sbin/{ordfs,mkfs.ordfs,fsck.ordfs} and
# /sbin/{umount.ordfs,umount.fuse.ordfs}.  A different file already there
# is moved aside and put back at exit; an identical one is used as it is.
# A /sbin/mount.fuse.ordfs is moved aside for the test and put back.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

BUILD=$(readlink -f "${1:?usage: test_mount_integration.sh BUILD_DIR}")
[ "$(id -u)" = 0 ] || skip "not root: mount(8) and the helpers need it"
[ -c /dev/fuse ] && [ -r /dev/fuse ] || skip "/dev/fuse is missing"
[ -x /sbin/mount.fuse ] || [ -x /sbin/mount.fuse3 ] || skip "no /sbin/mount.fuse (Debian package fuse3)"
mount --version 2>/dev/null | grep -q util-linux || skip "mount(8) is not util-linux's"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-mount.XXXXXX")
IMG=$WORK/disk.img
MNT=$WORK/mnt
mkdir "$MNT"

declare -a LINKED=() SAVED=()
link_tool() { # link_tool BUILT_FILE DEST
	local built=$1 dest=$2
	if [ -e "$dest" ] && cmp -s "$built" "$dest"; then
		return 0
	fi
	if [ -e "$dest" ] || [ -L "$dest" ]; then
		mv "$dest" "$dest.ordfs-test-saved" && SAVED+=("$dest")
	fi
	ln -s "$built" "$dest" && LINKED+=("$dest")
}
cleanup() {
	local m
	for m in "$WORK/bindfile" "$WORK/bind" "$MNT"; do
		mountpoint -q "$m" && umount -l "$m"
	done
	local p
	for p in "${LINKED[@]}"; do rm -f "$p"; done
	for p in "${SAVED[@]}"; do mv "$p.ordfs-test-saved" "$p"; done
	rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p /usr/local/sbin
link_tool "$BUILD/src/ordfs" /usr/local/sbin/ordfs
link_tool "$BUILD/tools/mkfs.ordfs" /usr/local/sbin/mkfs.ordfs
link_tool "$BUILD/tools/fsck.ordfs" /usr/local/sbin/fsck.ordfs
link_tool "$BUILD/tools/umount.ordfs" /sbin/umount.ordfs
link_tool "$BUILD/tools/umount.ordfs" /sbin/umount.fuse.ordfs
# A mount helper of the type's own (xfstests' run.sh installs one for its
# run) would take mount(8) past mount.fuse3 and this build: set aside too.
if [ -e /sbin/mount.fuse.ordfs ] || [ -L /sbin/mount.fuse.ordfs ]; then
	mv /sbin/mount.fuse.ordfs /sbin/mount.fuse.ordfs.ordfs-test-saved &&
		SAVED+=(/sbin/mount.fuse.ordfs)
fi

is_mounted_ordfs() { grep -q "^$IMG $MNT fuse.ordfs " /proc/mounts; }
image_closed() { flock -n "$IMG" true; }

# --- mkfs -t, fsck -t ---------------------------------------------------------
check "mkfs -t ordfs makes an image" mkfs -t ordfs -q "$IMG" 96M
check "fsck -t ordfs -f on it exits 0" fsck -t ordfs -f "$IMG"

# --- mount -t fuse.ordfs, umount waits ------------------------------------------
check "mount -t fuse.ordfs -o noatime,data=journal" \
	mount -t fuse.ordfs "$IMG" "$MNT" -o noatime,data=journal
check "/proc/mounts shows IMAGE MOUNTPOINT fuse.ordfs" is_mounted_ordfs
dd if=/dev/urandom of="$WORK/src" bs=1M count=40 status=none
cp "$WORK/src" "$MNT/big"
mkdir "$MNT/dir" && echo hello >"$MNT/dir/note"

# --- mount -o remount (mount(8) -> mount.fuse3 -> ordfs ... -o remount) ----------
in_force() { "$BUILD/tools/ordfsctl" stats "$MNT" | sed -n 's/^  options: *//p'; }
has_opt() { in_force | tr , '\n' | grep -qx "$1"; }
kernel_ro() { awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts | tr , '\n' | grep -qx ro; }
check "mount -o remount,ro exits 0" mount -o remount,ro "$MNT"
check "  the kernel shows it read-only" kernel_ro
check "  ordfs is read-only" has_opt ro
check "  noatime and data=journal are kept (mount(8)'s echo of relatime ignored)" \
	eval 'has_opt noatime && has_opt data=journal'
check "  a write is refused" eval '! touch "$MNT/new" 2>/dev/null'
check "  the data reads back" cmp "$WORK/src" "$MNT/big"
check "mount -o remount,rw,commit=9 exits 0" mount -o remount,rw,commit=9 "$MNT"
check "  the kernel shows it read-write" eval '! kernel_ro'
check "  commit=9 and rw in force, noatime kept" \
	eval 'has_opt rw && has_opt commit=9 && has_opt noatime'
check "  a write works" touch "$MNT/new"
before=$(in_force)
if mount -o remount,data=ordered "$MNT" 2>"$WORK/err"; then
	fail "mount -o remount,data=ordered refused"
else
	pass "mount -o remount,data=ordered refused: $(head -1 "$WORK/err")"
fi
check "  nothing changed" test "$(in_force)" = "$before"
check "umount exits 0" unmount_retrying umount "$MNT"
check "the image is closed when umount returns (its lock is free)" image_closed
check "fsck.ordfs -fn right after umount exits 0" "$BUILD/tools/fsck.ordfs" -fn "$IMG"

# --- an fstab line ------------------------------------------------------------------
printf '%s %s fuse.ordfs noauto,data=ordered,noatime,x-systemd.automount,comment=test 0 2\n' \
	"$IMG" "$MNT" >"$WORK/fstab"
check "mount -T FSTAB MOUNTPOINT (an fstab line)" mount -T "$WORK/fstab" "$MNT"
check "the fstab mount is live" is_mounted_ordfs
check "data written before is there" cmp "$WORK/src" "$MNT/big"
check "and the small file" grep -qx hello "$MNT/dir/note"
rm "$MNT/big"
check "umount of the fstab mount exits 0" unmount_retrying umount "$MNT"
check "the image is closed when umount returns" image_closed
check "fsck -t ordfs -fn after it exits 0" fsck -t ordfs -fn "$IMG"

# --- the generic options mount(8) and mount.fuse3 forward ------------------------------
check "generic options accepted" mount -t fuse.ordfs "$IMG" "$MNT" \
	-o rw,nosuid,nodev,noexec,sync,dirsync,defaults,_netdev,nofail,x-foo=bar,relatime
check "umount -l (lazy) exits 0" umount -l "$MNT"
for _ in $(seq 600); do image_closed && break; sleep 0.1; done # 60 s: a loaded machine
check "the lazily unmounted image is closed soon after" image_closed

# --- bind mounts: umount waits only for the connection's last mount -------------------
# A bind mount shares the original's FUSE connection (one major:minor in
# mountinfo); unmounting one of them must not wait for the daemon, which goes
# on serving the other (xfstests generic/306 stalled 600 s on this).
# ORDFS_UMOUNT_TIMEOUT=20 bounds a wrong wait; "quick" means under 10 s.
# umount(8) runs the helper for a file bind (type fuse.ordfs from mountinfo)
# and for the original (helper=ordfs in utab), but unmounts a directory bind
# itself when statfs says "fuse" and utab has nothing for it (libmount's
# fast path), so the helper is also run by hand on a directory bind.
BIND=$WORK/bind
BINDF=$WORK/bindfile
HELPER=$BUILD/tools/umount.ordfs
mkdir "$BIND" && touch "$BINDF"
quick_umount() { # quick_umount COMMAND... TARGET: exits 0 in under 10 s
	local t0=$SECONDS
	ORDFS_UMOUNT_TIMEOUT=20 "$@" && [ $((SECONDS - t0)) -lt 10 ]
}
image_busy() { ! flock -n "$IMG" true; }
check "mount for the bind tests" mount -t fuse.ordfs "$IMG" "$MNT"
mkdir -p "$MNT/bdir" && echo bound >"$MNT/bdir/x" && echo file >"$MNT/bfile"
check "bind mount of a directory of it" mount --bind "$MNT/bdir" "$BIND"
check "bind mount of a file of it" mount --bind "$MNT/bfile" "$BINDF"
check "umount of the directory bind returns at once" quick_umount umount "$BIND"
check "umount of the file bind (through the helper) returns at once" \
	quick_umount umount "$BINDF"
check "bind mount of the directory again" mount --bind "$MNT/bdir" "$BIND"
check "umount.ordfs on the directory bind returns at once" quick_umount "$HELPER" "$BIND"
check "the original mount still serves" grep -qx bound "$MNT/bdir/x"
check "and its daemon still has the image" image_busy
check "umount of the last mount exits 0" unmount_retrying umount "$MNT"
check "and waits: the image is closed when it returns" image_closed
# the other order: the original goes first, the bind is the last mount
check "mount again" mount -t fuse.ordfs "$IMG" "$MNT"
check "bind mount of a directory" mount --bind "$MNT/bdir" "$BIND"
check "umount of the original while the bind remains returns at once" \
	quick_umount umount "$MNT"
check "the bind still serves" grep -qx bound "$BIND/x"
check "umount.ordfs on the bind, now the last mount, exits 0" \
	unmount_retrying "$HELPER" "$BIND"
check "and waits: the image is closed when it returns" image_closed
check "fsck.ordfs -fn after the bind tests exits 0" "$BUILD/tools/fsck.ordfs" -fn "$IMG"

# --- refusals ------------------------------------------------------------------------
cp "$IMG" "$WORK/before"
if mount -t fuse.ordfs "$IMG" "$MNT" -o data=bogus 2>"$WORK/err"; then
	fail "a bad option is refused"
	umount "$MNT"
else
	pass "a bad option is refused (exit non-zero)"
fi
check "with a one-line reason" grep -q "bad data mode 'bogus'" "$WORK/err"
check "and nothing mounted" bash -c "! grep -q ' $MNT ' /proc/mounts"
check "and the image untouched" cmp -s "$IMG" "$WORK/before"
summary
