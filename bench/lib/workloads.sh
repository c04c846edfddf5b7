# shellcheck shell=bash
# workloads.sh - the workloads B1..B10 of bench/run, one function each.
# Sourced by bench/run.  Each w_BN TARGET DIR RAW runs in DIR (the target's
# directory), leaves its tool's raw output in RAW (fio JSON, dbench text,
# manyfiles.py JSON) for bench/lib/report.py, and removes what it wrote,
# except B7's tree, which is made once per target and kept for later rounds
# (and B2's disk probe file, WORK/b2-disk.probe, kept for the whole run).
# Sizes and durations come from bench/run: RUNTIME (seconds, B1 B2 B3 B7,
# and each of B10's two fio runs), B2_WRITER_SIZE, B2_SYNC_MIB (the B2
# writer's fdatasync period, in MiB), B2_DISK_RUNTIME and B2_DISK_SIZE_MIB
# (B2's disk probe), B3_SIZE, B4_SIZE, B5_FILES, B5_DIRS, B6_TIME, TREE_FILES,
# TREE_DIRS, TREE_FILE_SIZE, B8_RUNTIME (a fio time: 2s, 500ms), and for
# B9 B9_TARBALL (the project's source, git archive), B9_REPO (the git
# repository to clone), B9_MESON_OPTS, B9_OBJECTS (0: build everything; N:
# only the first N objects of src/libordfs.a, in build.ninja's order) and
# B9_STATUS_RUNS.

# fio latency percentiles (at most 20): what the CDF plot is drawn from
FIO_PCT=1:5:10:20:30:40:50:60:70:80:90:95:98:99:99.5:99.9:99.95:99.99

bounded() { # bounded SECONDS COMMAND...: a hung target must not hang the run
	timeout -k 10 "$@"
}

run_fio() { # run_fio JOBFILE OUT.json
	bounded $((RUNTIME * 4 + 300)) fio --output-format=json --output="$2" "$1" >/dev/null
}

fio_global() { # fio_global DIR: the [global] section of every job file
	# buffered I/O through read/write; no fallocate, so appends really extend
	# the file; invalidate=0 so fio never drops caches on its own (B4 does)
	cat <<EOF
[global]
directory=$1
ioengine=psync
fallocate=none
invalidate=0
percentile_list=$FIO_PCT
EOF
}

fio_append_job() { # fio_append_job NAME FILE RUNTIME [BS]: BS (default 4k) append + fsync, in a loop
	# (FILE empty: no filename, so each job of the section gets its own file)
	echo "[$1]"
	[ -z "$2" ] || echo "filename=$2"
	cat <<EOF
rw=write
bs=${4:-4k}
file_append=1
fsync=1
size=512m
time_based=1
runtime=$3
EOF
}

w_B1() { # 4 KiB append + fsync to one file, alone
	local dir=$2/b1 raw=$3
	mkdir "$dir"
	{
		fio_global "$dir"
		fio_append_job B1 append "$RUNTIME"
	} >"$raw/B1.fio"
	run_fio "$raw/B1.fio" "$raw/B1.json"
	rm -rf "$dir"
}

w_B2() { # B1 while a second job streams 1 MiB writes, fdatasync every B2_SYNC_MIB MiB
	# Fair to every target: the writer's data must reach the disk during
	# the run wherever it is cached (the host's page cache, the page cache
	# of a loop device's backing file, a FUSE daemon's memory), because
	# fdatasync goes down through every layer (a loop device turns the
	# flush into an fsync of its image file; FUSE passes it to the daemon):
	# no target holds more than B2_SYNC_MIB MiB of the writer's data
	# unwritten.  The disk's own bandwidth is measured just before, in the
	# same round (b2_disk_probe), and the host disk's writes are counted
	# across the run, to show that the data did reach it.
	local dir=$2/b2 raw=$3 before after
	b2_disk_probe "$raw"
	mkdir "$dir"
	{
		fio_global "$dir"
		fio_append_job fsyncer append "$RUNTIME"
		cat <<EOF
[writer]
filename=stream
rw=write
bs=1m
size=$B2_WRITER_SIZE
fdatasync=$B2_SYNC_MIB
end_fsync=1
time_based=1
runtime=$RUNTIME
EOF
	} >"$raw/B2.fio"
	before=$(host_disk_written)
	run_fio "$raw/B2.fio" "$raw/B2.json"
	after=$(host_disk_written)
	b2_check "$raw/B2.json" "$before" "$after" >"$raw/B2.check.json"
	rm -rf "$dir"
}

