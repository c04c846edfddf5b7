#!/bin/bash
# test_mkfs.sh - mkfs.ordfs from the command line.
#
# Usage: test_mkfs.sh MKFS_BINARY
#
# Checks what a user sees: an image is created with the size asked for; -n
# writes nothing; an existing ordfs or another filesystem's signature is
# not overwritten without -F; every malformed option is one line on stderr,
# a non-zero exit and an untouched image; --help and --version exit 0.
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MKFS=$(readlink -f "${1:?usage: test_mkfs.sh MKFS_BINARY}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

silently() { "$@" >/dev/null; }

digest() { sha256sum "$1" | cut -d' ' -f1; }
size_of() { stat -c %s "$1"; }
# Bytes [off, off+len) of a file as lowercase hex without spaces.
hex_at() { od -An -tx1 -j "$2" -N "$3" "$1" | tr -d ' \n'; }
is_ordfs() { [ "$(hex_at "$1" 0 4)" = "4f524453" ]; }

# run_refused DESCRIPTION FILE ARGS...: the run must exit non-zero with
# exactly one line on stderr and leave FILE as it was (or absent).
run_refused() {
	local what=$1 file=$2 before=absent after=absent
	shift 2
	[ -e "$file" ] && before=$(digest "$file")
	local rc=0
	"$MKFS" "$@" >out.txt 2>err.txt || rc=$?
	[ -e "$file" ] && after=$(digest "$file")
	local lines
	lines=$(wc -l <err.txt)
	if [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && [ "$before" = "$after" ] &&
		grep -q '^mkfs.ordfs: ' err.txt; then
		pass "$what (exit $rc: $(cat err.txt))"
	else
		fail "$what (exit $rc, $lines stderr lines, image $([ "$before" = "$after" ] && echo unchanged || echo CHANGED))"
		sed 's/^/      /' err.txt
	fi
}

# ---- creating an image ----------------------------------------------------

check "creates a new image of the given size" "$MKFS" -q new.img 32M
check "  the file is exactly 32 MiB" [ "$(size_of new.img)" -eq $((32 << 20)) ]
check "  it starts with the ordfs superblock" is_ordfs new.img
# Backup superblock in the last 4 KiB block: same first 1024 bytes.
backup_equals_primary() {
	is_ordfs "$1" && [ "$(hex_at "$1" 0 1024)" = "$(hex_at "$1" $(($(size_of "$1") - 4096)) 1024)" ]
}
check "  the backup superblock equals the primary" backup_equals_primary new.img

check "plain number SIZE means bytes" "$MKFS" -q bytes.img 8388608
check "  8388608 bytes" [ "$(size_of bytes.img)" -eq 8388608 ]

check "lower-case suffix k" "$MKFS" -q -b 1024 small.img 2048k
check "  2 MiB" [ "$(size_of small.img)" -eq $((2 << 20)) ]

# A given UUID and label end up in the superblock (offsets 120 and 136).
check "-U and -L" "$MKFS" -q -U 0123abcd-4567-89ef-0123-456789abcdef -L mylabel \
	-E mount_opts=noatime,commit=10 -e remount-ro uuid.img 16M
check "  UUID at offset 120" [ "$(hex_at uuid.img 120 16)" = "0123abcd456789ef0123456789abcdef" ]
check "  label at offset 136" [ "$(hex_at uuid.img 136 8)" = "$(printf mylabel | od -An -tx1 | tr -d ' \n')00" ]
check "  mount options at offset 168" \
	[ "$(hex_at uuid.img 168 16)" = "$(printf noatime,commit=10 | od -An -tx1 -N16 | tr -d ' \n')" ]
check "  errors=remount-ro at offset 112" [ "$(hex_at uuid.img 112 4)" = "02000000" ]

# An existing smaller file is extended to SIZE; a larger one keeps its size
# and the filesystem uses SIZE.
truncate -s 4M grow.img
check "extends a smaller file to SIZE" "$MKFS" -q grow.img 12M
check "  now 12 MiB" [ "$(size_of grow.img)" -eq $((12 << 20)) ]
truncate -s 20M big.img
check "SIZE below the file size" "$MKFS" -q big.img 10M
check "  file keeps 20 MiB" [ "$(size_of big.img)" -eq $((20 << 20)) ]
check "  block count 2560 at offset 24" [ "$(hex_at big.img 24 8)" = "000a000000000000" ]

truncate -s 16M whole.img
check "no SIZE: uses the whole file" "$MKFS" -q whole.img
check "  block count 4096" [ "$(hex_at whole.img 24 8)" = "0010000000000000" ]

out=$("$MKFS" -b 2048 -N 5000 -J size=4 print.img 64M) || fail "geometry run failed"
check "prints the geometry" grep -q '^Block size: *2048$' <<<"$out"
check "  with the journal size asked for" grep -q '^Journal: *2048 blocks (4 MiB)' <<<"$out"
check "  and the inodes (rounded to whole table blocks)" grep -q '^Inodes: *5000$' <<<"$out"
check "-q prints nothing" [ -z "$("$MKFS" -q quiet.img 8M)" ]
check "  and still makes the image" is_ordfs quiet.img

# ---- -n writes nothing ----------------------------------------------------

before=$(digest new.img)
out=$("$MKFS" -n new.img) || fail "-n failed"
check "-n on an existing ordfs exits 0" [ -n "$out" ]
check "  and says -F would be needed" grep -q 'needs -F' <<<"$out"
check "  image unchanged" [ "$(digest new.img)" = "$before" ]
check "-n with a SIZE for a new file" silently "$MKFS" -n nothing.img 64M
check "  creates no file" [ ! -e nothing.img ]

# ---- refusing to destroy ----------------------------------------------------

run_refused "refuses an existing ordfs without -F" new.img new.img
grep -q 'ordfs' err.txt && pass "  names what it found" || fail "  names what it found"
run_refused "refuses an existing ordfs, with SIZE too" new.img new.img 32M
old_uuid=$(hex_at new.img 120 16)
check "-F overwrites it" "$MKFS" -q -F new.img
check "  with a new UUID" [ "$(hex_at new.img 120 16)" != "$old_uuid" ]

truncate -s 8M fake-ext4.img
printf '\123\357' | dd of=fake-ext4.img bs=1 seek=1080 conv=notrunc status=none
run_refused "refuses an ext4 signature without -F" fake-ext4.img fake-ext4.img
grep -q 'ext' err.txt && pass "  names ext2/3/4" || fail "  names ext2/3/4"
check "-F overwrites it" "$MKFS" -q -F fake-ext4.img
check "  now ordfs" is_ordfs fake-ext4.img

truncate -s 8M fake-xfs.img
printf 'XFSB' | dd of=fake-xfs.img bs=1 conv=notrunc status=none
run_refused "refuses an XFS signature" fake-xfs.img fake-xfs.img
truncate -s 8M fake-luks.img
printf 'LUKS\272\276' | dd of=fake-luks.img bs=1 conv=notrunc status=none
run_refused "refuses a LUKS header" fake-luks.img fake-luks.img
truncate -s 8M fake-swap.img
printf 'SWAPSPACE2' | dd of=fake-swap.img bs=1 seek=4086 conv=notrunc status=none
run_refused "refuses swap space" fake-swap.img fake-swap.img
truncate -s 8M fake-btrfs.img
printf '_BHRfS_M' | dd of=fake-btrfs.img bs=1 seek=65600 conv=notrunc status=none
run_refused "refuses a btrfs signature" fake-btrfs.img fake-btrfs.img

# ---- malformed input: one line, exit non-zero, nothing touched -------------

# A blank image a valid run would happily format: proves the refusals
# below happen before anything is written.
truncate -s 8M blank.img
run_refused "-b 3000" blank.img -b 3000 blank.img
run_refused "-b 131072" blank.img -b 131072 blank.img
run_refused "-b abc" blank.img -b abc blank.img
run_refused "-J size=0" blank.img -J size=0 blank.img
run_refused "-J size=abc" blank.img -J size=abc blank.img
run_refused "-J device=x" blank.img -J device=x blank.img
run_refused "-J size too big for the image" blank.img -J size=7 blank.img
run_refused "-U not-a-uuid" blank.img -U not-a-uuid blank.img
run_refused "-U with a bad hex digit" blank.img -U 0123abcd-4567-89ef-0123-456789abcdeg blank.img
run_refused "-E unknown key" blank.img -E stride=4 blank.img
run_refused "-E empty" blank.img -E '' blank.img
run_refused "-e bogus" blank.img -e bogus blank.img
run_refused "-L longer than 32 bytes" blank.img -L 0123456789abcdef0123456789abcdefX blank.img
run_refused "-N 0" blank.img -N 0 blank.img
run_refused "-N too many for the image" blank.img -N 1000000 blank.img
run_refused "unknown option" blank.img -Z blank.img
run_refused "option without its argument" blank.img blank.img -b
run_refused "missing IMAGE" blank.img
run_refused "bad SIZE" blank.img blank.img 12X
run_refused "SIZE zero" blank.img blank.img 0
run_refused "extra argument" blank.img blank.img 8M extra
run_refused "image too small" tiny.img tiny.img 100K
check "  no file left behind" [ ! -e tiny.img ]
run_refused "no SIZE for a missing image" missing.img missing.img
run_refused "a directory is not an image" blank.img "$WORK"

# A size the host filesystem cannot give a file (ext4: 16 TiB less a
# block): refused, and the file this run created is not left behind.
rc=0
"$MKFS" -q huge.img 17T >out.txt 2>err.txt || rc=$?
if [ "$rc" -ne 0 ]; then
	check "17T refused by the host: one line on stderr" [ "$(wc -l <err.txt)" -eq 1 ]
	check "17T refused by the host: no file left behind" [ ! -e huge.img ]
else
	check "17T accepted by the host: the file has that size" [ "$(size_of huge.img)" -eq $((17 << 40)) ]
	rm -f huge.img
fi
check "blank image still all zeros" cmp -s blank.img <(head -c $((8 << 20)) /dev/zero)

# ---- help and version -----------------------------------------------------

check "--help exits 0" silently "$MKFS" --help
check "  prints the usage" grep -q '^Usage: mkfs.ordfs' <("$MKFS" --help)
check "-h exits 0" silently "$MKFS" -h
check "--version exits 0" silently "$MKFS" --version
check "  prints the version" grep -qE '^mkfs.ordfs \(ordfs\) [0-9]+\.[0-9]+' <("$MKFS" --version)

echo "$((CHECKS - FAILS)) of $CHECKS checks passed"
[ "$FAILS" -eq 0 ]
