#!/bin/bash
# test_tune_dump.sh - tune.ordfs and dump.ordfs from the command line.
#
# Usage: test_tune_dump.sh MKFS FSCK TUNE DUMP CORRUPT [ORDFS]
#
# Checks: every tune.ordfs option (-L, -e, -o with ^removal and
# overriding, -E mount_opts=) changes what dump.ordfs and tune.ordfs -l
# show, and fsck.ordfs -fn exits 0 after each change; invalid options,
# labels, errors values and mount option lists are refused with a non-zero
# exit, one line on stderr, and the image byte-identical; so is an image
# whose lock is held (flock(1), and the real daemon when /dev/fuse is
# usable), whose journal needs replay (a patched journal superblock, and a
# daemon killed with -9 after an fsync), that has an error recorded, or
# that uses unknown feature bits; dump.ordfs shows all of it, reads a
# locked or mounted image with a warning, and its counts of inodes and
# blocks in use agree with fsck.ordfs's summary line.  The daemon mounts
# an image whose defaults tune.ordfs set.
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MKFS=$(readlink -f "${1:?usage: test_tune_dump.sh MKFS FSCK TUNE DUMP CORRUPT [ORDFS]}")
FSCK=$(readlink -f "${2:?}")
TUNE=$(readlink -f "${3:?}")
DUMP=$(readlink -f "${4:?}")
CORRUPT=$(readlink -f "${5:?}")
ORDFS=${6:+$(readlink -f "$6")}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-tune.XXXXXX")
DAEMON_PID=
cleanup() {
	if [ -n "$DAEMON_PID" ]; then
		fusermount3 -u -z "$WORK/mnt" 2>/dev/null || true
		kill -9 "$DAEMON_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

status_of() { local rc=0; "$@" >out.txt 2>err.txt || rc=$?; echo "$rc"; }
# The value of one "Name:   value" line of a listing on stdin.
field() { sed -n "s/^$1: *//p"; }
dump_field() { "$DUMP" -h img 2>/dev/null | field "$1"; }
list_field() { "$TUNE" -l img 2>/dev/null | field "$1"; }
fsck_clean() { "$FSCK" -fn img >/dev/null 2>&1; }

# tuned DESCRIPTION FIELD VALUE TUNE-ARGS...: the change works, both
# listings show it, and the image still checks clean.
tuned() {
	local what=$1 name=$2 want=$3
	shift 3
	check "$what: exit 0" test "$(status_of "$TUNE" "$@" img)" -eq 0
	check "$what: dump.ordfs shows $name '$want'" test "$(dump_field "$name")" = "$want"
	check "$what: tune.ordfs -l shows it" test "$(list_field "$name")" = "$want"
	check "$what: fsck.ordfs -fn exits 0" fsck_clean
}

# refused DESCRIPTION WORD COMMAND...: non-zero exit, one line on stderr
# containing WORD, and the image byte for byte as it was.
refused() {
	local what=$1 word=$2
	shift 2
	cp img before.img
	local rc
	rc=$(status_of "$@")
	check "$what: refused (exit $rc)" test "$rc" -ne 0
	check "$what: one line on stderr" test "$(wc -l <err.txt)" -eq 1
	check "$what: the message says '$word'" grep -q -- "$word" err.txt
	check "$what: image byte-identical" cmp -s img before.img
}

# Sets a 32-bit field of the superblock (or, with "journal", of the
# journal superblock) in both sector copies, checksums recomputed: the
# states a crash or an error leaves, made without a mount.
have_python=false
command -v python3 >/dev/null 2>&1 && have_python=true
patch_u32() { # patch_u32 OFFSET VALUE [journal]
	python3 - img "$@" <<'EOF'
import struct, sys

def crc32c(crc, data):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc

path, off, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0)
journal = len(sys.argv) > 4
with open(path, "r+b") as f:
    sb = f.read(512)
    bs = 1 << struct.unpack_from("<I", sb, 20)[0]
    seed = struct.unpack_from("<I", sb, 272)[0] if journal else 0xFFFFFFFF
    base = bs * struct.unpack_from("<Q", sb, 40)[0] if journal else 0
    f.seek(base)
    raw = bytearray(f.read(1024))
    for copy in (0, 512):
        struct.pack_into("<I", raw, copy + off, val & 0xFFFFFFFF)
        struct.pack_into("<I", raw, copy + 508, crc32c(seed, raw[copy:copy + 508]))
    f.seek(base)
    f.write(raw)
EOF
}