b2_disk_probe() { # b2_disk_probe RAW: the disk's sequential write bandwidth now, into RAW/B2-disk.json
	# fio, 1 MiB writes with O_DIRECT (past the page cache) to a file of
	# the host filesystem that holds the images (WORK/b2-disk.probe,
	# written in full once per run and overwritten in place after that,
	# so that no block allocation is timed), for B2_DISK_RUNTIME seconds,
	# then one fsync, whose time counts: MiB on stable storage per second.
	local raw=$1 probe=$WORK/b2-disk.probe
	if [ ! -e "$probe" ]; then
		bounded 300 dd if=/dev/zero of="$probe.new" bs=1M count="$B2_DISK_SIZE_MIB" \
			oflag=direct conv=fsync status=none
		mv "$probe.new" "$probe"
	fi
	cat >"$raw/B2-disk.fio" <<EOF
[global]
ioengine=psync
invalidate=0

[disk]
filename=$probe
rw=write
bs=1m
direct=1
size=${B2_DISK_SIZE_MIB}m
end_fsync=1
time_based=1
runtime=$B2_DISK_RUNTIME
EOF
	bounded $((B2_DISK_RUNTIME * 4 + 300)) fio --output-format=json --output="$raw/B2-disk.json" \
		"$raw/B2-disk.fio" >/dev/null
}

host_disk_written() { # "BYTES<tab>DISK": what the disk under WORK has written so far, or "n/a<tab>WHY"
	local dev n
	dev=$(block_disk "$WORK") || {
		printf 'n/a\t%s\n' "no block device under $WORK"
		return 0
	}
	# /proc/diskstats: the 10th field is the sectors written (512 bytes)
	n=$(awk -v d="$dev" '$3 == d { print $10 }' /proc/diskstats)
	if [ -n "$n" ]; then
		printf '%s\t%s\n' $((n * 512)) "$dev"
	else
		printf 'n/a\t%s\n' "/proc/diskstats has no line for $dev"
	fi
}

b2_check() { # b2_check FIO.json BEFORE AFTER: the writer's bytes and the host disk's, as JSON
	# The disk's count is that of the whole disk under the work directory:
	# everything written to it during the run is in it (the fsyncer's
	# appends and journal commits, other processes' writes on a shared
	# machine), so it is an upper bound on what the writer wrote there.
	python3 - "$@" <<'PY'
import json, sys
path, before, after = sys.argv[1:4]
with open(path) as f:
    text = f.read()
jobs = {j["jobname"]: j for j in json.loads(text[text.index("{"):])["jobs"]}
writer = jobs["writer"]["write"]["io_bytes"]
b, disk = before.split("\t", 1)
a, why = after.split("\t", 1)
written = int(a) - int(b) if b != "n/a" and a != "n/a" else None
json.dump({"writer_bytes": writer,
           "disk": disk if written is not None else "n/a: " + (disk if b == "n/a" else why),
           "disk_written_bytes": written,
           "disk_written_per_writer_byte":
               written / writer if written is not None and writer else None},
          sys.stdout)
print()
PY
}

