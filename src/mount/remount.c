/*
 * remount.c - changing a mounted filesystem's options, as ext4's remount
 * does (mount -o remount, ordfsctl remount; design/remount-shutdown.md,
 * "Remount").
 *
 * Owns: ordfs_remount, ordfs_options_in_force and the remount,ro state
 * (fs->remounted_ro).  Rules:
 *  - Refusals first, so a refused remount changes nothing: data= and the
 *    daemon's sizing options (dirty_limit=) cannot change live; a
 *    filesystem whose image was opened read-only (no journal) cannot
 *    become read-write (unmount and mount it rw); read-write again is
 *    refused while the superblock records an error or the journal has
 *    stopped, as a read-write mount is.
 *  - Live options (fs.h: FS_OPT) are written with FS_OPT_SET, and the
 *    journal and the flush guard take their copies through their own
 *    setters (journal_set_tunables, flush_guard_set_policy).
 *  - ro: the writers' gate closes (ordfs_writable says EROFS, and the
 *    writes already past it are waited for), everything is written back
 *    and committed (ordfs_sync), the journal goes read-only (checkpointed,
 *    log empty, open), and the superblock is written clean: a power cut
 *    from then on leaves an image that needs no replay, as after an
 *    unmount.  Any failure undoes the steps done and is returned.
 *  - rw: the superblock is marked in use again, then the journal, then
 *    the gate opens.  A read-only mount (opts.rw_capable: its journal
 *    opened read-only, nothing written) does first, once, what a
 *    read-write mount does at its start: the log's host space and the
 *    owner record before any write, the orphan list after the journal.
 *  - One remount at a time (remount_lock, taken with nothing else held).
 */
#include <errno.h>
#include <time.h>

#include "fs.h"
#include "ops.h"
#include "mount_internal.h"
#include "base/log.h"
#include "blockdev/guard.h"
#include "host_space.h"
#include "journal/journal.h"
#include "lock/lock.h"
#include "orphan/orphan.h"
#include "super/super.h"
#include "writeback/writeback.h"

void ordfs_options_in_force(struct ordfs *fs, struct ordfs_options *out)
{
	*out = fs->opts; /* fields a remount never changes, and these: */
	out->barrier = FS_OPT(fs, barrier);
	out->discard = FS_OPT(fs, discard);
	out->errors = FS_OPT(fs, errors);
	out->flush_error = FS_OPT(fs, flush_error);
	out->commit_interval_ms = FS_OPT(fs, commit_interval_ms);
	out->journal_ioprio = FS_OPT(fs, journal_ioprio);
	out->atime = fs_atime_policy(fs);
	out->readonly = ordfs_writable(fs) != 0;
}

/* Read-only now: mounted so, remounted so, or stopped on an error (the
 * journal aborted: errors=, flush_error=). */
static bool is_readonly(struct ordfs *fs)
{
	return ordfs_writable(fs) != 0;
}

/* Waits until no write that passed the gate before it closed is left. */
static void wait_for_writers(struct ordfs *fs)
{
	const struct timespec ms = { 0, 1000000 };
	while (__atomic_load_n(&fs->writers_in, __ATOMIC_SEQ_CST) != 0)
		nanosleep(&ms, NULL);
}

static int go_readonly(struct ordfs *fs, const char **why)
{
	__atomic_store_n(&fs->remounted_ro, true, __ATOMIC_SEQ_CST);
	if (journal_aborted(fs->journal))
		return 0; /* read-only already (errors=, flush_error=): nothing to write */
	wait_for_writers(fs);
	int err = ordfs_sync(fs);
	if (err) {
		*why = "writing back the dirty data failed";
		goto reopen_gate;
	}
	err = journal_set_readonly(fs->journal);
	if (err) {
		*why = "committing and checkpointing the journal failed";
		goto reopen_gate;
	}
	err = ordfs_mount_write_clean(fs);
	if (err) {
		*why = "writing the superblock clean failed";
		goto reopen_journal;
	}
	ordfs_log(LOG_NOTICE, "remounted read-only: everything is written and the image is "
		  "clean");
	return 0;

reopen_journal:
	if (ordfs_mount_mark_in_use(fs) == 0)
		(void)journal_set_writable(fs->journal);
reopen_gate:
	__atomic_store_n(&fs->remounted_ro, false, __ATOMIC_SEQ_CST);
	return err;
}

/* A read-only mount's first read-write: what a read-write mount does at
 * its start and ordfs_mount left undone (mount.c).  Before anything is
 * written: the log's host space and the owner record. */
static int start_writing(struct ordfs *fs, const char **why)
{
	int err = ordfs_host_space_for_log(fs->bd, &fs->sb);
	if (err) {
		*why = err == -ENOSPC ? "no space left on the filesystem holding the image for the "
					"journal"
				      : "cannot give the journal its host space";
		return err;
	}
	if (fs->opts.claim_for_write)
		err = fs->opts.claim_for_write(fs->opts.claim_ctx, why);
	return err;
}