# dump.ordfs's counts against fsck.ordfs's summary line ("N inodes (...),
# M blocks in use").
counts_agree() {
	local summary inodes blocks
	summary=$("$FSCK" -fn img 2>/dev/null | tail -n 1)
	inodes=$(sed -n 's/^img: \([0-9]*\) inodes.*/\1/p' <<<"$summary")
	blocks=$(sed -n 's/.*, \([0-9]*\) blocks in use.*/\1/p' <<<"$summary")
	"$DUMP" img >dump.txt 2>/dev/null || return 1
	[ -n "$inodes" ] && [ -n "$blocks" ] &&
		[ "$(field "Inodes in use" <dump.txt | cut -d' ' -f1)" = "$inodes" ] &&
		[ "$(field "Blocks in use" <dump.txt | cut -d' ' -f1)" = "$blocks" ]
}

# ---- --help, --version, usage ----------------------------------------------

for tool in "$TUNE" "$DUMP"; do
	name=$(basename "$tool")
	check "$name --help: exit 0" test "$(status_of "$tool" --help)" -eq 0
	check "$name --help: a usage line" grep -q "^Usage: $name" out.txt
	check "$name --version: exit 0" test "$(status_of "$tool" --version)" -eq 0
	check "$name --version: names the program" grep -q "^$name (ordfs) [0-9]" out.txt
	check "$name without IMAGE: exit 1" test "$(status_of "$tool")" -eq 1
	check "$name without IMAGE: one line" test "$(wc -l <err.txt)" -eq 1
	check "$name -Z: exit 1" test "$(status_of "$tool" -Z img)" -eq 1
done
check "tune.ordfs -l on a missing image: exit 1" test "$(status_of "$TUNE" -l missing.img)" -eq 1
check "tune.ordfs: the message names the image" grep -q "^tune.ordfs: missing.img: " err.txt
check "dump.ordfs on a missing image: exit 1" test "$(status_of "$DUMP" missing.img)" -eq 1
check "dump.ordfs: the message names the image" grep -q "^dump.ordfs: missing.img: " err.txt
check "tune.ordfs --help documents ^removal" grep -q -- "-o \[^\]OPTION" <<<"$("$TUNE" --help)"

# ---- dump.ordfs on a fresh image ----------------------------------------

"$MKFS" -q -L first img 64M
check "dump.ordfs: exit 0" test "$(status_of "$DUMP" img)" -eq 0
check "dump.ordfs: the label" test "$(field "Filesystem volume name" <out.txt)" = first
check "dump.ordfs: a UUID" grep -Eq "^Filesystem UUID: +[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$" out.txt
check "dump.ordfs: state clean" test "$(field "Filesystem state" <out.txt)" = clean
check "dump.ordfs: errors behaviour" test "$(field "Errors behaviour" <out.txt)" = continue
check "dump.ordfs: no mount options" test "$(field "Default mount options" <out.txt)" = "(none)"
check "dump.ordfs: block size" test "$(field "Block size" <out.txt)" = 4096
check "dump.ordfs: block count" grep -q "^Block count: *16384 (64 MiB)$" out.txt
for name in "Inode count" "Free blocks" "Free inodes" "Filesystem created" \
	"Last mount time" "Last checked" "Mount count" "Last error" "Journal size" \
	"Journal start" "Journal sequence" "Journal errno" "Journal needs replay" \
	"Data blocks used" "Data blocks free" "Inodes in use" "Inodes free"; do
	check "dump.ordfs: shows '$name'" grep -q "^$name: " out.txt
done
check "dump.ordfs: a readable mkfs time" \
	grep -Eq "^Filesystem created: +[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} [0-9]{4}$" out.txt
check "dump.ordfs: last error none" test "$(field "Last error" <out.txt)" = none
check "dump.ordfs: the journal needs no replay" test "$(field "Journal needs replay" <out.txt)" = no
check "dump.ordfs: the area table" grep -q "^  inode table  *256  blocks " out.txt
check "dump.ordfs: free counts agree with the bitmaps" \
	test "$(field "Superblock free counts" <out.txt)" = "agree with the bitmaps"
