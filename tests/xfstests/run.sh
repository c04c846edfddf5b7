#!/bin/bash
# run.sh - run xfstests (the generic tests) against ordfs as FSTYP=fuse.
#
# Usage: XFSTESTS_DIR=/path/to/built/xfstests tests/xfstests/run.sh [CHECK_ARGS...]
#   With no arguments it runs the quick group of the generic tests
#   (./check -g generic/quick); otherwise the arguments go to ./check as
#   they are (e.g. generic/001 generic/013, or -g generic/auto).
#   Tests listed in tests/xfstests/exclude.txt are always left out.
#
# Getting xfstests (not part of this repository, never committed here):
#   clone the xfstests sources somewhere outside this repository, install
#   the Debian packages its README lists for building and running it (the
#   compiler and autotools, xfslibs-dev, uuid-dev, libacl1-dev, libaio-dev,
#   libcap-dev, libgdbm-dev, liburing-dev, xfsprogs, e2fsprogs, attr, acl,
#   quota, fio, dbench, psmisc, bc, gawk, sqlite3, uuid-runtime, python3)
#   and run `make` at its top.  Point XFSTESTS_DIR at that directory; it is
#   used in place (./check is run there), nothing is installed from it.
#
# Environment:
#   XFSTESTS_DIR    the built xfstests tree (required)
#   ORDFS_BUILD     the ordfs build directory (default: build/ of this repo)
#   XFSTESTS_WORK   where images, mount points and results go
#                   (default /var/tmp/ordfs-xfstests; emptied at start)
#   ORDFS_XFSTESTS_SIZE     size of each image (default 4G; sparse files)
#   ORDFS_XFSTESTS_TIMEOUT  seconds one test may run before the watchdog
#                   kills it, and everything it started (default 900); the
#                   test is then reported failed and listed in
#                   $XFSTESTS_WORK/timeouts.txt
#
# What it does, as root:
#   - copies this build's ordfs, mkfs.ordfs, fsck.ordfs and umount.ordfs
#     into $XFSTESTS_WORK/bin, so a rebuild during the run changes nothing;
#   - makes two images with mkfs.ordfs, TEST and SCRATCH, and mounts them
#     the way xfstests does for FSTYP=fuse: mount -t fuse.ordfs IMAGE DIR;
#   - installs, for the length of the run, three links in /sbin (mount(8)
#     and umount(8) look for helpers there only, and run them with their
#     own PATH): /sbin/mount.fuse.ordfs -> a small wrapper generated in
#     $XFSTESTS_WORK/bin (it calls libfuse's mount.fuse3 with the copied
#     daemon's absolute path, so mount.fuse3 handles the options exactly as
#     for an installed ordfs, dev/suid included), and /sbin/umount.ordfs,
#     /sbin/umount.fuse.ordfs -> the copied umount helper (so umount waits
#     until the daemon has closed the image, and the next mount finds it
#     free).  A different file already at one of those paths is moved aside
#     and put back at exit;
#   - creates the users xfstests' README asks for (fsgqa, fsgqa2,
#     123456-fsgqa, and the group fsgqa) if they are missing; they stay;
#   - runs ./check with HOST_OPTIONS pointing at a generated local.config
#     (from tests/xfstests/local.config.in) and RESULT_BASE in the work
#     directory, under a watchdog that bounds each test;
#   - afterwards unmounts both images, runs fsck.ordfs -fn on each, and
#     writes $XFSTESTS_WORK/summary.txt: one line per test, its status
#     (pass, fail, notrun) and, for notrun, xfstests' reason.
#
# Remount: mount -o remount (xfstests' _scratch_remount ro) reaches the
# mount helper, which runs the daemon's binary with 'remount': it asks the
# running daemon to remount and sets the kernel's flags
# (design/remount-shutdown.md, "Remount"), as for
# ext4.
#
# Exit status: 0 if check ran and every test passed or was not run, 1 if
# some failed, 2 if the run could not be set up.
set -u

HERE=$(dirname "$(readlink -f "$0")")
REPO=$(readlink -f "$HERE/../..")
die() { echo "run.sh: $*" >&2; exit 2; }
# unmount_retrying: an unmount tried again while the mount is busy
. "$REPO/tests/cli/lib.sh"

