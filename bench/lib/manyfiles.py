#!/usr/bin/env python3
"""manyfiles.py - create many small files, then make them durable; timed.

Usage: manyfiles.py DIR FILES DIRS SIZE fsync|none
       manyfiles.py DIR FILES DIRS SIZE cmd COMMAND...

Makes DIRS directories d0.. under DIR (which must exist) and FILES files
spread evenly over them; each file is created, written SIZE bytes in one
write(2) and closed.  Then, durability:
  fsync  open each file again and fsync it, then fsync each directory and DIR
  cmd    run COMMAND once (syncfs through `sync -f`, `ordfsctl sync`, ...)
  none   nothing
Last, the warm tree is walked STAT_WALKS times as `ls -l` or `find -ls`
would (readdir of each directory, lstat of each entry), untimed once to
warm it, then timed.
Prints one JSON object: files, create_s, durable_s, files_per_s (FILES
over create + durable), create_files_per_s (create phase alone) and
stat_warm_per_s (entries listed and statted per second, warm).
"""
import json
import os
import subprocess
import sys
import time

STAT_WALKS = 3


def walk_and_stat(dirs):
    """readdir of each directory, lstat of every entry; returns entries."""
    n = 0
    for d in dirs:
        with os.scandir(d) as it:
            for entry in it:
                os.lstat(entry.path)
                n += 1
    return n


def main():
    if len(sys.argv) < 6 or sys.argv[5] not in ("fsync", "none", "cmd"):
        sys.exit(__doc__)
    root, files, ndirs, size, mode = sys.argv[1], int(sys.argv[2]), \
        int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    command = sys.argv[6:]
    payload = os.urandom(size)
    dirs = [os.path.join(root, "d%d" % d) for d in range(ndirs)]
    paths = []

    start = time.monotonic()
    for d in dirs:
        os.mkdir(d)
    for i in range(files):
        path = os.path.join(dirs[i % ndirs], "f%d" % i)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, payload)
        os.close(fd)
        paths.append(path)
    created = time.monotonic()

    if mode == "fsync":
        for path in paths:
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        for d in dirs + [root]:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(fd)
            os.close(fd)
    elif mode == "cmd":
        subprocess.run(command, check=True)
    done = time.monotonic()

    walk_and_stat(dirs)
    walked = 0
    t0 = time.monotonic()
    for _ in range(STAT_WALKS):
        walked += walk_and_stat(dirs)
    stat_s = time.monotonic() - t0

    print(json.dumps({
        "files": files,
        "dirs": ndirs,
        "size": size,
        "durable_by": mode if mode != "cmd" else " ".join(command),
        "create_s": created - start,
        "durable_s": done - created,
        "files_per_s": files / (done - start),
        "create_files_per_s": files / (created - start),
        "stat_warm_per_s": walked / stat_s,
    }))


if __name__ == "__main__":
    main()