w_B3() { # 4 KiB random overwrite + fdatasync on a file written (and fsynced) first
	local dir=$2/b3 raw=$3
	mkdir "$dir"
	{
		fio_global "$dir"
		cat <<EOF
[layout]
filename=rand
rw=write
bs=1m
size=$B3_SIZE
end_fsync=1

[B3]
stonewall
filename=rand
rw=randwrite
bs=4k
size=$B3_SIZE
fdatasync=1
time_based=1
runtime=$RUNTIME
EOF
	} >"$raw/B3.fio"
	run_fio "$raw/B3.fio" "$raw/B3.json"
	rm -rf "$dir"
}

w_B4() { # 1 MiB sequential write + final fsync; read back cold, then warm
	local t=$1 dir=$2/b4 raw=$3
	mkdir "$dir"
	{
		fio_global "$dir"
		cat <<EOF
[B4-write]
filename=seq
rw=write
bs=1m
size=$B4_SIZE
end_fsync=1
EOF
	} >"$raw/B4-write.fio"
	{
		fio_global "$dir"
		cat <<EOF
[B4-read]
filename=seq
rw=read
bs=1m
size=$B4_SIZE
EOF
	} >"$raw/B4-read.fio"
	run_fio "$raw/B4-write.fio" "$raw/B4-write.json"
	# cold: a FUSE daemon's own caches go with a remount, the kernel's with
	# drop_caches (which also drops the host's cache of every image file)
	if target_is_fuse "$t"; then
		target_remount "$t"
	fi
	drop_caches
	run_fio "$raw/B4-read.fio" "$raw/B4-cold.json"
	run_fio "$raw/B4-read.fio" "$raw/B4-warm.json"
	rm -rf "$dir"
}

w_B5() { # create + write 4 KiB + close for many files in directories, then durable
	local t=$1 dir=$2/b5 raw=$3 cmd
	mkdir "$dir"
	bounded 900 python3 "$LIB/manyfiles.py" "$dir" "$B5_FILES" "$B5_DIRS" 4096 fsync \
		>"$raw/B5-fsync.json"
	rm -rf "$dir"
	settle "$t"
	cmd=$(target_sync_cmd "$t")
	if [ -z "$cmd" ]; then
		skip "$t" B5-sync "no whole-filesystem sync: syncfs does not reach a FUSE daemon and fuse2fs has no command for it"
		return 0
	fi
	mkdir "$dir"
	# shellcheck disable=SC2086 # the command is split into words on purpose
	bounded 900 python3 "$LIB/manyfiles.py" "$dir" "$B5_FILES" "$B5_DIRS" 4096 cmd $cmd \
		>"$raw/B5-sync.json"
	rm -rf "$dir"
}

w_B6() { # dbench, 2 clients, bounded time
	local dir=$2/b6 raw=$3
	mkdir "$dir"
	bounded $((B6_TIME + 300)) dbench -c "$DBENCH_LOADFILE" -D "$dir" -t "$B6_TIME" 2 \
		>"$raw/B6.txt" 2>&1
	grep -q '^Throughput' "$raw/B6.txt" || {
		echo "dbench gave no throughput: $(grep -v '^ *[0-9]' "$raw/B6.txt" | tail -2)" >&2
		return 1
	}
	rm -rf "$dir"
}

w_B7() { # B1 while another process reads a tree on the same target, looped
	local t=$1 dir=$2/b7 raw=$3 tree=$2/tree rpid start stop
	if [ ! -e "$tree/.complete" ]; then
		rm -rf "$tree"
		mkdir "$tree"
		bounded 900 python3 "$LIB/manyfiles.py" "$tree" "$TREE_FILES" "$TREE_DIRS" \
			"$TREE_FILE_SIZE" fsync >"$raw/B7-tree.json"
		touch "$tree/.complete"
		settle "$t"
	fi
	mkdir "$dir"
	{
		fio_global "$dir"
		fio_append_job B7 append "$RUNTIME"
	} >"$raw/B7.fio"
	# The reader: tar of the tree, piped (GNU tar skips reading the files
	# when its archive is /dev/null itself); one line of bytes per complete
	# pass.  Its own process group, so that it stops as a whole.
	start=$(date +%s.%N)
	# shellcheck disable=SC2016 # $1 is the inner shell's
	setsid bash -c 'while :; do tar -cf - -C "$1" . | wc -c; done' reader "$tree" \
		>"$raw/B7-reader.txt" 2>/dev/null &
	rpid=$!
	echo "$rpid" >"$WORK/state/reader.pid"
	sleep 0.2
	run_fio "$raw/B7.fio" "$raw/B7.json"
	kill -- -"$rpid" 2>/dev/null || true
	wait "$rpid" 2>/dev/null || true
	stop=$(date +%s.%N)
	rm -f "$WORK/state/reader.pid"
	echo "$start $stop" >"$raw/B7-reader-time.txt"
	rm -rf "$dir"
}