[ "$(id -u)" = 0 ] || die "must run as root (mount, mknod, users)"
[ -c /dev/fuse ] || die "/dev/fuse is missing"
[ -x /sbin/mount.fuse3 ] || die "no /sbin/mount.fuse3 (Debian package fuse3)"
XFSTESTS_DIR=$(readlink -f "${XFSTESTS_DIR:?set XFSTESTS_DIR to a built xfstests tree}")
[ -x "$XFSTESTS_DIR/check" ] && [ -x "$XFSTESTS_DIR/ltp/fsstress" ] ||
	die "$XFSTESTS_DIR is not a built xfstests tree (no check or ltp/fsstress)"
BUILD=$(readlink -f "${ORDFS_BUILD:-$REPO/build}")
WORK=${XFSTESTS_WORK:-/var/tmp/ordfs-xfstests}
SIZE=${ORDFS_XFSTESTS_SIZE:-4G}
TIMEOUT=${ORDFS_XFSTESTS_TIMEOUT:-900}

declare -A BUILT=([ordfs]=src/ordfs [mkfs.ordfs]=tools/mkfs.ordfs
	[fsck.ordfs]=tools/fsck.ordfs [umount.ordfs]=tools/umount.ordfs)
for p in "${!BUILT[@]}"; do
	[ -x "$BUILD/${BUILT[$p]}" ] || die "$BUILD/${BUILT[$p]} is missing (build ordfs first)"
done

# --- the work directory -----------------------------------------------------------
for m in "$WORK/test" "$WORK/scratch"; do
	mountpoint -q "$m" 2>/dev/null && die "$m is still mounted (an earlier run?); unmount it first"
done
rm -rf "$WORK"
mkdir -p "$WORK/bin" "$WORK/test" "$WORK/scratch" "$WORK/results" || die "cannot make $WORK"
WORK=$(readlink -f "$WORK")
BIN=$WORK/bin
for p in "${!BUILT[@]}"; do
	cp "$BUILD/${BUILT[$p]}" "$BIN/$p" || die "cannot copy $p"
done
{
	echo "ordfs build: $BUILD"
	# the sources this build was configured from (meson-info), and their commit
	src=$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$BUILD/meson-info/meson-info.json" 2>/dev/null)
	echo "ordfs sources: ${src:-unknown}" \
		"$(git -C "${src:-/nonexistent}" describe --always --dirty 2>/dev/null ||
			cat "${src:-/nonexistent}/COMMIT" 2>/dev/null)"
	echo "xfstests: $XFSTESTS_DIR $(git -C "$XFSTESTS_DIR" rev-parse --short HEAD 2>/dev/null)"
	echo "kernel: $(uname -r)"
	echo "started: $(date -u '+%F %T UTC')"
} >"$WORK/run-info.txt"

# The mount helper mount(8) runs for -t fuse.ordfs (see the header).
cat >"$BIN/mount.fuse.ordfs" <<EOF
#!/bin/bash
# generated by tests/xfstests/run.sh: mount.fuse.ordfs IMAGE DIR -o OPTIONS
src=\$1 dir=\$2
shift 2
exec /sbin/mount.fuse3 "$BIN/ordfs#\$src" "\$dir" "\$@"
EOF
chmod +x "$BIN/mount.fuse.ordfs"