check "dump.ordfs -h: exit 0" test "$(status_of "$DUMP" -h img)" -eq 0
check "dump.ordfs -h: the journal header" grep -q "^Journal sequence: " out.txt
check "dump.ordfs -h: no area use" bash -c '! grep -q "Area use" out.txt'
check "dump.ordfs: counts agree with fsck.ordfs (fresh image)" counts_agree
"$CORRUPT" populate img >/dev/null
check "dump.ordfs: counts agree with fsck.ordfs (populated image)" counts_agree
check "dump.ordfs: populated image has more inodes in use" \
	test "$(field "Inodes in use" <dump.txt | cut -d' ' -f1)" -gt 2
cp img before.img
"$DUMP" img >/dev/null 2>&1
check "dump.ordfs: the image is not written" cmp -s img before.img

# ---- the label ----------------------------------------------------------

tuned "-L data" "Filesystem volume name" data -L data
tuned "-L of 32 bytes" "Filesystem volume name" 12345678901234567890123456789012 \
	-L 12345678901234567890123456789012
tuned "-L ''" "Filesystem volume name" "<none>" -L ""
refused "-L of 33 bytes" "longer than 32 bytes" "$TUNE" -L 123456789012345678901234567890123 img

# ---- errors behaviour ---------------------------------------------------

for e in remount-ro abort continue; do
	tuned "-e $e" "Errors behaviour" "$e" -e "$e"
done
tuned "-e panic (as mke2fs)" "Errors behaviour" abort -e panic
refused "-e bogus" "invalid errors behaviour" "$TUNE" -e bogus img
refused "-e without a value" "needs an argument" "$TUNE" img -e

# ---- default mount options ----------------------------------------------

tuned "-o noatime" "Default mount options" noatime -o noatime
tuned "-o commit=10,nodiratime" "Default mount options" noatime,commit=10,nodiratime \
	-o commit=10,nodiratime
tuned "-o commit=30 replaces commit=10" "Default mount options" noatime,nodiratime,commit=30 \
	-o commit=30
tuned "-o relatime replaces noatime" "Default mount options" nodiratime,commit=30,relatime \
	-o relatime
tuned "-o ^nodiratime" "Default mount options" commit=30,relatime -o ^nodiratime
tuned "-o ^commit removes commit=30" "Default mount options" relatime -o ^commit
tuned "-o nobarrier,^relatime in one list" "Default mount options" nobarrier -o nobarrier,^relatime
tuned "-o barrier replaces nobarrier" "Default mount options" barrier -o barrier
tuned "two -o in order" "Default mount options" data=writeback,errors=remount-ro \
	-o ^barrier,data=writeback -o errors=remount-ro
tuned "-E mount_opts= replaces the list" "Default mount options" flush_error=report,commit=5 \
	-E mount_opts=flush_error=report,commit=5