w_B8() { # 1, 2, 4, 8 threads, each appending + fsyncing its own file
	local dir=$2/b8 raw=$3 n
	mkdir "$dir"
	{
		fio_global "$dir"
		echo "group_reporting=1"
		for n in 1 2 4 8; do
			# no filename: each of the n jobs gets a file of its own
			echo
			fio_append_job "t$n" "" "$B8_RUNTIME"
			printf 'stonewall\nnumjobs=%s\n' "$n"
		done
	} >"$raw/B8.fio"
	run_fio "$raw/B8.fio" "$raw/B8.json"
	rm -rf "$dir"
}

w_B9() { # a developer's day: unpack the source, configure, build, clone, git status, rm -rf
	local dir=$2/b9 raw=$3 t0 t1 i out=() objs=()
	mkdir "$dir"
	# no compiler cache: every target compiles everything itself
	export CCACHE_DISABLE=1
	logged() { # logged LOG COMMAND...: the output into LOG; on failure its first error on stderr
		local log=$1 rc=0
		shift
		"$@" >>"$log" 2>&1 || rc=$?
		[ $rc -eq 0 ] || echo "$3 failed (exit $rc): $({ grep -m1 -iE 'error|fatal' "$log" ||
			tail -1 "$log"; } | cut -c1-200)" >&2
		return $rc
	}
	lap() { # lap NAME: seconds since the last lap, as a JSON member
		t1=$(date +%s.%N)
		out+=("$(awk -v n="$1" -v a="$t0" -v b="$t1" 'BEGIN { printf "\"%s_s\": %.3f", n, b - a }')")
		t0=$t1
	}
	local start
	start=$(date +%s.%N)
	t0=$start
	mkdir "$dir/src"
	tar -xf "$B9_TARBALL" -C "$dir/src"
	lap copy
	# shellcheck disable=SC2086 # the options are words
	logged "$raw/B9-setup.txt" bounded 600 meson setup $B9_MESON_OPTS "$dir/src/build" "$dir/src"
	if [ "$B9_OBJECTS" -gt 0 ]; then
		mapfile -t objs < <(ninja -C "$dir/src/build" -t targets all |
			grep -o '^src/libordfs\.a\.p/[^:]*\.o' | head -n "$B9_OBJECTS")
		[ ${#objs[@]} -gt 0 ] || {
			echo "no objects of src/libordfs.a in build.ninja" >&2
			return 1
		}
	fi
	lap setup
	logged "$raw/B9-build.txt" bounded 1200 ninja -C "$dir/src/build" -j2 "${objs[@]}"
	lap build
	# a clone through git's own transport (--no-local: one pack file, then
	# a checkout), as from a server; safe.directory: the repository may
	# belong to another user than root
	logged "$raw/B9-clone.txt" bounded 600 git -c safe.directory='*' clone -q --no-local \
		"$B9_REPO" "$dir/clone"
	lap clone
	for ((i = 0; i < B9_STATUS_RUNS; i++)); do
		logged "$raw/B9-status.txt" bounded 300 git -C "$dir/clone" status --porcelain
	done
	lap status
	rm -rf "$dir"
	lap rm
	{
		printf '{'
		(IFS=,; printf '%s' "${out[*]}")
		awk -v a="$start" -v b="$t1" 'BEGIN { printf ", \"total_s\": %.3f", b - a }'
		printf ', "files": %s, "status_runs": %s, "compiled": %s}\n' \
			"$(tar -tf "$B9_TARBALL" | grep -vc '/$')" "$B9_STATUS_RUNS" \
			"$(grep -c '^\[[0-9]*/[0-9]*\] Compiling' "$raw/B9-build.txt" || true)"
	} >"$raw/B9.json"
	# a status that is not empty: the clone is not what was checked out
	[ ! -s "$raw/B9-status.txt" ] || {
		echo "git status in the clone is not clean: $(head -1 "$raw/B9-status.txt")" >&2
		return 1
	}
}