# --- /sbin links for the length of the run -------------------------------------------
declare -a LINKED=() SAVED=()
link_helper() { # link_helper TARGET DEST
	if [ -e "$2" ] || [ -L "$2" ]; then
		mv "$2" "$2.ordfs-xfstests-saved" && SAVED+=("$2") || die "cannot move $2 aside"
	fi
	ln -s "$1" "$2" && LINKED+=("$2") || die "cannot link $2"
}
WATCHDOG=
cleanup() {
	[ -n "$WATCHDOG" ] && kill "$WATCHDOG" 2>/dev/null
	local m p
	for m in "$WORK/scratch" "$WORK/test"; do
		mountpoint -q "$m" && umount "$m" 2>/dev/null || true
		mountpoint -q "$m" && umount -l "$m"
	done
	for p in "${LINKED[@]}"; do rm -f "$p"; done
	for p in "${SAVED[@]}"; do mv "$p.ordfs-xfstests-saved" "$p"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
link_helper "$BIN/mount.fuse.ordfs" /sbin/mount.fuse.ordfs
link_helper "$BIN/umount.ordfs" /sbin/umount.ordfs
link_helper "$BIN/umount.ordfs" /sbin/umount.fuse.ordfs

# --- users xfstests expects ------------------------------------------------------
getent group fsgqa >/dev/null || groupadd fsgqa
id fsgqa >/dev/null 2>&1 || useradd -m -g fsgqa fsgqa
id fsgqa2 >/dev/null 2>&1 || useradd -m fsgqa2
id 123456-fsgqa >/dev/null 2>&1 || useradd 123456-fsgqa

# --- images and config -----------------------------------------------------------
"$BIN/mkfs.ordfs" -q "$WORK/test.img" "$SIZE" || die "mkfs.ordfs of the TEST image failed"
"$BIN/mkfs.ordfs" -q "$WORK/scratch.img" "$SIZE" || die "mkfs.ordfs of the SCRATCH image failed"
sed -e "s|@WORK@|$WORK|g" -e "s|@HERE@|$HERE|g" "$HERE/local.config.in" >"$WORK/local.config"
# check's -E takes "test # comment" lines; give it bare names
sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$HERE/exclude.txt" >"$WORK/exclude.list"

# --- the watchdog: one test may run at most TIMEOUT seconds ---------------------------
# check runs each test as `/bin/bash .../tests/DIR/NNN` somewhere below it; a test
# past the limit is killed with everything below it, by process id.
descendants() { # descendants PID: PID and every process below it
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1"); do descendants "$c"; done
}
watchdog() {
	local check_pid=$1 pid ppid age name
	while kill -0 "$check_pid" 2>/dev/null; do
		sleep 10
		for pid in $(descendants "$check_pid"); do
			name=$( { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null |
				grep -oE '^/bin/bash ([^ ]*/)?tests/[a-z0-9]+/[0-9]+' | sed 's|.*tests/||')
			[ -n "$name" ] || continue
			age=$(ps -o etimes= -p "$pid" | tr -d ' ')
			[ -n "$age" ] && [ "$age" -gt "$TIMEOUT" ] || continue
			echo "$name killed after ${age} s" >>"$WORK/timeouts.txt"
			kill -KILL $(descendants "$pid") 2>/dev/null
		done
	done
}

# --- run -------------------------------------------------------------------------
if [ $# -eq 0 ]; then
	set -- -g generic/quick
fi
echo "run.sh: ordfs $BUILD, xfstests $XFSTESTS_DIR, work $WORK, per-test limit ${TIMEOUT}s"
cd "$XFSTESTS_DIR" || die "cannot cd to $XFSTESTS_DIR"
HOST_OPTIONS=$WORK/local.config RESULT_BASE=$WORK/results \
	./check -E "$WORK/exclude.list" "$@" >"$WORK/check.out" 2>&1 &
CHECK_PID=$!
watchdog "$CHECK_PID" &
WATCHDOG=$!
tail -n +1 -f --pid="$CHECK_PID" "$WORK/check.out"
wait "$CHECK_PID"

# --- after: unmount, fsck, summary ----------------------------------------------------
cd /
for m in "$WORK/scratch" "$WORK/test"; do
	mountpoint -q "$m" && unmount_retrying umount "$m"
done
for img in test scratch; do
	if "$BIN/fsck.ordfs" -fn "$WORK/$img.img" >"$WORK/fsck-$img.txt" 2>&1; then
		echo "fsck.ordfs -fn $img.img: clean" | tee -a "$WORK/run-info.txt"
	else
		echo "fsck.ordfs -fn $img.img: exit $? (see fsck-$img.txt)" | tee -a "$WORK/run-info.txt"
	fi
done
echo "finished: $(date -u '+%F %T UTC')" >>"$WORK/run-info.txt"

# One line per test: NAME STATUS [reason]
RES=$WORK/results
: >"$WORK/summary.txt"
for t in $(grep -o '^[a-z]*/[0-9]*' "$WORK/check.out" | sort -u); do
	if [ -f "$RES/$t.notrun" ]; then
		echo "$t notrun $(head -1 "$RES/$t.notrun")"
	elif [ -f "$RES/$t.out.bad" ] || grep -q "^Failures:.* $t\b" "$WORK/check.out" ||
		grep -q "^$t killed" "$WORK/timeouts.txt" 2>/dev/null; then
		echo "$t fail"
	else
		echo "$t pass"
	fi
done >"$WORK/summary.txt"
awk '{n[$2]++} END {printf "run.sh: %d pass, %d fail, %d notrun\n", n["pass"], n["fail"], n["notrun"]}' \
	"$WORK/summary.txt" | tee -a "$WORK/run-info.txt"
! grep -q ' fail$' "$WORK/summary.txt"
