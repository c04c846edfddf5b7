#!/usr/bin/env python3
# copy_range_model.py - random copy_file_range(2) against a model, on a
# mounted ordfs (or any filesystem).
#
# NOT part of the test suite (meson does not run it): an external check
# for file/copy_range.c, as run_fsx.sh is for the caching rules.  Three
# files in DIR take SEED-chosen writes (random bytes or runs of one byte),
# truncates, punched holes and copies between them and within one (block
# aligned or not, past EOF, up to 1 MiB); every 100 operations each file's
# size and contents are compared with the model kept in memory.  Copies
# whose ranges overlap in one file must fail with EINVAL (the kernel's
# rule, after it cuts the length at the source's EOF); every other copy
# must return the bytes up to the source's EOF.  Run it under several
# mount options, then unmount and fsck.ordfs -fn the image, e.g.:
#
#   ordfs IMG MNT -o writeback_cache
#   tests/external/copy_range_model.py MNT 1
#   fusermount3 -u MNT && fsck.ordfs -fn IMG
#
# Usage: copy_range_model.py DIR SEED [OPS]   (OPS default 3000)
# Exit status 0 when the files matched the model throughout.
import ctypes
import os
import random
import sys

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
MAX_OFF = 3 << 20
NAMES = ("a", "b", "c")
libc = ctypes.CDLL(None, use_errno=True)


def offset():
    return random.randrange(0, MAX_OFF, 4096) if random.random() < 0.3 \
        else random.randrange(0, MAX_OFF)


def resize(m, size):
    if len(m) > size:
        del m[size:]
    else:
        m.extend(b"\0" * (size - len(m)))


def write(fd, m):
    off, n = offset(), random.randrange(1, 200000)
    data = os.urandom(n) if random.random() < 0.5 else bytes([random.randrange(256)]) * n
    os.pwrite(fd, data, off)
    if len(m) < off + n:
        resize(m, off + n)
    m[off:off + n] = data


def punch(fd, m):
    off, n = random.randrange(0, MAX_OFF, 4096), random.randrange(1, 64) * 4096
    if libc.fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE,
                      ctypes.c_long(off), ctypes.c_long(n)) != 0:
        raise OSError(ctypes.get_errno(), "fallocate")
    end = min(len(m), off + n)
    if end > off:
        m[off:end] = b"\0" * (end - off)


def copy(fds, model, i):
    s, t = random.choice(NAMES), random.choice(NAMES)
    off_in, off_out, n = offset(), offset(), random.randrange(1, 1 << 20)
    ms, mt = model[s], model[t]
    want = max(0, min(n, len(ms) - off_in))
    if s == t and want and off_out < off_in + want and off_in < off_out + want:
        try:
            os.copy_file_range(fds[s], fds[t], n, off_in, off_out)
        except OSError as e:
            if e.errno == 22:
                return
            raise
        sys.exit("op %d: overlapping copy in %s not refused" % (i, s))
    got = os.copy_file_range(fds[s], fds[t], n, off_in, off_out)
    if got != want:
        sys.exit("op %d: copy returned %d, want %d" % (i, got, want))
    if got:
        data = bytes(ms[off_in:off_in + got])
        if len(mt) < off_out + got:
            resize(mt, off_out + got)
        mt[off_out:off_out + got] = data


def check(fds, model, i):
    for name in NAMES:
        size = os.fstat(fds[name]).st_size
        if size != len(model[name]):
            sys.exit("op %d: %s is %d bytes, want %d" % (i, name, size, len(model[name])))
        if os.pread(fds[name], size + 10, 0) != bytes(model[name]):
            sys.exit("op %d: %s differs from the model" % (i, name))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: copy_range_model.py DIR SEED [OPS]")
    random.seed(int(sys.argv[2]))
    ops = int(sys.argv[3]) if len(sys.argv) == 4 else 3000
    model = {n: bytearray() for n in NAMES}
    fds = {n: os.open(os.path.join(sys.argv[1], n), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
           for n in NAMES}
    for i in range(ops):
        r, name = random.random(), random.choice(NAMES)
        if r < 0.3:
            write(fds[name], model[name])
        elif r < 0.38:
            size = random.randrange(0, MAX_OFF)
            os.ftruncate(fds[name], size)
            resize(model[name], size)
        elif r < 0.42:
            punch(fds[name], model[name])
        else:
            copy(fds, model, i)
        if i % 100 == 0 or i == ops - 1:
            check(fds, model, i)
    print("ok: %d operations, seed %s" % (ops, sys.argv[2]))


main()
