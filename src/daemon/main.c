/*
 * main.c - the ordfs daemon: `ordfs IMAGE MOUNTPOINT [-o opts] [-f] [-d] [-s]`.
 *
 * Owns: the start-up and shut-down order.
 *   1. Parse and validate every option (options.c).
 *   2. Open the image and take an exclusive flock on it (held by the open
 *      file description, so it survives the fork; a second daemon or
 *      fsck.ordfs fails with "in use").  When no mount of the image is
 *      left, the holder is a daemon finishing its unmount (or fsck):
 *      wait for it, at most IMAGE_LOCK_WAIT_MS (image_lock.h), as a kernel mount waits for
 *      the previous umount (xfstests generic/604).
 *   3. Validate the superblock and journal state, still writing nothing.
 *   4. Create the FUSE session and mount it.
 *   5. Fork (unless -f): the parent waits on a pipe for the child's verdict
 *      and exits 0 only once the filesystem is mounted and live.
 *   6. In the child: mount the filesystem (journal replay, threads start
 *      here, after the fork), record the umount helper in utab (as root:
 *      utab.c), report success, detach, serve requests.
 *   7. On unmount (fusermount3 -u) or SIGTERM/SIGINT: leave the loop, write
 *      everything back, commit, checkpoint, mark the image clean, drop the
 *      utab line once the mount is gone, release the lock, exit 0 (1 if
 *      the image could not be left clean).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <pthread.h>
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include "fuse_ops.h"
#include "base/log.h"
#include "options.h"
#include "utab.h"
#include "image_lock.h"
#include "base/mountinfo.h"
#include "remount_client.h"
#include "readahead.h"
#include "test_hooks.h"
#include "transport/transport.h"
#include "../fs.h"
#include "../blockdev/blockdev.h"
#include "../journal/journal.h"
#include "../super/owner.h"
#include "../lock/lock.h"

#ifndef ORDFS_PACKAGE_VERSION
#define ORDFS_PACKAGE_VERSION "unknown"
#endif

static bool log_to_syslog; /* detached, and no test log (test_hooks.h) */
static bool will_detach;   /* not -f: the daemon backgrounds once mounted */
static int test_log_fd = -1; /* ORDFS_TEST_LOG (test_hooks.h): opened before
				* any thread starts, stderr once detached */
static const char *image_name = "ordfs";

/* One line per message, naming the image: stderr in the foreground, syslog
 * once detached (or the test log, test_hooks.h).  A daemon that will
 * detach sends its notices (a journal replayed, a remount) to syslog from
 * the start, as a kernel filesystem sends them to the kernel log:
 * mount(8)'s output is for warnings and errors, and xfstests compares it. */
