#!/bin/sh
# file_plugin.sh - an nbdkit sh plugin (nbdkit-sh-plugin(3)) that serves an
# image file like nbdkit's file plugin, but whose flush can be made to fail
# or be missing altogether:
#
#   nbdkit sh tests/nbd/file_plugin.sh file=IMAGE [flush=yes|no]
#          [fail-flush-file=TRIGGER] [slow-flush-file=TRIGGER]
#          [flush-log=LOG]
#
#   flush=no              the export offers no NBD_CMD_FLUSH (can_flush is
#                         false), and no FUA
#   fail-flush-file=PATH  while PATH exists every flush fails with EIO
#                         (nothing is synced); otherwise a flush is an
#                         fsync of IMAGE
#   slow-flush-file=PATH  while PATH exists a flush first creates
#                         PATH.started, then takes 5 s (a server that can
#                         be killed in the middle of a flush)
#   flush-log=PATH        one line per flush: "ok" or "EIO"
#
# nbdkit runs the script once per request; the configuration is kept in
# nbdkit's $tmpdir.
# shellcheck disable=SC2154 # tmpdir is set by nbdkit
case "$1" in
config)
	case "$2" in
	file) ln -sf "$(realpath "$3")" "$tmpdir/file" ;;
	flush) echo "$3" >"$tmpdir/flush" ;;
	fail-flush-file) echo "$3" >"$tmpdir/trigger" ;;
	slow-flush-file) echo "$3" >"$tmpdir/slow" ;;
	flush-log) echo "$3" >"$tmpdir/flushlog" ;;
	*)
		echo "EINVAL unknown parameter $2" >&2
		exit 1
		;;
	esac
	;;
config_complete)
	[ -e "$tmpdir/file" ] || {
		echo "EINVAL file= is required" >&2
		exit 1
	}
	;;
thread_model) echo parallel ;;
open) echo handle ;;
get_size) stat -Lc %s "$tmpdir/file" ;;
can_write) exit 0 ;;
can_flush)
	[ "$(cat "$tmpdir/flush" 2>/dev/null)" = no ] && exit 3
	exit 0
	;;
can_fua)
	if [ "$(cat "$tmpdir/flush" 2>/dev/null)" = no ]; then echo none; else echo emulate; fi
	;;
can_cache) echo none ;;
can_trim | can_zero | can_extents | can_multi_conn | is_rotational) exit 3 ;;
pread)
	exec dd if="$tmpdir/file" iflag=skip_bytes,count_bytes skip="$4" count="$3" bs=1M status=none
	;;
pwrite)
	exec dd of="$tmpdir/file" oflag=seek_bytes seek="$4" conv=notrunc \
		iflag=fullblock,count_bytes count="$3" bs=1M status=none
	;;
flush)
	log=$(cat "$tmpdir/flushlog" 2>/dev/null)
	trigger=$(cat "$tmpdir/trigger" 2>/dev/null)
	slow=$(cat "$tmpdir/slow" 2>/dev/null)
	if [ -n "$slow" ] && [ -e "$slow" ]; then
		touch "$slow.started"
		sleep 5
	fi
	if [ -n "$trigger" ] && [ -e "$trigger" ]; then
		[ -n "$log" ] && echo EIO >>"$log"
		echo "EIO flush failed: $trigger exists" >&2
		exit 1
	fi
	sync "$tmpdir/file" || {
		echo "EIO fsync of the image failed" >&2
		exit 1
	}
	[ -n "$log" ] && echo ok >>"$log"
	exit 0
	;;
*) exit 2 ;;
esac
exit 0
