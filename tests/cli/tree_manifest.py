#!/usr/bin/env python3
"""tree_manifest.py - what a directory tree holds, one line per entry, so a
tree and its copy can be compared with diff (tests/cli/test_mkfs_populate.sh).

Usage: tree_manifest.py [--owner UID:GID] [--drop-lost-found] [--count] ROOT

Each line: the path (relative, "." for ROOT, bytes escaped as Python
escapes them), the type, the mode with its set-user-ID, set-group-ID and
sticky bits, the owner, the link count, the size (not for directories,
whose size is the filesystem's business), atime and mtime in nanoseconds,
the device number, the symlink target, the SHA-256 of a file's bytes, the
data ranges SEEK_DATA/SEEK_HOLE find (holes), st_blocks of a file without
extended attributes (with attributes it depends on where a filesystem
keeps them), every extended attribute with its value in hex, and for a
further name of a hard-linked file the first name it had.  ctime is not
shown: a copy's is its own.

--owner UID:GID prints that owner for every entry instead of its own (the
tree as a copy made by that user should show it).  --drop-lost-found
leaves out ROOT/lost+found and counts one link less for ROOT (a copy of a
tree that had none: the copy's lost+found is mkfs's own).  --count prints
only the number of distinct inodes.

Rules: read-only, and it changes no access time: every file and directory
is opened with O_NOATIME where the caller may (root, or the owner; mount a
copy with -o noatime), and the tree is walked through descriptors
(openat-style dir_fd), so no path length limit applies.
"""
import hashlib
import os
import stat
import sys

NOATIME = getattr(os, "O_NOATIME", 0)
TYPES = {stat.S_IFREG: "f", stat.S_IFDIR: "d", stat.S_IFLNK: "l", stat.S_IFCHR: "c",
         stat.S_IFBLK: "b", stat.S_IFIFO: "p", stat.S_IFSOCK: "s"}


def open_at(name, flags, dir_fd):
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        return os.open(name, flags | NOATIME, dir_fd=dir_fd)
    except PermissionError:  # O_NOATIME needs the owner or CAP_FOWNER
        return os.open(name, flags, dir_fd=dir_fd)


def xattrs(target):
    """target: an fd, or a path whose last component is not followed."""
    out = []
    follow = isinstance(target, int)
    for name in sorted(os.listxattr(target, follow_symlinks=follow)):
        value = os.getxattr(target, name, follow_symlinks=follow)
        out.append("%s=%s" % (name, value.hex()))
    return out


def data_ranges(fd, size):
    ranges, off = [], 0
    while off < size:
        try:
            data = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break  # ENXIO: only a hole from off on
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), size)
        ranges.append("%d-%d" % (data, hole))
        off = hole
    return ranges


def describe(st, rel, dir_fd, name, root_fd, seen, args):
    kind = TYPES.get(stat.S_IFMT(st.st_mode), "?")
    uid, gid = args["owner"] if args["owner"] else (st.st_uid, st.st_gid)
    fields = [repr(rel)[2:-1], kind, "%05o" % stat.S_IMODE(st.st_mode), "%d:%d" % (uid, gid),
              "n%d" % st.st_nlink, "-" if kind == "d" else "s%d" % st.st_size,
              "a%d" % st.st_atime_ns, "m%d" % st.st_mtime_ns]
    if kind in "cb":
        fields.append("dev%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
    if kind == "l":
        fields.append("->" + repr(os.readlink(name, dir_fd=dir_fd))[2:-1])
    if name is None:
        attrs = xattrs(root_fd)
    else:
        attrs = xattrs(b"/proc/self/fd/%d/%s" % (dir_fd, name))
    if kind == "f":
        fd = open_at(name, os.O_RDONLY, dir_fd)
        try:
            h = hashlib.sha256()
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                h.update(chunk)
            fields.append(h.hexdigest()[:16])
            fields.append("data[" + ",".join(data_ranges(fd, st.st_size)) + "]")
        finally:
            os.close(fd)
        if not attrs:
            fields.append("blocks%d" % st.st_blocks)
    fields.extend(attrs)
    if kind != "d" and st.st_nlink > 1:
        key = (st.st_dev, st.st_ino)
        if key in seen:
            fields.append("link=" + repr(seen[key])[2:-1])
        else:
            seen[key] = rel
    return " ".join(fields)


def walk(root, args):
    """Lines in a fixed order: a directory, then its entries by name."""
    lines, seen, inodes = [], {}, set()
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | NOATIME)
    st = os.fstat(root_fd)
    inodes.add((st.st_dev, st.st_ino))
    top = sorted(os.listdir(root_fd))
    if args["drop_lost_found"]:
        top.remove("lost+found")
        st = os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink - 1) + tuple(st)[4:],
                            {"st_atime_ns": st.st_atime_ns, "st_mtime_ns": st.st_mtime_ns,
                             "st_rdev": st.st_rdev, "st_blocks": st.st_blocks})
    lines.append(describe(st, b".", None, None, root_fd, seen, args))
    stack = [(root_fd, b"", top)]
    while stack:
        dir_fd, prefix, names = stack[-1]
        if not names:
            os.close(dir_fd)
            stack.pop()
            continue
        name = os.fsencode(names.pop(0))
        rel = prefix + name
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        inodes.add((st.st_dev, st.st_ino))
        lines.append(describe(st, rel, dir_fd, name, root_fd, seen, args))
        if stat.S_ISDIR(st.st_mode):
            fd = open_at(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd)
            stack.append((fd, rel + b"/", sorted(os.listdir(fd))))
    return lines, len(inodes)


def main(argv):
    args = {"owner": None, "count": False, "drop_lost_found": False}
    rest = []
    it = iter(argv[1:])
    for a in it:
        if a == "--owner":
            uid, gid = next(it).split(":")
            args["owner"] = (int(uid), int(gid))
        elif a == "--count":
            args["count"] = True
        elif a == "--drop-lost-found":
            args["drop_lost_found"] = True
        else:
            rest.append(a)
    if len(rest) != 1:
        sys.exit("usage: tree_manifest.py [--owner UID:GID] [--drop-lost-found] [--count] ROOT")
    lines, count = walk(rest[0], args)
    if args["count"]:
        print(count)
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