static int go_readwrite(struct ordfs *fs, const char **why)
{
	ordfs_mutex_lock(&fs->sb_lock);
	bool error = (fs->sb.state & ORDFS_STATE_ERROR) || fs->error_recorded;
	ordfs_mutex_unlock(&fs->sb_lock);
	if (error) {
		*why = "the filesystem recorded an error; unmount it and run fsck.ordfs before "
		       "using it read-write";
		return -EUCLEAN;
	}
	if (journal_aborted(fs->journal)) {
		*why = "the journal stopped on an error; unmount it and run fsck.ordfs";
		return -EROFS;
	}
	int err = fs->rw_start_pending ? start_writing(fs, why) : 0;
	if (err)
		return err;
	err = ordfs_mount_mark_in_use(fs);
	if (err) {
		*why = "cannot write the superblock";
		return err;
	}
	err = journal_set_writable(fs->journal);
	if (err) {
		*why = "cannot write the journal superblock";
		(void)ordfs_mount_write_clean(fs);
		return err;
	}
	if (fs->rw_start_pending) {
		/* Files unlinked while open when the image was last written
		 * (ext4 frees them at a read-only mount; ordfs writes nothing
		 * there).  Nobody can reach them by name. */
		err = orphan_process_list(fs);
		if (err) {
			*why = "cannot free the inodes on the orphan list (run fsck.ordfs)";
			if (journal_set_readonly(fs->journal) == 0)
				(void)ordfs_mount_write_clean(fs);
			return err;
		}
		fs->rw_start_pending = false;
		ordfs_warn_host_space(fs->bd);
	}
	__atomic_store_n(&fs->remounted_ro, false, __ATOMIC_SEQ_CST);
	ordfs_log(LOG_NOTICE, "remounted read-write");
	return 0;
}

/* What cannot change on a mounted filesystem: NULL, or the refusal. */
static const char *unchangeable(const struct ordfs *fs, const struct ordfs_options *want)
{
	if (want->data_mode != fs->opts.data_mode)
		return "data= cannot change on a mounted filesystem: unmount it and mount it "
		       "with the new mode";
	if (want->dirty_limit_bytes != fs->opts.dirty_limit_bytes)
		return "dirty_limit= cannot change on a mounted filesystem";
	if (want->cache_buffers != fs->opts.cache_buffers)
		return "the buffer cache's size cannot change on a mounted filesystem";
	if (!want->readonly && !fs->journal)
		return "the image was opened read-only (the daemon could not open it for "
		       "writing, or it has features this ordfs can only read): unmount it and "
		       "mount it rw";
	return NULL;
}

static void apply_tunables(struct ordfs *fs, const struct ordfs_options *want)
{
	bool interval_changed = FS_OPT(fs, commit_interval_ms) != want->commit_interval_ms;
	FS_OPT_SET(fs, commit_interval_ms, want->commit_interval_ms);
	FS_OPT_SET(fs, barrier, want->barrier);
	FS_OPT_SET(fs, discard, want->discard);
	FS_OPT_SET(fs, errors, want->errors ? want->errors : fs->sb.errors);
	FS_OPT_SET(fs, flush_error, want->flush_error);
	FS_OPT_SET(fs, journal_ioprio, want->journal_ioprio);
	FS_OPT_SET(fs, atime.mode, want->atime.mode);
	FS_OPT_SET(fs, atime.nodiratime, want->atime.nodiratime);
	FS_OPT_SET(fs, atime.lazytime, want->atime.lazytime);
	if (fs->journal) {
		struct journal_tunables t = {
			.commit_interval_ms = want->commit_interval_ms,
			.barrier = want->barrier,
			.ioprio_plus1 = want->journal_ioprio + 1,
			.retry_failed_commits = want->flush_error == FLUSH_ERROR_REPORT,
		};
		journal_set_tunables(fs->journal, &t);
		if (interval_changed)
			writeback_interval_changed(fs);
	}
}

int ordfs_remount(struct ordfs *fs, const struct ordfs_options *want, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	ordfs_mutex_lock(&fs->remount_lock);
	int err = 0;
	struct ordfs_options now;
	ordfs_options_in_force(fs, &now);
	if (ordfs_is_shut_down(fs)) {
		*why = "the filesystem was shut down";
		err = -EIO;
		goto out;
	}
	*why = unchangeable(fs, want);
	if (*why) {
		err = -EINVAL;
		goto out;
	}
	if (want->readonly && !__atomic_load_n(&fs->remounted_ro, __ATOMIC_SEQ_CST) &&
	    !fs->opts.readonly)
		err = go_readonly(fs, why); /* also when it stopped: then only the flag */
	else if (!want->readonly && is_readonly(fs))
		err = go_readwrite(fs, why);
	if (err)
		goto out;
	apply_tunables(fs, want);
	/* Copies of written blocks are kept under report with barriers
	 * (mount.c, open_guard); a change of either changes that. */
	bool retain_now = now.flush_error == FLUSH_ERROR_REPORT && now.barrier;
	bool retain = want->flush_error == FLUSH_ERROR_REPORT && want->barrier;
	if (want->flush_error != now.flush_error || retain != retain_now) {
		err = flush_guard_set_policy(fs->bd, want->flush_error, retain);
		if (err)
			*why = "the flush that starts keeping copies of written blocks failed";
	}
out:
	ordfs_mutex_unlock(&fs->remount_lock);
	return err;
}