opts64=commit=5,flush_error=ignore,errors=remount-ro,nobarrier,lazytime
check "a 64-byte list for the next checks" test ${#opts64} -eq 64
tuned "-E mount_opts= of 64 bytes" "Default mount options" "$opts64" -E "mount_opts=$opts64"
refused "-E mount_opts= of 65 bytes" "longer than 64 bytes" "$TUNE" -E "mount_opts=$opts64," img
refused "-o growing the list past 64 bytes" "longer than 64 bytes" "$TUNE" -o strictatime img
tuned "-E mount_opts= (empty) clears" "Default mount options" "(none)" -E mount_opts=
refused "-o bogus" "unknown mount option 'bogus'" "$TUNE" -o bogus img
refused "-o commit=soon" "bad commit interval" "$TUNE" -o commit=soon img
refused "-o data=sometimes" "bad data mode" "$TUNE" -o data=sometimes img
refused "-o allow_other (not an ordfs option)" "not an ordfs option" "$TUNE" -o allow_other img
refused "-o comment=hi (mount(8) syntax, not an ordfs option)" "not an ordfs option" "$TUNE" -o comment=hi img
refused "-o x-systemd.automount (not an ordfs option)" "not an ordfs option" "$TUNE" -o x-systemd.automount img
refused "-o helper=ordfs (not an ordfs option)" "not an ordfs option" "$TUNE" -o helper=ordfs img
refused "-o ro (not an ordfs option)" "not an ordfs option" "$TUNE" -o ro img
refused "-o with an empty option" "empty mount option" "$TUNE" -o noatime,,commit=5 img
refused "-o ^ alone" "bad option removal" "$TUNE" -o ^ img
refused "-o ^noatime when not set" "not among the default mount options" "$TUNE" -o ^noatime img
refused "-E mount_opts=bogus" "unknown mount option" "$TUNE" -E mount_opts=bogus img
refused "-E nosuchkey=1" "unknown extended option" "$TUNE" -E nosuchkey=1 img
refused "a bad option among good ones changes nothing" "unknown mount option" \
	"$TUNE" -L new -e abort -o noatime,bogus img
refused "nothing to do" "nothing to do" "$TUNE" img
refused "two images" "unexpected argument" "$TUNE" -L x img img

# ---- refusals that depend on the image ------------------------------------

"$MKFS" -q -F img 64M
refused "lock held (flock(1), as a daemon holds it)" "in use" flock img "$TUNE" -L x img
check "dump.ordfs on a locked image: exit 0" test "$(flock img "$DUMP" img >out.txt 2>err.txt; echo $?)" -eq 0
check "dump.ordfs on a locked image: says the numbers may be stale" grep -q "may be stale" err.txt
check "tune.ordfs -l on a locked image: exit 0 (only reads)" \
	test "$(flock img "$TUNE" -l img >out.txt 2>err.txt; echo $?)" -eq 0
head -c 1M /dev/urandom >img
refused "not an ordfs image" "bad magic" "$TUNE" -L x img
"$MKFS" -q -F img 64M
dd if=/dev/zero of=img bs=1024 count=1 conv=notrunc status=none
refused "a damaged superblock" "run fsck.ordfs" "$TUNE" -L x img
check "dump.ordfs on a damaged superblock: exit 1" test "$(status_of "$DUMP" img)" -eq 1
check "dump.ordfs on a damaged superblock: names the backup" grep -q "fsck.ordfs -b 16383" err.txt

if $have_python; then
	"$MKFS" -q -F img 64M
	patch_u32 108 3 # state CLEAN|ERROR
	patch_u32 276 5 # last_error_code EIO
	refused "an error recorded" "run fsck.ordfs first" "$TUNE" -L x img
	check "dump.ordfs: state clean with errors" test "$(dump_field "Filesystem state")" = "clean with errors"
	check "dump.ordfs: the last error" grep -q "^errno 5 (Input/output error)" <<<"$(dump_field "Last error")"
	check "fsck.ordfs -fy clears the error (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
	tuned "after fsck, -L works" "Filesystem volume name" fixed -L fixed

	"$MKFS" -q -F img 64M
	patch_u32 28 1 journal # journal start: the log is not empty
	refused "journal needs replay" "journal needs replay" "$TUNE" -o noatime img
	check "the refusal says to run fsck.ordfs" grep -q "run fsck.ordfs first" err.txt
	check "dump.ordfs: the journal needs replay" grep -q "^yes" <<<"$(dump_field "Journal needs replay")"
	check "dump.ordfs: replay would apply nothing" \
		grep -q "^Replay would apply: *0 transactions" <<<"$("$DUMP" img)"
	check "fsck.ordfs -fy replays (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
	tuned "after replay, -o works" "Default mount options" noatime -o noatime

	"$MKFS" -q -F img 64M
	patch_u32 40 -5 journal # the journal's recorded errno
	refused "the journal recorded an error" "error recorded" "$TUNE" -e abort img
	check "dump.ordfs: the journal errno" grep -q "^-5 (Input/output error" <<<"$(dump_field "Journal errno")"
	check "fsck.ordfs -fy clears it (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
	tuned "after fsck, -e works" "Errors behaviour" abort -e abort

	"$MKFS" -q -F img 64M
	patch_u32 16 0x100 # an ro_compat feature this version does not know
	refused "an unknown feature bit" "does not know" "$TUNE" -L x img
	check "dump.ordfs: shows the unknown feature" test "$(dump_field "Filesystem features")" = "ro_compat 0x100"
else
	skip_part "error, replay and feature refusals made by patching the image: no python3"
fi

"$MKFS" -q -F img 64M
# A byte of the block bitmap's payload changed: its checksum fails.
printf '\x5a' | dd of=img bs=1 seek=$((1025 * 4096 + 24 + 1000)) conv=notrunc status=none
check "dump.ordfs: a damaged block bitmap: exit 1" test "$(status_of "$DUMP" img)" -eq 1
check "dump.ordfs: says which bitmap block" \
	grep -q "1 block bitmap block failed verification, the first at block 1025" out.txt
check "dump.ordfs: the rest is still printed" grep -q "^Inodes in use: " out.txt

# ---- dump.ordfs -i: one inode, its file flags ----------------------------

"$MKFS" -q -F -U 6f726466-7300-4000-8000-000000000001 img 32M
"$CORRUPT" populate img >/dev/null
check "dump.ordfs -i 2: the root directory" \
	bash -c '"$1" -i 2 img | grep -q "^Type: *directory$"' _ "$DUMP"
check "dump.ordfs -i 2: no file flags" bash -c '"$1" -i 2 img | grep -q "^File flags: *- (0x0)$"' _ "$DUMP"
"$CORRUPT" img flags-type 1 >/dev/null # inode 10 (a file) gets D and d
check "dump.ordfs -i: a file's flags as chattr letters" \
	bash -c '"$1" -i 10 img | grep -q "^File flags: *Dd (0x10040)$"' _ "$DUMP"
check "dump.ordfs -i: says D is not for a file" \
	bash -c '"$1" -i 10 img | grep -q "not for a regular file"' _ "$DUMP"
check "dump.ordfs -i of a free inode: exit 1" test "$(status_of "$DUMP" -i 4000 img)" -eq 1
check "dump.ordfs -i 0: a usage error" test "$(status_of "$DUMP" -i 0 img)" -eq 1
"$FSCK" -fy img >/dev/null 2>&1 || true # exit 1: corrected
check "after fsck.ordfs -fy: d stays, D goes" \
	bash -c '"$1" -i 10 img | grep -q "^File flags: *d (0x40)$"' _ "$DUMP"
check "after fsck.ordfs -fy: the superblock has the feature" \
	test "$(dump_field "Filesystem features")" = "file_flags"

# ---- with the real daemon -------------------------------------------------

fuse_reason=
if [ -z "$ORDFS" ]; then
	fuse_reason="the daemon was not built (no libfuse3)"
elif ! command -v fusermount3 >/dev/null 2>&1; then
	fuse_reason="no fusermount3"
elif ! (: <>/dev/fuse) 2>/dev/null; then
	fuse_reason="cannot open /dev/fuse"
fi
mounted() { grep -q " $WORK/mnt fuse" /proc/mounts; }
start_daemon() {
	"$ORDFS" img mnt -f >daemon.log 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 1 100); do
		mounted && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
stop_daemon() {
	fusermount_u mnt
	wait "$DAEMON_PID" || true
	DAEMON_PID=
	flock -w 30 img true
}

if [ -n "$fuse_reason" ]; then
	skip_part "checks with a mounted daemon: $fuse_reason"
else
	mkdir -p mnt
	"$MKFS" -q -F img 64M
	"$TUNE" -o noatime,commit=10 -e remount-ro -L mounted img >/dev/null
	check "the daemon mounts with the defaults tune.ordfs set" start_daemon
	check "while mounted: tune.ordfs refused" test "$(status_of "$TUNE" -L other img)" -eq 1
	check "while mounted: the message says the image is in use" grep -q "in use" err.txt
	check "while mounted: dump.ordfs exits 0" test "$(status_of "$DUMP" img)" -eq 0
	check "while mounted: dump.ordfs says the numbers may be stale" grep -q "may be stale" err.txt
	check "while mounted: dump.ordfs says not clean" test "$(field "Filesystem state" <out.txt)" = "not clean"
	mkdir mnt/d
	for i in 1 2 3; do
		dd if=/dev/urandom of="mnt/d/f$i" bs=4k count=25 conv=fsync status=none
	done
	stop_daemon
	check "after unmount: the label set while mounted was not written" \
		test "$(dump_field "Filesystem volume name")" = mounted
	check "after unmount: dump.ordfs counts agree with fsck.ordfs" counts_agree
	check "after unmount: fsck.ordfs -fn exits 0" fsck_clean

	start_daemon
	dd if=/dev/urandom of=mnt/d/f4 bs=4k count=8 conv=fsync status=none
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null || true
	DAEMON_PID=
	fusermount3 -u -z mnt
	refused "after kill -9: journal needs replay" "journal needs replay" "$TUNE" -L x img
	check "after kill -9: dump.ordfs: the journal needs replay" \
		grep -q "^yes" <<<"$(dump_field "Journal needs replay")"
	check "after kill -9: dump.ordfs: at least one transaction would replay" \
		grep -Eq "^Replay would apply: *[1-9][0-9]* transaction" <<<"$("$DUMP" img)"
	check "after kill -9: fsck.ordfs -fy replays (exit 1)" test "$(status_of "$FSCK" -fy img)" -eq 1
	tuned "after replay: -L works" "Filesystem volume name" replayed -L replayed
	check "after replay: dump.ordfs counts agree with fsck.ordfs" counts_agree
fi

summary