static void logmsg(int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (__atomic_load_n(&log_to_syslog, __ATOMIC_ACQUIRE) || (will_detach && prio > LOG_WARNING))
		syslog(prio, "%s: %s", image_name, msg);
	else
		fprintf(stderr, "ordfs: %s: %s\n", image_name, msg);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ordfs IMAGE MOUNTPOINT [-o option[,option...]] [-f] [-d] [-s]\n"
		"\n"
		"Mounts the ordfs filesystem in IMAGE (made by mkfs.ordfs) on MOUNTPOINT.\n"
		"IMAGE is a file, a block device or an NBD URI (nbd://host/export,\n"
		"nbd+unix:///export?socket=PATH, ...: libnbd's syntax).\n"
		"Unmount with: umount MOUNTPOINT (waits until the image is clean and closed,\n"
		"when umount.ordfs is installed) or fusermount3 -u MOUNTPOINT\n"
		"\n"
		"  -f              stay in the foreground\n"
		"  -d              debug output (implies -f)\n"
		"  -s              single-threaded\n"
		"  -h, --help      this text\n"
		"  -V, --version   version\n"
		"\n"
		"ordfs options (-o):\n"
		"  data=ordered    data reaches the image before the metadata that points\n"
		"                  at it is committed (default)\n"
		"  data=writeback  metadata is journaled, data is not ordered\n"
		"  data=journal    file data goes through the journal too: every write\n"
		"                  atomic per transaction, data written twice\n"
		"  commit=SECONDS  commit the journal at least this often (default 5)\n"
		"  barrier         flush the image at every commit (default)\n"
		"  nobarrier       never flush: faster, unsafe on power loss\n"
		"  dirty_limit=SIZE  file data the daemon holds before writers must write\n"
		"                  it back themselves (K, M, G; default 0: about one\n"
		"                  second of the image's measured write bandwidth)\n"
		"  journal_ioprio=N  I/O priority (0 highest .. 7) of journal commits\n"
		"                  (default 3; takes effect with the bfq scheduler)\n"
		"  read_ahead_kb=N  the kernel's readahead window for the mount in KiB\n"
		"                  (default 4096; needs root; 0 keeps the kernel's 128)\n"
		"  writeback_cache  let the kernel hold written data and send it later;\n"
		"                  ENOSPC and write errors then show at fsync or close,\n"
		"                  not at write() (default off)\n"
		"  discard         punch freed blocks out of the image as they are freed\n"
		"                  (or now and then: ordfsctl trim MOUNTPOINT)\n"
		"  flush_error=    when a write or flush of the image fails:\n"
		"      report      (default) fsync/fdatasync return EIO, once per open file;\n"
		"                  the failed commit is retried, nothing is lost silently\n"
		"      ignore      log once, carry on and report success\n"
		"      remount-ro  stop writing (EROFS), keep reading; fsck.ordfs before\n"
		"                  the next read-write mount\n"
		"      abort       log, unmount and exit non-zero; the next mount replays\n"
		"  errors=         on metadata corruption found while mounted (the caller\n"
		"                  gets EUCLEAN): continue (record it), remount-ro, abort;\n"
		"                  default: what mkfs.ordfs -e recorded\n"
		"  relatime        update atime on read only if it is older than mtime or\n"
		"                  ctime, or 24 hours old (default)\n"
		"  strictatime     update atime on every read that reaches ordfs\n"
		"  noatime         never update atime; nodiratime: never for directories\n"
		"  lazytime        keep atime updates in memory until the inode is written\n"
		"                  anyway, fsync, ordfsctl sync, unmount or 24 hours\n"
		"  ro, rw          read-only / read-write\n"
		"  nbd_timeout=SECONDS  an NBD image's request (or reconnect) limit before\n"
		"                  it fails with EIO (default 30)\n"
		"  nofua           never use the NBD server's FUA writes (fua: the default)\n"
		"  io_uring=       how requests come from the kernel: auto (default) takes\n"
		"                  FUSE over io_uring when the kernel offers it (Linux\n"
		"                  6.14+, after echo 1 > /sys/module/fuse/parameters/\n"
		"                  enable_uring), else /dev/fuse; on: io_uring or no mount;\n"
		"                  off: /dev/fuse only\n"
		"Defaults recorded in the image (mkfs.ordfs -E mount_opts=) apply first;\n"
		"options given here override them.\n"
		"\n"
		"sync(1) does not reach a FUSE filesystem: it waits for the next periodic\n"
		"commit. Use `ordfsctl sync MOUNTPOINT` to make everything durable now.\n"
		"generic options passed to FUSE: allow_other, default_permissions (always\n"
		"on), dev, nodev, suid, nosuid, exec, noexec, fsname=, subtype=\n");
}

/* The library's messages go where the daemon's go. */
static void log_sink(int prio, const char *msg)
{
	logmsg(prio, "%s", msg);
}

/* flush_error=abort / errors=abort: the filesystem must stop.  SIGTERM
 * ends the FUSE loop the way an administrator's kill would; main() then
 * unmounts and exits non-zero, leaving the journal for the next mount. */
