# lib.sh - what the NBD tests share (sourced, not run).
#
# Every test runs the real daemon and tools against a real nbdkit serving
# on a Unix socket in the test's own temporary directory ($WORK), so every
# URI, mount point and process of a test is found by that directory alone:
# the cleanup unmounts, kills and removes only what has $WORK in its name
# (other ordfs daemons on the machine are left alone).
#
# The checks and the counters come from tests/cli/lib.sh; skip() here
# prints "SKIP: reason" and exits 77 (meson's SKIP).
#
# Usage in a test: . lib.sh BUILD_DIR  (sets ORDFS MKFS FSCK TUNE DUMP CTL)
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

# pass/fail as in cli/lib.sh, with the seconds since the test started
# (the suite has a time budget: the log shows where it goes).
T_START=$EPOCHREALTIME
elapsed() { local now=$EPOCHREALTIME; printf '%6.1fs' "$(((${now/./} - ${T_START/./}) / 100000))e-1"; }
pass() { CHECKS=$((CHECKS + 1)); echo "ok    $(elapsed) $1"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "FAIL  $(elapsed) $1"; }
skip() { echo "SKIP: $1"; exit 77; }
skip_part() { echo "SKIP: $1"; }

BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")
ORDFS=$BUILD/src/ordfs
MKFS=$BUILD/tools/mkfs.ordfs
FSCK=$BUILD/tools/fsck.ordfs
TUNE=$BUILD/tools/tune.ordfs
DUMP=$BUILD/tools/dump.ordfs
CTL=$BUILD/tools/ordfsctl
for _b in "$ORDFS" "$MKFS" "$FSCK" "$TUNE" "$DUMP" "$CTL"; do
	[ -x "$_b" ] || { echo "FAIL  $_b is not built"; exit 1; }
done

# need_nbdkit [PLUGIN|--filter=FILTER ...]: skips without nbdkit or one of
# the plugins and filters named.
need_nbdkit() {
	command -v nbdkit >/dev/null 2>&1 || skip "nbdkit is missing (Debian package nbdkit)"
	local filterdir
	filterdir=$(nbdkit --dump-config 2>/dev/null | sed -n 's/^filterdir=//p')
	local p
	for p in "$@"; do
		case $p in
		--filter=*)
			[ -e "$filterdir/nbdkit-${p#--filter=}-filter.so" ] ||
				skip "nbdkit's ${p#--filter=} filter is missing"
			;;
		*)
			nbdkit --dump-plugin "$p" >/dev/null 2>&1 ||
				skip "nbdkit's $p plugin is missing"
			;;
		esac
	done
}

# need_fuse: skips without a usable /dev/fuse and fusermount3.
need_fuse() {
	[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is missing"
	command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 is missing (Debian package fuse3)"
}

# require DESCRIPTION COMMAND...: a check the rest of the test depends on
# (a mount, a server): on failure the test ends here, failed.
require() {
	local what=$1
	shift
	if "$@"; then
		pass "$what"
	else
		fail "$what (the test cannot go on)"
		summary
		exit 1
	fi
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-nbd.XXXXXX")
# A detached daemon's errors and last words (an internal-error line, a
# sanitizer report) go to its log too, not only to a syslog the machine
# may not run (the test hook in src/daemon/test_hooks.h); the cleanup
# prints the logs of a test that failed.
export ORDFS_TEST_LOG=$WORK/daemon.log

# ---- nbdkit -------------------------------------------------------------------

# nbd_uri NAME: the URI of server NAME's socket.
nbd_uri() { echo "nbd+unix:///?socket=$WORK/$1.sock"; }

# nbd_start NAME NBDKIT_ARGS...: starts nbdkit on $WORK/NAME.sock (it
# detaches once it listens and has written its pidfile).  Its messages go
# to $WORK/NAME.log.  0 once it serves.
nbd_start() {
	local name=$1
	shift
	local sock=$WORK/$name.sock pidf=$WORK/$name.pid
	rm -f "$sock" "$pidf" # nbdkit does not replace an old socket
	nbdkit --unix "$sock" --pidfile "$pidf" --log=stderr "$@" 2>>"$WORK/$name.log" || return 1
	for _ in $(seq 100); do
		[ -s "$pidf" ] && [ -S "$sock" ] && return 0
		sleep 0.05
	done
	return 1
}

# nbd_pid NAME: the server's pid.
nbd_pid() { cat "$WORK/$1.pid" 2>/dev/null; }

# nbd_stop NAME [SIGNAL]: stops the server (TERM by default) and waits for
# it to be gone.
nbd_stop() {
	local pid
	pid=$(nbd_pid "$1") || return 0
	[ -n "$pid" ] || return 0
	kill "-${2:-TERM}" "$pid" 2>/dev/null
	wait_gone "$pid" 20
	rm -f "$WORK/$1.pid"
}

# ---- processes ------------------------------------------------------------------

# running PID: PID exists and is not a zombie (a detached daemon's parent
# is whoever reaps orphans here, which may take its time).
running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	case ${stat:0:1} in Z | X) return 1 ;; esac
	return 0
}

