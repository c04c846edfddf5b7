# shellcheck shell=bash
# targets.sh - the targets of bench/run: check, set up, remount, sync,
# tear down.  Sourced by bench/run; needs WORK (the work directory), BUILD
# (the ordfs build directory) and IMG_SIZE (e.g. 2G); for ordfs-ref also
# REF_BUILD (that revision's build directory) and REF_NAME (its short hash).
#
#   host         a plain directory on the host filesystem: the reference
#   ordfs        a fresh image from mkfs.ordfs, mounted by the ordfs daemon
#                (requests over io_uring when the kernel offers it: bench/run
#                turns enable_uring on for the run, URING=asis leaves it)
#   ordfs-dev    the same over /dev/fuse (-o io_uring=off): the transports
#                side by side in one run
#   ordfs-ref    the same, with mkfs.ordfs, the daemon and ordfsctl of another
#                revision (bench/run --ref REV, built in WORK): "before" next
#                to "after" in one run; only with --ref
#   ext4         kernel ext4 on an image file, mount -o loop
#   fuse2fs      the same kind of ext4 image, served by fuse2fs (FUSE)
#   passthrough  libfuse's passthrough_ll example (-o cache=always) over a
#                directory of the host filesystem: the FUSE ceiling, what
#                any FUSE daemon costs over the host with nothing of its own
#   nbd          ordfs on an NBD export: nbdkit's file plugin serves an image
#                file on a Unix socket, through its delay filter, which adds
#                NBD_DELAY (default 1ms) to every read and write request (a
#                link to another machine); not in the default set
#
# ORDFS_OPTS (default empty) are -o options for the ordfs daemon, e.g.
# ORDFS_OPTS=writeback_cache to measure that option against the default.
#
# Every image has IMG_SIZE bytes and lives in WORK, next to the host
# directory and passthrough's backing directory.  What is mounted is
# recorded as files in WORK/state, so the EXIT trap and the workloads'
# subshells all see the same picture.

# shellcheck disable=SC2034 # used by bench/run
TARGETS_ALL=(host ordfs ordfs-dev ordfs-ref ext4 fuse2fs passthrough nbd)
export NBD_DELAY=${NBD_DELAY:-1ms}
NBD_SOCK=$WORK/nbd.sock
NBD_URI="nbd+unix:///?socket=$NBD_SOCK"

target_label() {
	case $1 in
	host) echo "host dir" ;;
	ordfs) echo "ordfs" ;;
	ordfs-dev) echo "ordfs /dev/fuse" ;;
	ordfs-ref) echo "ordfs@${REF_NAME:-?}" ;;
	ext4) echo "ext4 (loop)" ;;
	fuse2fs) echo "fuse2fs" ;;
	passthrough) echo "passthrough_ll (FUSE ceiling)" ;;
	nbd) echo "ordfs over NBD (+$NBD_DELAY per request)" ;;
	esac
}

target_dir() { # the directory the workloads use
	case $1 in
	host) echo "$WORK/host" ;;
	*) echo "$WORK/$1.mnt" ;;
	esac
}

target_is_fuse() { [ "$1" = ordfs ] || [ "$1" = ordfs-dev ] || [ "$1" = ordfs-ref ] || [ "$1" = fuse2fs ] || [ "$1" = passthrough ] || [ "$1" = nbd ]; }

target_build() { # the ordfs build directory of an ordfs TARGET (ordfs, ordfs-ref, nbd)
	case $1 in
	ordfs-ref) echo "${REF_BUILD:?ordfs-ref needs REF_BUILD (bench/run --ref REV)}" ;;
	*) echo "$BUILD" ;;
	esac
}

# passthrough_ll is built at run time from the example source Debian ships
# with libfuse3-dev (never copied into the repository), into BUILD/ceiling/
PASSTHROUGH_BIN=$BUILD/ceiling/passthrough_ll

passthrough_source() { # the passthrough_ll.c that libfuse3-dev installed, if any
	local f
	f=$(dpkg -L libfuse3-dev 2>/dev/null | grep -m1 -E '/passthrough_ll\.c(\.gz)?$' || true)
	if [ -z "$f" ]; then
		for f in /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c{,.gz} ""; do
			[ ! -e "$f" ] || break
		done
	fi
	echo "$f"
}