static volatile sig_atomic_t fatal_error;
static pthread_t main_thread; /* where the FUSE loop waits */

static void on_fatal(void *ctx, int err)
{
	(void)ctx;
	fatal_error = err ? err : -EIO;
	logmsg(LOG_CRIT, "stopping: the filesystem hit an error its policy says is fatal (%s); "
	       "unmounting, the next mount replays the journal", strerror(-fatal_error));
	/* To the loop's own thread, so its wait is interrupted. */
	pthread_kill(main_thread, SIGTERM);
}

/* ---- the image -------------------------------------------------------- */

static unsigned image_flags(const struct daemon_options *o, bool readonly)
{
	unsigned flags = readonly ? BLOCKDEV_READONLY : BLOCKDEV_WRITE_BEHIND | BLOCKDEV_DIRECT_BULK;
	if (!o->fs.barrier)
		flags |= BLOCKDEV_NO_FLUSH_OK;
	if (o->nbd_nofua)
		flags |= BLOCKDEV_NO_FUA;
	return flags;
}

/* Opens the image and takes its lock.  A read-only mount asks for
 * read-write first (main sets o->fs.rw_capable to try it), so that a
 * remount can make it read-write later: the filesystem writes nothing
 * until then (mount.c).  Where the image cannot be written (its mode, a
 * read-only host filesystem or NBD export) it is opened read-only and
 * rw_capable cleared, so later opens (after the fork) do the same. */
static int open_image(struct daemon_options *o, struct blockdev **out)
{
	char why[300];
	bool readonly = o->fs.readonly && !o->fs.rw_capable;
	int err = blockdev_open_image(o->image, image_flags(o, readonly), o->nbd_timeout_ms, out,
				      why, sizeof(why));
	if (err && !readonly && o->fs.readonly) {
		o->fs.rw_capable = false;
		err = blockdev_open_image(o->image, image_flags(o, true), o->nbd_timeout_ms, out,
					  why, sizeof(why));
	}
	if (err) {
		logmsg(LOG_ERR, "cannot open: %s", why);
		return err;
	}
	/* a daemon still unmounting holds it a moment; NBD: the owner
	 * record, after the superblock */
	err = image_lock_wait(*out, o->image, IMAGE_LOCK_WAIT_MS);
	if (err) {
		logmsg(LOG_ERR, "%s", err == -EBUSY
					      ? "image is in use (another ordfs daemon or fsck.ordfs)"
					      : strerror(-err));
		blockdev_destroy(*out);
		return err;
	}
	return 0;
}

/* Opens the NBD export again after the fork and checks it is the image
 * that was validated (same size, same superblock). */
static int reopen_image(struct daemon_options *o, const struct ordfs_super *sb,
			struct blockdev **out)
{
	if (open_image(o, out) != 0)
		return -EIO;
	struct ordfs_super again;
	const char *why = NULL;
	int err = ordfs_read_super(*out, false, &again, &why);
	if (!err && memcmp(again.uuid, sb->uuid, sizeof(sb->uuid)) != 0) {
		why = "the export holds another filesystem than a moment ago";
		err = -EIO;
	}
	if (err) {
		logmsg(LOG_ERR, "%s", why);
		blockdev_destroy(*out);
		*out = NULL;
	}
	return err;
}

/* Another claimer took the image while we held it (owner.h): nothing more
 * may reach it.  Fence the device, then stop as a fatal error does. */
static struct blockdev *owned_image;

static void on_owner_lost(void *ctx)
{
	(void)ctx;
	blockdev_fence(owned_image);
	logmsg(LOG_CRIT, "another program claimed the image while this daemon held it: "
	       "nothing more is written to it");
	on_fatal(NULL, -EBUSY);
}

/* The image's owner record: claimed at the start of a read-write mount
 * (claim_image), or by the first remount to read-write of a read-only
 * one (claim_for_write, on a FUSE worker while the loop runs; main reads
 * it again after the loop has joined its workers). */