w_B10() { # the log-file pattern: 100-byte append + fsync, 1 job on one file, then 8 on 8
	local t=$1 dir=$2/b10 raw=$3 n file before after
	mkdir "$dir"
	for n in 1 8; do
		mkdir "$dir/j$n"
		file=
		[ "$n" -gt 1 ] || file=append
		{
			fio_global "$dir/j$n"
			# 8 jobs: one line for the group, with the fsyncs of all
			[ "$n" -eq 1 ] || echo "group_reporting=1"
			echo
			fio_append_job "j$n" "$file" "$RUNTIME" 100
			echo "numjobs=$n"
		} >"$raw/B10-$n.fio"
		# the flush counter right before and after the timed part
		before=$(target_flush_counter "$t")
		run_fio "$raw/B10-$n.fio" "$raw/B10-$n.json"
		after=$(target_flush_counter "$t")
		b10_check "$raw/B10-$n.json" "$dir/j$n" "$before" "$after" >"$raw/B10-$n.check.json"
	done
	rm -rf "$dir"
}

b10_check() { # b10_check FIO.json DIR BEFORE AFTER: B10's figures as JSON; fails on a wrong size
	# The files must hold exactly the bytes fio wrote, 100 per write (that
	# fio appends bs=100 buffered writes right is checked here, each run);
	# flushes per fsync = flushes between BEFORE and AFTER (target_flush_counter)
	# over the fsyncs fio did.
	python3 - "$@" <<'PY'
import json, os, sys
path, d, before, after = sys.argv[1:5]
with open(path) as f:
    text = f.read()
jobs = json.loads(text[text.index("{"):])["jobs"]
writes = sum(j["write"]["total_ios"] for j in jobs)
written = sum(j["write"]["io_bytes"] for j in jobs)
fsyncs = sum(j["sync"]["total_ios"] for j in jobs)
on_disk = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d))
if not written == on_disk == writes * 100:
    sys.exit("B10: %d writes of 100 bytes, fio says %d bytes written, the files hold %d"
             % (writes, written, on_disk))
b, source = before.split("\t", 1)
a, _ = after.split("\t", 1)
flushes = per_fsync = None
if b != "n/a" and a != "n/a":
    flushes = int(a) - int(b)
    if source.startswith("/proc/diskstats") and int(a) == 0 and "write back" in source:
        # a write-back cache that never saw a flush: the device does not
        # count them (device-mapper, for one), it did not skip them
        source, flushes = "%s counts no flushes" % source.split()[1], None
    elif fsyncs:
        per_fsync = flushes / fsyncs
else:
    source = "n/a: " + (source if b == "n/a" else after.split("\t", 1)[1])
json.dump({"writes": writes, "bytes": on_disk, "fsyncs": fsyncs,
           "flushes": flushes, "flushes_per_fsync": per_fsync,
           "flush_source": source}, sys.stdout)
print()
PY
}

settle() { # settle TARGET: make what earlier work left durable, untimed
	local cmd
	cmd=$(target_sync_cmd "$1")
	# shellcheck disable=SC2086
	[ -z "$cmd" ] || bounded 300 $cmd
	sync # the host's copy of every image, and the host directory
}