passthrough_build() { # build PASSTHROUGH_BIN if missing or older than its source
	local src dir exdir
	src=$(passthrough_source)
	[ -n "$src" ] || {
		echo "no passthrough_ll.c (the examples of Debian package libfuse3-dev)" >&2
		return 1
	}
	dir=$(dirname "$PASSTHROUGH_BIN")
	exdir=$(dirname "$src")
	mkdir -p "$dir"
	[ ! -x "$PASSTHROUGH_BIN" ] || [ "$src" -nt "$PASSTHROUGH_BIN" ] || return 0
	if [ "${src%.gz}" != "$src" ]; then # compressed examples: unpack them here
		zcat "$src" >"$dir/passthrough_ll.c"
		if [ -e "$exdir/passthrough_helpers.h.gz" ]; then
			zcat "$exdir/passthrough_helpers.h.gz" >"$dir/passthrough_helpers.h"
		fi
		src=$dir/passthrough_ll.c
	fi
	# shellcheck disable=SC2046 # pkg-config's flags are words
	${CC:-cc} -Wall -O2 -I"$exdir" $(pkg-config fuse3 --cflags) "$src" \
		-o "$PASSTHROUGH_BIN" $(pkg-config fuse3 --libs) || {
		echo "${CC:-cc} failed on $src (exit $?)" >&2
		rm -f "$PASSTHROUGH_BIN"
		return 1
	}
}

target_check() { # prints why TARGET cannot run here; prints nothing if it can
	case $1 in
	host) ;;
	ordfs | ordfs-dev | ordfs-ref)
		if [ ! -c /dev/fuse ]; then
			echo "no /dev/fuse"
		elif ! command -v fusermount3 >/dev/null; then
			echo "no fusermount3 (Debian package fuse3)"
		elif [ "$1" = ordfs-ref ] && [ ! -x "${REF_BUILD:-/nonexistent}/src/ordfs" ]; then
			echo "ordfs@${REF_NAME:-?} was not built (build-ref.log): $(tail -1 "$WORK/logs/build-ref.log" 2>/dev/null)"
		fi
		;;
	ext4)
		if [ "$(id -u)" -ne 0 ]; then
			echo "mounting a loop device needs root"
		elif ! command -v mkfs.ext4 >/dev/null; then
			echo "no mkfs.ext4 (Debian package e2fsprogs)"
		elif ! grep -qw ext4 /proc/filesystems && ! modprobe ext4 2>/dev/null; then
			echo "the kernel has no ext4"
		elif ! losetup -f >/dev/null 2>&1; then
			echo "no free loop device (losetup -f: $(losetup -f 2>&1 | head -1))"
		fi
		;;
	fuse2fs)
		if ! command -v fuse2fs >/dev/null; then
			echo "fuse2fs is not installed (Debian package fuse2fs)"
		elif [ ! -c /dev/fuse ]; then
			echo "no /dev/fuse"
		fi
		;;
	nbd)
		if [ ! -c /dev/fuse ]; then
			echo "no /dev/fuse"
		elif ! command -v nbdkit >/dev/null; then
			echo "nbdkit is not installed (Debian package nbdkit)"
		fi
		;;
	passthrough)
		if [ ! -c /dev/fuse ]; then
			echo "no /dev/fuse"
		elif ! command -v fusermount3 >/dev/null; then
			echo "no fusermount3 (Debian package fuse3)"
		elif [ ! -x "$PASSTHROUGH_BIN" ]; then
			echo "passthrough_ll was not built (passthrough-build.log): $(tail -1 "$WORK/logs/passthrough-build.log" 2>/dev/null)"
		fi
		;;
	esac
}