static struct owner_claim *image_claim;

static int claim_for_write(void *ctx, const char **why)
{
	static char why_buf[300]; /* under the filesystem's remount_lock */
	const struct ordfs *fs = *(struct ordfs *const *)ctx;
	if (image_claim)
		return 0;
	struct owner_opts oo = { .program = "ordfs", .lost = on_owner_lost };
	int err = owner_take(owned_image, fs_block_count(fs), fs->block_size, &oo, true,
			     &image_claim, why_buf, sizeof(why_buf));
	if (err)
		*why = why_buf;
	return err;
}

/* ORDFS_IOC_GROW's first step (fuse_grow.c): the device's size now, the
 * owner record moved to its new end (its heartbeat paused meanwhile, so it
 * never reads an end the device no longer has).  One grow at a time. */
static struct ordfs_mutex device_grow_lock;

static int device_grew(struct daemon_ctx *dc, struct device_room *room, char *why,
		       size_t why_len)
{
	ordfs_mutex_lock(&device_grow_lock);
	/* remount_lock too: a remount to rw claims the record (claim_for_write),
	 * and it must claim it at one end or the other, not while it moves */
	ordfs_mutex_lock(&dc->fs->remount_lock);
	owner_pause(image_claim);
	uint64_t size = 0;
	int err = blockdev_refresh_size(dc->fs->bd, &size);
	if (err == -EOPNOTSUPP) { /* a device whose size is fixed */
		size = blockdev_size(dc->fs->bd);
		err = 0;
	}
	if (err == -EUCLEAN)
		snprintf(why, why_len, "the image is smaller than when it was mounted: it was "
			 "cut while mounted");
	else if (err)
		snprintf(why, why_len, "cannot ask the image for its size: %s", strerror(-err));
	int e2 = owner_resume(image_claim);
	if (e2 && !err) {
		snprintf(why, why_len, "cannot write the owner record at the image's new end: %s",
			 strerror(-e2));
		err = e2;
	}
	room->size = size;
	room->owner_record = image_claim != NULL;
	ordfs_mutex_unlock(&dc->fs->remount_lock);
	ordfs_mutex_unlock(&device_grow_lock);
	return err;
}

/* Claims the owner record of a read-write image (the heartbeat starts
 * after the fork, in the process that keeps the image). */
static int claim_image(const struct daemon_options *o, struct blockdev *bd,
		       const struct ordfs_super *sb, struct owner_claim **claim)
{
	*claim = NULL;
	if (o->fs.readonly)
		return 0;
	struct owner_opts oo = { .program = "ordfs", .lost = on_owner_lost };
	char why[300];
	int err = owner_take(bd, sb->block_count, ordfs_block_size(sb), &oo, false, claim, why,
			     sizeof(why));
	if (err)
		logmsg(LOG_ERR, "%s", why);
	return err;
}

/* Reads the superblock: nothing is written.  On success *sb holds it. */
static int read_image_super(struct blockdev *bd, struct ordfs_super *sb)
{
	const char *why = NULL;
	int err = ordfs_read_super(bd, false, sb, &why);
	if (err)
		logmsg(LOG_ERR, "%s", why);
	return err;
}

static int validate_image(struct blockdev *bd, const struct ordfs_super *image_sb,
			  const struct daemon_options *o)
{
	struct ordfs_super sb = *image_sb;
	int need = journal_needs_recovery(bd, &sb);
	if (need < 0) {
		logmsg(LOG_ERR, "journal superblock is corrupt (run fsck.ordfs)");
		return need;
	}
	if (need && o->fs.readonly) { /* replay_for_readonly failed to empty it */
		logmsg(LOG_ERR, "journal needs recovery; mount read-write or run fsck.ordfs");
		return -EROFS;
	}
	if (!need && !o->fs.readonly && (sb.state & ORDFS_STATE_ERROR)) {
		logmsg(LOG_ERR, "the filesystem recorded an error (errno %u); run fsck.ordfs "
		       "before mounting it read-write", sb.last_error_code);
		return -EUCLEAN;
	}
	return 0;
}

