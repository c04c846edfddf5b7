#!/bin/bash
# test_mkfs_populate.sh - mkfs.ordfs -d DIR and -E root_owner (issue 26).
#
# Usage: test_mkfs_populate.sh MKFS FSCK DUMP [ORDFS]
#
# Checks:
#  - a tree with every kind of entry (a sparse file with a hole in the
#    middle and at the end, and others, hard links across directories, a
#    symlink (short and long), a FIFO, a socket, device nodes as root, odd
#    modes, old and pre-1970 times with nanoseconds, user./trusted./
#    security. xattrs, POSIX ACLs when setfacl is there, odd names, a
#    255-byte name, a path deeper than PATH_MAX, a lost+found to merge)
#    copied by mkfs.ordfs -d: exit 0, fsck.ordfs -fn clean, as many inodes
#    as the tree has (fsck's summary, dump.ordfs's free count), the root
#    inode owned as DIR is; and, as root with /dev/fuse, mounted with the
#    daemon (-o ro,noatime) and compared with the source entry by entry
#    (tree_manifest.py: contents, modes, owners, times, links, xattrs,
#    data ranges and st_blocks);
#  - a user's copy (run as `nobody` when the test runs as root): every
#    file is the user's, the rest as in the source;
#  - refusals, each a non-zero exit with one line naming the cause: a file
#    and a directory the user cannot read ("cannot read DIR/x:
#    Permission denied"), a tree larger than the image and one with more
#    files than inodes ("cannot copy DIR/x: No space left on device"), -d
#    on a missing directory or a file, and every malformed root_owner=
#    (the image untouched); after a failed copy no image is left that
#    looks valid (a new file is removed, an existing one has no
#    superblock);
#  - the root directory's owner: the caller's by default (root for root,
#    the user for a user: read from the root inode in the image), -E
#    root_owner=UID:GID, -E root_owner alone; lost+found stays root's.
#
# The user's runs need root (setpriv to uid 65534) or a non-root caller
# (then they run as the caller); root's parts (device nodes, owners kept,
# trusted. xattrs, the daemon mount) are skipped with a line saying why
# when not root.
set -eu
. "$(dirname "$(readlink -f "$0")")/lib.sh"