wait_mounted() { # wait_mounted DIR PID: up to 20 s, while process PID lives
	local _
	for _ in $(seq 200); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

target_mount() { # mount TARGET's existing image on its directory
	local t=$1 img="$WORK/$1.img" mnt
	mnt=$(target_dir "$t")
	case $t in
	host) ;;
	ordfs | ordfs-dev | ordfs-ref)
		# returns once the mount is live, then the daemon logs to syslog
		local opts=${ORDFS_OPTS:-}
		[ "$t" != ordfs-dev ] || opts="io_uring=off${opts:+,$opts}"
		"$(target_build "$t")/src/ordfs" "$img" "$mnt" ${opts:+-o "$opts"} </dev/null \
			>>"$WORK/logs/$t.log" 2>&1 || {
			echo "$(target_label "$t") did not mount: $(tail -1 "$WORK/logs/$t.log")" >&2
			return 1
		}
		;;
	nbd)
		# -f: its pid is ours to wait for at unmount (the owner record,
		# not a flock, says the export is free)
		"$BUILD/src/ordfs" "$NBD_URI" "$mnt" -f ${ORDFS_OPTS:+-o "$ORDFS_OPTS"} </dev/null \
			>>"$WORK/logs/nbd.log" 2>&1 &
		echo $! >"$WORK/state/nbd.pid"
		if ! wait_mounted "$mnt" $!; then
			echo "ordfs over NBD did not mount: $(tail -1 "$WORK/logs/nbd.log")" >&2
			return 1
		fi
		;;
	ext4)
		mount -o loop "$img" "$mnt" 2>>"$WORK/logs/ext4.log" || {
			echo "mount -o loop failed: $(tail -1 "$WORK/logs/ext4.log")" >&2
			return 1
		}
		;;
	fuse2fs)
		# as root no -o fakeroot is needed; -f keeps it in the foreground
		# so its pid is ours to wait for at unmount
		local opts=()
		[ "$(id -u)" -eq 0 ] || opts=(-o fakeroot)
		fuse2fs "$img" "$mnt" -f "${opts[@]}" </dev/null >>"$WORK/logs/fuse2fs.log" 2>&1 &
		echo $! >"$WORK/state/fuse2fs.pid"
		if ! wait_mounted "$mnt" $!; then
			echo "fuse2fs did not mount: $(tail -1 "$WORK/logs/fuse2fs.log")" >&2
			return 1
		fi
		;;
	passthrough)
		# over WORK/passthrough.src, a directory of the host filesystem;
		# -f as fuse2fs, so that its pid is ours to wait for at unmount
		"$PASSTHROUGH_BIN" -f -o source="$WORK/passthrough.src",cache=always "$mnt" \
			</dev/null >>"$WORK/logs/passthrough.log" 2>&1 &
		echo $! >"$WORK/state/passthrough.pid"
		if ! wait_mounted "$mnt" $!; then
			echo "passthrough_ll did not mount: $(tail -1 "$WORK/logs/passthrough.log")" >&2
			return 1
		fi
		;;
	esac
	touch "$WORK/state/$t.mounted"
}

target_unmount() { # unmount TARGET if mounted and wait until its image is closed
	local t=$1 img="$WORK/$1.img" mnt pid _
	mnt=$(target_dir "$t")
	[ -e "$WORK/state/$t.mounted" ] || return 0
	case $t in
	ordfs | ordfs-dev | ordfs-ref)
		if mountpoint -q "$mnt"; then
			fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || true
		fi
		# the daemon writes back, commits and closes the image, then the lock is free
		flock -w 60 "$img" true || echo "$t: the daemon did not release $img in 60 s" >&2
		;;
	ext4)
		if mountpoint -q "$mnt"; then
			umount "$mnt" 2>/dev/null || umount -l "$mnt" || true
		fi
		# mount -o loop detaches its device at umount; make sure of it
		local dev
		for dev in $(losetup -j "$img" 2>/dev/null | cut -d: -f1); do
			losetup -d "$dev" || true
		done
		;;
	fuse2fs | passthrough | nbd)
		if mountpoint -q "$mnt"; then
			if [ "$t" != fuse2fs ]; then
				fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || true
			else
				umount "$mnt" 2>/dev/null || umount -l "$mnt" || true
			fi
		fi
		pid=$(cat "$WORK/state/$t.pid" 2>/dev/null || true)
		for _ in $(seq 600); do
			if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			sleep 0.1
		done
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			echo "$t (pid $pid) did not exit in 60 s; killing it" >&2
			kill "$pid" || true
		fi
		rm -f "$WORK/state/$t.pid"
		;;
	esac
	rm -f "$WORK/state/$t.mounted"
}

target_setup() { # make TARGET's fresh image and mount it
	local t=$1 img="$WORK/$1.img"
	mkdir -p "$(target_dir "$t")"
	case $t in
	host) ;;
	ordfs | ordfs-dev | ordfs-ref) "$(target_build "$t")/tools/mkfs.ordfs" -q "$img" "$IMG_SIZE" ;;
	ext4 | fuse2fs)
		truncate -s "$IMG_SIZE" "$img"
		# inode tables and journal written now, so no lazy-init thread
		# writes in the background during the measurements
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
		;;
	passthrough) mkdir -p "$WORK/passthrough.src" ;;
	nbd)
		truncate -s "$IMG_SIZE" "$img"
		nbdkit --unix "$NBD_SOCK" --pidfile "$WORK/state/nbdkit.pid" --filter=delay \
			file "$img" delay-read="$NBD_DELAY" delay-write="$NBD_DELAY"
		local _
		for _ in $(seq 50); do [ -S "$NBD_SOCK" ] && break; sleep 0.1; done
		"$BUILD/tools/mkfs.ordfs" -q "$NBD_URI"
		;;
	esac
	target_mount "$t"
}

nbd_server_stop() { # stops the nbd target's server, if it runs
	local pid
	pid=$(cat "$WORK/state/nbdkit.pid" 2>/dev/null || true)
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -f "$WORK/state/nbdkit.pid"
}