/* A read-only mount of an image whose journal needs replay replays it
 * first, as ext4 does ("write access will be enabled during recovery"):
 * the image opened read-write (and claimed) for the replay alone, then
 * closed.  0, or the error already logged. */
static int replay_for_readonly(const struct daemon_options *o)
{
	struct daemon_options rw = *o;
	rw.fs.readonly = false;
	rw.fs.rw_capable = false;
	struct blockdev *bd;
	if (open_image(&rw, &bd) != 0) {
		logmsg(LOG_ERR, "the journal needs recovery and the image cannot be written for "
		       "it: mount read-write or run fsck.ordfs");
		return -EROFS;
	}
	struct ordfs_super sb;
	int err = read_image_super(bd, &sb);
	struct owner_claim *claim = NULL;
	if (!err)
		err = claim_image(&rw, bd, &sb, &claim);
	struct journal_recovery_info info;
	if (!err) {
		err = journal_recover(bd, &sb, 0, &info);
		if (!err)
			err = blockdev_flush(bd);
		if (err)
			logmsg(LOG_ERR, "journal recovery for the read-only mount failed: %s",
			       strerror(-err));
		else
			logmsg(LOG_NOTICE, "recovered the journal before mounting read-only: %u "
			       "transactions replayed", info.transactions);
	}
	if (claim)
		owner_release(claim);
	blockdev_destroy(bd);
	return err;
}

/* ---- detaching ---------------------------------------------------------- */

/* Forks; the parent waits for the child's verdict and exits with it.
 * Returns (in the child) the write end of the verdict pipe. */
static int fork_and_wait(void)
{
	int pipefd[2];
	if (pipe(pipefd) != 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pipefd[1]);
		char verdict = 1;
		ssize_t n;
		do {
			n = read(pipefd[0], &verdict, 1);
		} while (n < 0 && errno == EINTR);
		_exit(n == 1 && verdict == 0 ? 0 : 1);
	}
	close(pipefd[0]);
	setsid();
	return pipefd[1];
}

static void finish_detach(int verdict_fd, bool ok)
{
	char verdict = ok ? 0 : 1;
	if (verdict_fd < 0)
		return;
	if (ok) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(test_log_fd >= 0 ? test_log_fd : null, 2);
			if (null > 2)
				close(null);
		}
		bool kept_log = null >= 0 && test_log_fd >= 0;
		if (test_log_fd > 2)
			close(test_log_fd);
		if (chdir("/") != 0) {
			/* not fatal: we hold no relative paths */
		}
		/* threads that log may run already (the io_uring queues,
		 * started at INIT): syslog is opened before they see it */
		openlog("ordfs", LOG_PID, LOG_DAEMON);
		__atomic_store_n(&log_to_syslog, !kept_log, __ATOMIC_RELEASE);
	}
	if (write(verdict_fd, &verdict, 1) != 1) {
		/* the parent is gone; nothing to tell */
	}
	close(verdict_fd);
}

/* ---- main ----------------------------------------------------------------- */

static struct fuse_session *make_session(const struct daemon_options *o,
					 struct daemon_ctx *dctx, char *argv0)
{
	char *fargv[4] = { argv0, "-o", (char *)o->fuse_opts, NULL };
	int fargc = 3;
	if (o->debug)
		fargv[fargc++] = "-d";
	struct fuse_args args = FUSE_ARGS_INIT(fargc, fargv);
	struct fuse_session *se =
		fuse_session_new(&args, &ordfs_fuse_ops, sizeof(ordfs_fuse_ops), dctx);
	fuse_opt_free_args(&args); /* libfuse may have copied and extended them */
	return se;
}