HERE=$(dirname "$(readlink -f "$0")")
MKFS=$(readlink -f "${1:?usage: test_mkfs_populate.sh MKFS FSCK DUMP [ORDFS]}")
FSCK=$(readlink -f "${2:?}")
DUMP=$(readlink -f "${3:?}")
ORDFS=${4:+$(readlink -f "$4")}
MANIFEST="$HERE/tree_manifest.py"
command -v python3 >/dev/null 2>&1 || skip "python3 is missing (it builds and reads the trees)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-populate.XXXXXX")
chmod 755 "$WORK" # the user's runs read trees in it
MOUNTED=
cleanup() {
	if [ -n "$MOUNTED" ]; then
		fusermount3 -u -z "$MOUNTED" 2>/dev/null || true
	fi
	chmod -R u+rwX "$WORK" 2>/dev/null # a user cannot empty readonly_dir
	rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

IS_ROOT=false
[ "$(id -u)" -eq 0 ] && IS_ROOT=true
# The user: nobody when root, else the caller.
if $IS_ROOT; then
	USER_UID=65534 USER_GID=65534
	as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
	command -v setpriv >/dev/null 2>&1 || skip "setpriv is missing (util-linux)"
else
	USER_UID=$(id -u) USER_GID=$(id -g)
	as_user() { "$@"; }
fi
mkdir user && chmod 755 user
$IS_ROOT && chown "$USER_UID:$USER_GID" user

quietly() { "$@" >/dev/null 2>&1; }
status_of() { local rc=0; "$@" >out.txt 2>err.txt || rc=$?; echo "$rc"; }
hex_at() { od -An -tx1 -j "$2" -N "$3" "$1" | tr -d ' \n'; }
is_ordfs() { [ "$(hex_at "$1" 0 4)" = "4f524453" ]; }
le32() { # le32 FILE OFFSET: a little-endian u32 as a decimal number
	local h
	h=$(hex_at "$1" "$2" 4)
	echo $((16#${h:6:2}${h:4:2}${h:2:2}${h:0:2}))
}
dump_field() { "$DUMP" -h "$1" 2>/dev/null | sed -n "s/^$2: *//p"; }
# inode_field IMAGE INO OFFSET: a u32 of an inode slot (FORMAT.md, Inodes:
# mode at 0 (u16), uid at 4, gid at 8); the inode table's first block and
# the block size come from dump.ordfs.
inode_field() {
	local bs table
	bs=$(dump_field "$1" "Block size")
	table=$(dump_field "$1" "Inode table" | sed -n 's/.* at block \([0-9]*\)$/\1/p')
	le32 "$1" $((table * bs + ($2 - 1) * 256 + $3))
}
owner_of_inode() { echo "$(inode_field "$1" "$2" 4):$(inode_field "$1" "$2" 8)"; }
mode_of_inode() { printf '%o' $(($(inode_field "$1" "$2" 0) & 0xffff)); }

# refused DESCRIPTION PATTERN COMMAND...: a non-zero exit and exactly one
# line on stderr, which matches the extended regular expression PATTERN.
refused() {
	local what=$1 pattern=$2 rc
	shift 2
	rc=$(status_of "$@")
	if [ "$rc" -ne 0 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -qE -- "$pattern" err.txt; then
		pass "$what (exit $rc: $(cat err.txt))"
	else
		fail "$what (exit $rc, $(wc -l <err.txt) stderr lines, want /$pattern/)"
		sed 's/^/      /' err.txt
	fi
}

# ---- the tree ----------------------------------------------------------------

HAVE_ACL=false
command -v setfacl >/dev/null 2>&1 && HAVE_ACL=true

# make_tree DIR ROOT_PARTS: every kind of entry; ROOT_PARTS "yes" adds what
# only root can make (device nodes, owners, trusted. and security. xattrs).
make_tree() {
	python3 - "$1" "$2" <<'EOF'
import os, socket, stat, sys
root, as_root = sys.argv[1], sys.argv[2] == "yes"
os.mkdir(root)
os.chdir(root)
def write_at(path, off, data):
    with open(path, "r+b" if os.path.exists(path) else "wb") as f:
        f.seek(off)
        f.write(data)
MiB = 1 << 20
# holes: in the middle and at the end; at the start; nothing but a hole
write_at("sparse", 0, b"A" * 4096)
write_at("sparse", MiB, b"B" * 4096)
os.truncate("sparse", 3 * MiB)
write_at("hole_first", 2 * MiB, b"tail" * 25)
open("only_hole", "wb").close()
os.truncate("only_hole", MiB)
open("empty", "wb").close()
write_at("big", 0, os.urandom(2 * MiB + MiB // 2 + 123))
# hard links across directories, three names
os.makedirs("sub/deeper")
write_at("linked", 0, b"one inode, three names\n")
os.link("linked", "sub/also_linked")
os.link("linked", "sub/deeper/third")
# symlinks: short (in the inode), long (in blocks), dangling, absolute
os.symlink("sparse", "sym")
os.symlink("x/" * 100 + "target", "long_sym")
os.symlink("nowhere", "dangling")
os.symlink("/etc/passwd", "absolute")
os.mkfifo("fifo", 0o640)
s = socket.socket(socket.AF_UNIX)
s.bind("sock")
s.close()
# odd modes
# (root reads a file whose owner may not; a user's copy could not)
for name, mode in (("setuid", 0o4755), ("setgid", 0o2750),
                   ("nothing", 0o000 if as_root else 0o400),
                   ("group_only", 0o060 if as_root else 0o460)):
    write_at(name, 0, name.encode())
    os.chmod(name, mode)
os.mkdir("sticky"); os.chmod("sticky", 0o1777)
os.mkdir("sgid_dir"); os.chmod("sgid_dir", 0o2775)
write_at("sgid_dir/inside", 0, b"in a set-group-ID directory\n")
os.mkdir("readonly_dir"); write_at("readonly_dir/kept", 0, b"kept\n")
os.chmod("readonly_dir", 0o555)
# odd names
for name in (b"with space", b"new\nline", b"tab\there", b"back\\slash", "\u00fcml\u00e4ut".encode(),
             b"-dash", b"*star?", b".hidden", b"\x01ctl\x7f", b"\xff\xfe not utf-8", b"n" * 255):
    write_at(name, 0, name)
# lost+found with something in it: merged into the new one
os.mkdir("lost+found", 0o700)
write_at("lost+found/found", 0, b"found\n")
# deeper than PATH_MAX (and than mkfs's kept descriptors)
fd = os.open(".", os.O_RDONLY)
for i in range(100):
    name = ("level%03d_" % i) + "d" * 52
    os.mkdir(name, dir_fd=fd)
    nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
with open(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
    f.write(b"at the bottom\n")
os.close(fd)
# xattrs
os.setxattr(b"with space", "user.comment", b"a file with a space in its name")
os.setxattr("sub", "user.on_a_dir", b"\x00\x01\xff binary")
os.setxattr(".", "user.on_the_root", b"root of the tree")
if as_root:
    os.setxattr("linked", "trusted.t", b"trusted value")
    os.setxattr("big", "security.s", b"security value")
    os.setxattr("sym", "trusted.on_symlink", b"symlink attr", follow_symlinks=False)
    os.mknod("chr", 0o620 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod("blk", 0o660 | stat.S_IFBLK, os.makedev(7, 200))
    os.mknod("chr_max", 0o600 | stat.S_IFCHR, os.makedev(4095, 1048575))
    for name, owner in (("linked", (1234, 5678)), ("sub", (42, 43)), ("sym", (7, 8)),
                        ("fifo", (65534, 65534)), ("sgid_dir/inside", (99, 100))):
        os.lchown(name, *owner)
    os.chown("sgid_dir", 5, 6)
    os.chown(".", 4321, 8765)
os.chmod(".", 0o750)
EOF
}

# acl_tree DIR: ACLs on a file and a default ACL on a directory, and a
# file made in it afterwards (inherits an access ACL).
acl_tree() {
	setfacl -m u:1000:rwx,g:100:r-x,m:rwx "$1/empty"
	mkdir "$1/acl_dir"
	setfacl -d -m u:1000:rwx,g:100:rx "$1/acl_dir"
	setfacl -m u:2000:r "$1/acl_dir"
	echo inherits >"$1/acl_dir/inherited"
}

# set_times DIR: odd-nanosecond times on everything, the deepest first
# (making an entry changes its directory's mtime): mtimes from 1960 (before
# the epoch), atimes after 2100.  An atime in the future is one no read of
# the source changes under relatime (reading a symlink does, and so does
# every read by a user, who cannot use O_NOATIME on root's files), so the
# source shows after the copy the atimes it had when it was copied.
set_times() {
	python3 - "$1" <<'EOF'
import os, sys
entries = []
def walk(fd, depth):
    for name in sorted(os.listdir(fd)):
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if os.path.stat.S_ISDIR(st.st_mode):
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            walk(sub, depth + 1)
            os.close(sub)
        entries.append((fd, name))
        i = len(entries)
        atime = 4102444800_123456789 + i * 86400_000000001      # from 2100
        mtime = -300000000_987654321 + i * 3600_000000007       # from 1960
        os.utime(name, ns=(atime, mtime), dir_fd=fd, follow_symlinks=False)
root = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
walk(root, 0)
os.utime(sys.argv[1], ns=(4234567890_111111111, 987654321_222222222))
EOF
}

ROOT_PARTS=no
$IS_ROOT && ROOT_PARTS=yes
make_tree tree "$ROOT_PARTS"
if $HAVE_ACL; then acl_tree tree; else skip_part "ACLs: setfacl is missing (Debian package acl)"; fi
set_times tree
$IS_ROOT || skip_part "device nodes, kept owners, trusted. and security. xattrs: not root"

# ---- the copy -------------------------------------------------------------------

python3 "$MANIFEST" tree >tree.manifest # before: as it was copied
check "mkfs.ordfs -d tree: exit 0" test "$(status_of "$MKFS" -q -d tree img 64M)" -eq 0
sed 's/^/      /' err.txt
check "  nothing on stderr" test ! -s err.txt
check "  fsck.ordfs -fn: clean" quietly "$FSCK" -fn img
tree_inodes=$(python3 "$MANIFEST" --count tree)
fsck_inodes=$("$FSCK" -fn img 2>/dev/null | sed -n 's/^img: \([0-9]*\) inodes.*/\1/p')
check "  fsck counts the tree's $tree_inodes inodes" test "$fsck_inodes" = "$tree_inodes"
used=$(($(dump_field img "Inode count") - $(dump_field img "Free inodes")))
check "  dump.ordfs: $tree_inodes inodes in use, and reserved inode 1" test "$used" -eq $((tree_inodes + 1))
want_owner="$(id -u):$(id -g)"
$IS_ROOT && want_owner=4321:8765
check "  the root inode is owned as DIR is ($want_owner)" test "$(owner_of_inode img 2)" = "$want_owner"
check "  and has DIR's mode" test "$(mode_of_inode img 2)" = 40750

# compare_mounted IMAGE MANIFEST_ARGS...: the daemon mounts IMAGE
# read-only, and what it shows must be the source's manifest exactly.
compare_mounted() {
	local image=$1 src_manifest=$2
	mkdir -p mnt
	if ! "$ORDFS" "$image" mnt -o ro,noatime >daemon.log 2>&1; then
		fail "the daemon mounts $image"
		sed 's/^/      /' daemon.log
		return
	fi
	MOUNTED=$WORK/mnt
	python3 "$MANIFEST" "${@:3}" mnt >copy.manifest 2>manifest.err || true
	check "  the copy's manifest was read" test ! -s manifest.err
	fusermount_u mnt
	MOUNTED=
	flock -w 30 "$image" true
	if diff "$src_manifest" copy.manifest >manifest.diff; then
		pass "  every entry arrived: $(wc -l <copy.manifest) entries the same through the daemon"
	else
		fail "  the copy differs from the source:"
		head -40 manifest.diff | sed 's/^/      /'
		sed 's/^/      /' manifest.err
	fi
}

fuse_reason=
if [ -z "$ORDFS" ]; then
	fuse_reason="no daemon given"
elif ! $IS_ROOT; then
	fuse_reason="not root"
elif [ ! -c /dev/fuse ]; then
	fuse_reason="no /dev/fuse"
elif ! command -v fusermount3 >/dev/null 2>&1; then
	fuse_reason="no fusermount3"
fi
if [ -z "$fuse_reason" ]; then
	compare_mounted img tree.manifest
	check "  still clean after the mount" quietly "$FSCK" -fn img
else
	skip_part "comparing the copy through the daemon: $fuse_reason"
fi

# ---- a user's copy: everything the user's -----------------------------------------

# What the user can read of the tree: a tree of its own, readable by all.
python3 - <<'EOF'
import os, socket
os.makedirs("utree/d")
open("utree/d/f", "w").write("user data\n")
os.link("utree/d/f", "utree/hard")
os.symlink("d/f", "utree/sym")
os.mkfifo("utree/fifo")
with open("utree/sparse", "wb") as f:
    f.seek(1 << 20)
    f.write(b"end")
os.setxattr("utree/d/f", "user.who", b"the user")
os.chmod("utree/d", 0o2755)
EOF
set_times utree
python3 "$MANIFEST" --owner "$USER_UID:$USER_GID" utree >utree.manifest
check "a user's mkfs.ordfs -d: exit 0" test "$(status_of as_user "$MKFS" -q -d utree user/img 32M)" -eq 0
sed 's/^/      /' err.txt
check "  fsck.ordfs -fn: clean" quietly "$FSCK" -fn user/img
check "  the root directory is the user's" test "$(owner_of_inode user/img 2)" = "$USER_UID:$USER_GID"
if [ -z "$fuse_reason" ]; then
	# utree has no lost+found: the copy's is mkfs's own
	compare_mounted user/img utree.manifest --drop-lost-found
else
	skip_part "comparing the user's copy through the daemon: $fuse_reason"
fi

ln -s utree utree_link
check "-d through a symlink to the tree" "$MKFS" -q -d utree_link/ linked.img 32M
check "  fsck.ordfs -fn: clean" quietly "$FSCK" -fn linked.img
check "  the same inodes" test "$("$FSCK" -fn linked.img 2>/dev/null | sed -n 's/^linked.img: \([0-9]*\) inodes.*/\1/p')" \
	= $(($(python3 "$MANIFEST" --count utree) + 1)) # and mkfs's lost+found

mkdir self && echo a >self/a
check "-d on the directory that holds the image" sh -c 'cd self && "$1" -q -d . img 16M' sh "$MKFS"
check "  the image is left out of the copy: root, lost+found and a" \
	test "$("$FSCK" -fn self/img 2>/dev/null | sed -n 's/^self\/img: \([0-9]*\) inodes.*/\1/p')" = 3

# ---- what cannot be copied ----------------------------------------------------------

mkdir -p bad/open && echo fine >bad/open/fine
echo secret >bad/open/secret
chmod 000 bad/open/secret # unreadable even to its owner without root
refused "an unreadable file" '^mkfs\.ordfs: cannot read bad/open/secret: Permission denied$' \
	as_user "$MKFS" -q -d bad user/unreadable.img 16M
check "  no image left behind" test ! -e user/unreadable.img
chmod 644 bad/open/secret
# a name with a newline and an escape character: still one line
odd=$'bad/open/new\nline \033[1mbold'
echo odd >"$odd" && chmod 000 "$odd"
refused "an unreadable file with control characters in its name" \
	'^mkfs\.ordfs: cannot read bad/open/new\\nline \\x1b\[1mbold: Permission denied$' \
	as_user "$MKFS" -q -d bad user/unreadable.img 16M
rm -f "$odd"
mkdir bad/private && echo hidden >bad/private/x && chmod 000 bad/private
refused "an unreadable directory" '^mkfs\.ordfs: cannot read bad/private: Permission denied$' \
	as_user "$MKFS" -q -d bad user/unreadable.img 16M
check "  no image left behind" test ! -e user/unreadable.img
# over an existing image: it must not be left looking valid
as_user "$MKFS" -q user/existing.img 16M
refused "an unreadable directory, over an existing image" 'cannot read bad/private: Permission denied$' \
	as_user "$MKFS" -q -F -d bad user/existing.img
check "  the image is left without a superblock" eval '! is_ordfs user/existing.img'
check "  and fsck.ordfs finds no filesystem" eval '! "$FSCK" -fn user/existing.img >/dev/null 2>&1'
chmod 755 bad/private && rm -rf bad/private

mkdir full && head -c $((3 << 20)) /dev/urandom >full/big
refused "a tree larger than the image" '^mkfs\.ordfs: cannot copy full/big: No space left on device$' \
	"$MKFS" -q -d full small.img 1M
check "  no image left behind" test ! -e small.img
mkdir many && for i in $(seq -w 1 40); do echo "$i" >"many/f$i"; done
refused "more files than inodes" '^mkfs\.ordfs: cannot copy many/f[0-9]+: No space left on device$' \
	"$MKFS" -q -N 16 -d many few.img 8M

truncate -s 8M blank.img
refused "-d on a missing directory" '^mkfs\.ordfs: cannot read missing: No such file or directory$' \
	"$MKFS" -q -F -d missing blank.img
refused "-d on a file" '^mkfs\.ordfs: cannot read blank\.img: Not a directory$' \
	"$MKFS" -q -F -d blank.img blank.img
check "  the image untouched" cmp -s blank.img <(head -c $((8 << 20)) /dev/zero)

# ---- root_owner --------------------------------------------------------------------

rm -f blank.img
truncate -s 8M blank.img
for value in abc 1: :2 : '' 1 1:2:3 1:2x x1:2 -1:2 1:-2 ' 1:2' 0x10:0 4294967295:0 0:4294967295 \
	99999999999999999999:0 1:2,stride=4; do
	refused "root_owner=$value refused" "^mkfs\.ordfs: .*(root_owner|stride)" \
		"$MKFS" -q -F -E "root_owner=$value" blank.img
done
check "  the image untouched by all of them" cmp -s blank.img <(head -c $((8 << 20)) /dev/zero)

check "root's mkfs.ordfs: exit 0" "$MKFS" -q rootless.img 8M
want="$(id -u):$(id -g)"
check "  the root directory is the caller's ($want)" test "$(owner_of_inode rootless.img 2)" = "$want"
check "-E root_owner=1234:5678" "$MKFS" -q -E root_owner=1234:5678 owned.img 8M
check "  the root directory is 1234:5678" test "$(owner_of_inode owned.img 2)" = 1234:5678
check "  lost+found stays root's" test "$(owner_of_inode owned.img 3)" = 0:0
check "  and 0700" test "$(mode_of_inode owned.img 3)" = 40700
check "  fsck.ordfs -fn: clean" quietly "$FSCK" -fn owned.img
check "-E root_owner=4294967294:0,mount_opts=noatime" \
	"$MKFS" -q -E root_owner=4294967294:0,mount_opts=noatime max.img 8M
check "  the root directory is 4294967294:0" test "$(owner_of_inode max.img 2)" = 4294967294:0
check "  and the mount options are recorded" test "$(dump_field max.img "Default mount options")" = noatime

check "the user's mkfs.ordfs, no option" as_user "$MKFS" -q user/plain.img 8M
check "  the root directory is the user's ($USER_UID:$USER_GID)" \
	test "$(owner_of_inode user/plain.img 2)" = "$USER_UID:$USER_GID"
check "  lost+found stays root's" test "$(owner_of_inode user/plain.img 3)" = 0:0
check "the user's -E root_owner (no value)" as_user "$MKFS" -q -E root_owner user/alone.img 8M
check "  the root directory is the user's" test "$(owner_of_inode user/alone.img 2)" = "$USER_UID:$USER_GID"
check "the user's -E root_owner=0:0" as_user "$MKFS" -q -E root_owner=0:0 user/zero.img 8M
check "  the root directory is root's" test "$(owner_of_inode user/zero.img 2)" = 0:0
if $IS_ROOT; then
	check "root's -E root_owner=1:2 -d tree: the root directory is 1:2, not DIR's" \
		"$MKFS" -q -E root_owner=1:2 -d tree owned_tree.img 64M
	check "  (1:2)" test "$(owner_of_inode owned_tree.img 2)" = 1:2
fi

summary