target_remount() { # unmount and mount again (drops a FUSE daemon's caches)
	target_unmount "$1"
	target_mount "$1"
}

target_sync_cmd() { # the one command that makes all of TARGET durable, if any
	local dir
	dir=$(target_dir "$1")
	case $1 in
	host | ext4) echo "sync -f $dir" ;; # syncfs(2)
	ordfs | ordfs-dev | ordfs-ref | nbd) echo "$(target_build "$1")/tools/ordfsctl sync $dir" ;;
	fuse2fs) ;; # syncfs does not reach FUSE daemons, and fuse2fs has no other
	# passthrough_ll (no -o writeback) writes through to its backing
	# directory at once: syncfs of that directory's filesystem is the call
	passthrough) echo "sync -f $WORK/passthrough.src" ;;
	esac
}

drop_caches() { # write everything back, then drop the host's clean caches
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		echo "cannot drop caches (not root): cold reads are not cold" >&2
	fi
}

# Flush counters, for B10's flushes per fsync.  target_flush_counter TARGET
# prints "COUNT<tab>SOURCE", or "n/a<tab>WHY" when there is no counter:
#   ordfs, ordfs-ref, nbd  the flushes the daemon's flush guard issued to its
#                          image (ordfsctl stats --json: flushes.issued)
#   ext4                   the flush requests its loop device completed
#   host                   the flush requests the disk that holds the host
#                          directory completed: every process's, not only
#                          the workload's (the machine may be shared)
#   fuse2fs, passthrough   none: no device of their own
# The device counters are the 'flush requests completed' field of
# /proc/diskstats (Linux 5.5 and later).  The kernel counts a flush on the
# whole disk, not on a partition; and a device that takes no flushes
# ("write through" in queue/write_cache) rightly counts none.

diskstats_flushes() { # diskstats_flushes NAME: device NAME's flushes, or nothing
	awk -v d="$1" '$3 == d && NF >= 20 { print $19 }' /proc/diskstats
}

block_disk() { # block_disk DIR: the disk (its name in /proc/diskstats) that holds DIR
	local src majmin name=
	src=$(findmnt -n -o SOURCE --target "$1" | head -1)
	majmin=$(findmnt -n -o MAJ:MIN --target "$1" | head -1 | tr -d ' ')
	if [ -b "$src" ]; then
		name=$(basename "$(readlink -f "$src")")
	elif [ -e "/sys/dev/block/$majmin" ]; then
		name=$(basename "$(readlink -f "/sys/dev/block/$majmin")")
	fi
	[ -n "$name" ] && [ -e "/sys/class/block/$name" ] || return 1
	# a partition: its disk is the parent directory in sysfs
	if [ -e "/sys/class/block/$name/partition" ]; then
		name=$(basename "$(dirname "$(readlink -f "/sys/class/block/$name")")")
	fi
	echo "$name"
}

target_flush_counter() { # target_flush_counter TARGET: "COUNT<tab>SOURCE" or "n/a<tab>WHY"
	local t=$1 dev n cache
	case $t in
	ordfs | ordfs-dev | ordfs-ref | nbd)
		n=$("$(target_build "$t")/tools/ordfsctl" stats --json "$(target_dir "$t")" 2>/dev/null |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["flushes"]["issued"])' 2>/dev/null) ||
			n=
		if [ -n "$n" ]; then
			printf '%s\t%s\n' "$n" "ordfsctl stats: flushes issued by the flush guard"
		else
			printf 'n/a\t%s\n' "ordfsctl stats --json gave no flushes.issued"
		fi
		return 0
		;;
	ext4)
		dev=$(losetup -j "$WORK/ext4.img" 2>/dev/null | head -1 | cut -d: -f1)
		[ -n "$dev" ] || {
			printf 'n/a\t%s\n' "no loop device holds ext4.img"
			return 0
		}
		dev=$(basename "$dev")
		;;
	host)
		dev=$(block_disk "$(target_dir host)") || {
			printf 'n/a\t%s\n' "no block device under $(target_dir host) ($(findmnt -n -o SOURCE,FSTYPE --target "$(target_dir host)" | head -1))"
			return 0
		}
		;;
	*)
		printf 'n/a\t%s\n' "no device of its own"
		return 0
		;;
	esac
	n=$(diskstats_flushes "$dev")
	cache=$(cat "/sys/block/$dev/queue/write_cache" 2>/dev/null || echo "?")
	if [ -z "$n" ]; then
		printf 'n/a\t%s\n' "/proc/diskstats has no flush count for $dev (Linux before 5.5)"
	else
		printf '%s\t%s\n' "$n" "/proc/diskstats: $dev (write cache: $cache)"
	fi
}