/* Tells umount(8) to wait for this daemon: helper=ordfs in utab
 * (utab.c).  True when a line was written, which forget_umount_helper
 * takes back once the mount is gone (U3). */
static bool record_umount_helper(const struct daemon_options *o, const char *mountpoint)
{
	int err = mountpoint ? utab_record_umount_helper(o->source, mountpoint) : -ENOENT;
	if (err < 0)
		logmsg(LOG_WARNING, "cannot record the umount helper for %s (%s): umount will "
		       "not wait for the daemon; fusermount3 -u does not either",
		       o->mountpoint, strerror(-err));
	return err == 0;
}

static void forget_umount_helper(const char *mountpoint)
{
	int err = utab_forget_umount_helper(mountpoint);
	if (err < 0)
		logmsg(LOG_WARNING, "cannot remove the umount helper's line for %s from utab (%s)",
		       mountpoint, strerror(-err));
}

/* The mount's readahead window, set now: the mount exists and the loop
 * has not answered INIT yet (readahead.c says why the order matters). */
static void set_read_ahead(const struct daemon_options *o, const char *mountpoint_abs)
{
	if (!o->read_ahead_kb)
		return;
	/* Only root may; quiet about it unless the option was asked for. */
	if (geteuid() != 0 && !o->read_ahead_given && !o->debug)
		return;
	int err = mountpoint_abs ? daemon_set_read_ahead(mountpoint_abs, o->read_ahead_kb)
				 : -ENOENT;
	if (err && (o->read_ahead_given || o->debug))
		logmsg(LOG_WARNING, "cannot set the readahead window of %s to %u KiB (%s): the "
		       "kernel's default stays", o->mountpoint, o->read_ahead_kb, strerror(-err));
}