# wait_gone PID SECONDS: 0 once PID has exited, 1 if it still runs then.
wait_gone() {
	for _ in $(seq $(($2 * 20))); do
		running "$1" || return 0
		sleep 0.05
	done
	! running "$1"
}

# daemon_pid URI: the pids of this build's ordfs daemons serving URI.
daemon_pid() {
	local p args
	for p in $(pgrep -x ordfs); do
		args=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | head -n 2) || continue
		[ "$args" = "$ORDFS"$'\n'"$1" ] && echo "$p"
	done
	return 0
}

# ---- mounts -----------------------------------------------------------------------

is_mounted() { grep -q " $1 fuse.ordfs " /proc/mounts; }
not_mounted() { ! is_mounted "$1"; }

# mount_nbd URI MNT [ORDFS_ARGS...]: the daemon, detached (it returns once
# the mount is live); its messages go to $WORK/daemon.log.
mount_nbd() {
	local uri=$1 mnt=$2
	shift 2
	mkdir -p "$mnt"
	"$ORDFS" "$uri" "$mnt" "$@" 2>>"$WORK/daemon.log"
}

# mount_fg URI MNT LOG [ORDFS_ARGS...]: the daemon in the foreground (-f)
# in the background of this shell, its stderr in LOG; FGPID is its pid.
# 0 once the mount is live, 1 if the daemon exited first or 20 s passed.
FGPID=
mount_fg() {
	local uri=$1 mnt=$2 log=$3
	shift 3
	mkdir -p "$mnt"
	"$ORDFS" "$uri" "$mnt" -f "$@" 2>"$log" &
	FGPID=$!
	for _ in $(seq 400); do
		# (the mount exists before the daemon serves it: stat waits)
		is_mounted "$mnt" && stat "$mnt" >/dev/null && return 0
		running "$FGPID" || return 1
		sleep 0.05
	done
	return 1
}

# umount_nbd URI MNT: unmounts and waits (60 s at most) until the daemon
# has exited, i.e. left the image clean and freed its owner record
# (fusermount3 does not wait for a FUSE daemon); the unmount is tried again
# while the kernel says the mount is busy (fusermount_u, cli/lib.sh).
umount_nbd() {
	local pids p
	pids=$(daemon_pid "$1")
	fusermount_u "$2" || return 1
	for p in $pids; do
		wait_gone "$p" 60 || return 1
	done
}

# ---- data -------------------------------------------------------------------------

# sums DIR: "sha256  name" lines of the regular files under DIR, sorted.
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

# wsync SRC DEST: copies SRC to DEST and fsyncs it (dd conv=fsync); stderr
# (dd's message naming the errno) is kept in $WORK/wsync.err.
wsync() { dd if="$1" of="$2" bs=64k conv=fsync status=none 2>"$WORK/wsync.err"; }

# fsync_fd FD: fsync(2) of this shell's open file FD (inherited by python3:
# the same open file description, so the error reporting of one open file
# is what is tested).  Prints OK or the errno's name; 0 only for OK.
fsync_fd() {
	python3 - "$1" <<'PY'
import errno, os, sys
try:
    os.fsync(int(sys.argv[1]))
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(1)
PY
}

# rc_of COMMAND...: prints the exit status of COMMAND (output discarded).
rc_of() {
	"$@" >/dev/null 2>&1
	echo $?
}

# ---- cleanup ------------------------------------------------------------------------

cleanup() {
	local m p pids=
	# Mounts under $WORK, lazily: a daemon stuck on a dead server must not
	# hold the test.
	for m in $(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts); do
		fusermount3 -u -z "$m" 2>/dev/null
	done
	# This test's daemons: their URIs name a socket under $WORK.
	for p in $(pgrep -x ordfs); do
		if tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | head -n 2 | grep -qF "socket=$WORK/"; then
			pids+=" $p"
		fi
	done
	for p in $pids; do wait_gone "$p" 5 || kill -9 "$p" 2>/dev/null; done
	# This test's servers: their pidfiles, if the pid is still an nbdkit
	# serving a socket under $WORK.
	pids=
	for p in "$WORK"/*.pid; do
		p=$(cat "$p" 2>/dev/null) || continue
		grep -qF "$WORK/" "/proc/$p/cmdline" 2>/dev/null && pids+=" $p"
	done
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait_gone "$p" 5 || kill -9 "$p" 2>/dev/null; done
	# The sh plugin's state directories (/tmp/nbdkitXXXXXX) that a server
	# killed with -9 left behind: those whose image is under $WORK.
	for p in /tmp/nbdkit*/file; do
		case $(readlink "$p") in "$WORK"/*) rm -rf "${p%/file}" ;; esac
	done
	if [ "${KEEP_WORK:-0}" = 1 ] || [ "$FAILS" -gt 0 ]; then
		echo "logs kept in $WORK"
		for p in "$WORK"/*.log; do
			[ -s "$p" ] || continue
			echo "--- $p (last 20 lines)"
			tail -n 20 "$p"
		done
		# the images are not needed to read the logs
		find "$WORK" -maxdepth 1 -name '*.img' -delete
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