int main(int argc, char **argv)
{
	struct daemon_options o;
	char err_msg[256];
	/* File data passes through the daemon's page cache in 4 KiB pages
	 * that are allocated and freed at the write rate.  glibc would give
	 * the memory back to the kernel and fault it in again (zeroed) for
	 * every few MiB; keeping up to 256 MiB free for reuse cut bench B4's
	 * write ... (see design/daemon.md, "The daemon"). */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	/* Setting those fixes glibc's mmap threshold at 128 KiB (it no longer
	 * grows with use), so every reply buffer of a large read (up to 1 MiB)
	 * would be a fresh mmap, faulted in page by page and unmapped again.
	 * From the heap they are reused: a cold 512 MiB read took half the
	 * daemon's CPU time and 0.54 s instead of 0.99 s (three reads, medians
	 * of three runs). */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	/* mount -o remount: not a new daemon but a request to the one that
	 * serves the mount (remount_client.h). */
	const char *remount_at;
	char remount_opts[2048];
	if (daemon_args_remount(argc, argv, &remount_at, remount_opts, sizeof(remount_opts))) {
		char msg[1024];
		int rc = remount_client(remount_at, remount_opts, true, msg, sizeof(msg));
		if (rc) {
			fprintf(stderr, "ordfs: remount %s: %s\n", remount_at, msg);
			return 1;
		}
		return 0;
	}
	if (daemon_parse_args(argc, argv, &o, err_msg, sizeof(err_msg)) != 0) {
		fprintf(stderr, "ordfs: %s\n", err_msg);
		return 1;
	}
	if (o.show_help) {
		usage(stdout);
		return 0;
	}
	if (o.show_version) {
		printf("ordfs %s (FUSE %s)\n", ORDFS_PACKAGE_VERSION, fuse_pkgversion());
		return 0;
	}
	image_name = o.image;
	will_detach = !o.foreground;
	if (will_detach)
		test_log_fd = test_hooks_detached_log();

	struct blockdev *bd;
	o.fs.rw_capable = o.fs.readonly; /* try read-write (open_image) */
	if (open_image(&o, &bd) != 0)
		return 1;
	struct ordfs_super sb;
	if (read_image_super(bd, &sb) != 0) {
		blockdev_destroy(bd);
		return 1;
	}
	/* The image's default mount options first, then the command line. */
	if (sb.mount_opts[0] &&
	    daemon_parse_args_over(argc, argv, sb.mount_opts, &o, err_msg, sizeof(err_msg)) != 0) {
		logmsg(LOG_ERR, "%s", err_msg);
		blockdev_destroy(bd);
		return 1;
	}
	if (o.fs.readonly && journal_needs_recovery(bd, &sb) > 0) {
		blockdev_destroy(bd); /* its lock would keep the replay out */
		if (replay_for_readonly(&o) != 0 || open_image(&o, &bd) != 0)
			return 1;
		if (read_image_super(bd, &sb) != 0) {
			blockdev_destroy(bd);
			return 1;
		}
	}
	if (validate_image(bd, &sb, &o) != 0) {
		blockdev_destroy(bd);
		return 1;
	}
	bool mounted = false; /* ordfs_mount succeeded */
	/* An NBD connection is a thread and a socket: it does not survive the
	 * fork.  It is opened again in the process that serves. */
	bool reopen = blockdev_is_nbd(bd);

	/* Test hooks (a -Dtest_hooks=true build only, test_hooks.c): with an
	 * ORDFS_TEST_* variable set, a recording device goes under the
	 * filesystem; otherwise bd stays the image. */
	struct blockdev *image_bd = bd;
	struct daemon_ctx dctx = { .attr_timeout = DAEMON_ATTR_TIMEOUT,
				   .entry_timeout = DAEMON_ENTRY_TIMEOUT,
				   .negative_timeout = DAEMON_NEGATIVE_TIMEOUT,
				   .writeback_cache = o.writeback_cache,
				   .read_ahead_kb = o.read_ahead_kb,
				   .no_copy_range = copy_range_disabled(),
				   .options = &o, .device_grew = device_grew };
	ordfs_mutex_init(&dctx.files_lock, LOCK_FILES, "files_lock");
	ordfs_mutex_init(&device_grow_lock, LOCK_DEVICE_GROW, "device_grow_lock");
	if (!reopen && test_hooks_setup(&dctx, image_bd, &bd) != 0) {
		logmsg(LOG_ERR, "cannot set up the test device");
		blockdev_destroy(image_bd);
		return 1;
	}
	ordfs_log_set_sink(log_sink);
	main_thread = pthread_self(); /* set again after the fork below */
	o.fs.fatal = on_fatal;
	o.fs.attr_changed = daemon_attr_changed;
	o.fs.attr_changed_ctx = &dctx;
	struct fuse_session *se = make_session(&o, &dctx, argv[0]);
	dctx.se = se;
	if (!se) {
		if (bd != image_bd)
			blockdev_destroy(bd);
		blockdev_destroy(image_bd);
		return 1; /* libfuse said why */
	}
	int status = 1;
	bool recorded = false; /* a utab line for the mount (record_umount_helper) */
	struct transport *transport = NULL;
	if (transport_new(se, o.io_uring, o.single_thread, &transport, err_msg,
			  sizeof(err_msg)) != 0) {
		logmsg(LOG_ERR, "%s", err_msg);
		goto out_session;
	}
	dctx.transport = transport;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	/* mountinfo names the mount point resolved, as realpath does now
	 * (after the mount it would ask the daemon for the root's attributes). */
	char mountpoint_buf[PATH_MAX];
	const char *mountpoint_abs = realpath(o.mountpoint, mountpoint_buf);
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out_signals;
	set_read_ahead(&o, mountpoint_abs);
	/* Claimed once nothing else can refuse the start (a refused run
	 * leaves the image as it was). */
	if (claim_image(&o, image_bd, &sb, &image_claim) != 0)
		goto out_unmount;
	if (reopen) {
		owner_set_device(image_claim, NULL);
		blockdev_destroy(image_bd);
		bd = image_bd = NULL;
	}

	int verdict_fd = -1;
	if (!o.foreground) {
		verdict_fd = fork_and_wait();
		if (verdict_fd < 0) {
			logmsg(LOG_ERR, "cannot fork: %s", strerror(-verdict_fd));
			goto out_unmount;
		}
	}

	/* The process that serves (the child, without -f): set before any
	 * thread that may call on_fatal starts (the commit thread at
	 * ordfs_mount, the rings' threads at INIT). */
	main_thread = pthread_self();
	if (reopen) {
		if (reopen_image(&o, &sb, &bd) != 0) {
			finish_detach(verdict_fd, false);
			goto out_unmount;
		}
		image_bd = bd; /* no test hooks over NBD: the same device */
	}
	owned_image = image_bd;
	owner_set_device(image_claim, image_bd);
	if (image_claim && owner_start(image_claim) != 0) {
		logmsg(LOG_ERR, "cannot start the owner record's heartbeat");
		finish_detach(verdict_fd, false);
		goto out_unmount;
	}

	const char *why = NULL;
	o.fs.claim_for_write = claim_for_write;
	o.fs.claim_ctx = &dctx.fs;
	int err = ordfs_mount(bd, &o.fs, &dctx.fs, &why);
	if (err) {
		logmsg(LOG_ERR, "%s", why);
		finish_detach(verdict_fd, false);
		goto out_unmount;
	}
	mounted = true;
	if (dctx.fs->recovery.needed)
		logmsg(LOG_NOTICE, "recovered the journal: %u transactions replayed",
		       dctx.fs->recovery.transactions);
	/* INIT: with io_uring=auto or on the transport answers it now, so a
	 * mount that asked for io_uring and cannot have it fails here. */
	if (transport_start(transport, err_msg, sizeof(err_msg)) != 0) {
		logmsg(LOG_ERR, "%s", err_msg);
		finish_detach(verdict_fd, false);
		transport_stop(transport);
		daemon_release_all_files(&dctx);
		ordfs_unmount(dctx.fs);
		goto out_unmount;
	}
	/* The mount is live; the parent (and mount(8) behind it) returns once
	 * umount(8) has been told to wait for us.  Recording looks at no
	 * path in the mount (utab.c, U4), so it needs no loop serving yet. */
	recorded = record_umount_helper(&o, mountpoint_abs);
	finish_detach(verdict_fd, true);

	int loop = transport_serve(transport);
	/* No handler may run once the filesystem is unmounted: the rings'
	 * threads finish the request in hand and stop (the /dev/fuse loop's
	 * threads are joined already). */
	transport_stop(transport);
	/* A loop ended by a signal returns its number (SIGTERM, SIGINT,
	 * SIGHUP: libfuse's handlers); anything else is a failure. */
	if (loop < 0 || (loop > 0 && loop != SIGTERM && loop != SIGINT && loop != SIGHUP))
		logmsg(LOG_ERR, "the FUSE loop failed (%d)", loop);
	/* However the loop ended (unmount, SIGTERM, SIGINT), leave the image
	 * clean; the exit status says whether that worked. */
	daemon_release_all_files(&dctx);
	err = ordfs_unmount(dctx.fs);
	if (err && !fatal_error)
		logmsg(LOG_ERR, "unmount could not leave the image clean: %s", strerror(-err));
	status = err == 0 && !fatal_error ? 0 : 1;
out_unmount:
	fuse_session_unmount(se);
	if (recorded)
		forget_umount_helper(mountpoint_abs);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	transport_destroy(transport); /* the rings hold /dev/fuse: before the session */
	fuse_session_destroy(se);
	/* Freed (unless lost: then it is another's); a start that failed
	 * puts back what the record's sector held before. */
	if (mounted)
		owner_release(image_claim);
	else
		owner_undo(image_claim);
	if (bd != image_bd)
		blockdev_destroy(bd);
	blockdev_destroy(image_bd); /* releases the lock */
	return status;
}
