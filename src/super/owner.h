/*
 * owner.h - the owner record: who holds an image read-write, for storage
 * that no flock covers (an NBD export another machine may open too).
 *
 * Owns: claiming, keeping (a heartbeat) and releasing the record at the
 * device's last 512 bytes (format.h, "owner record"), the way ext4's
 * multi-mount protection does it.
 *
 * Rules:
 *  - A record that is not valid, or says free, may be claimed.
 *  - A held record is the holder's while it changes: the claimer reads it
 *    again after twice the holder's heartbeat interval (at most
 *    OWNER_MAX_INTERVAL_MS, whatever the record says) and a second; if it
 *    changed, the image is in use.  A holder on this host whose process is
 *    gone is stale at once (no wait): kill -9 of a daemon, then fsck.
 *  - A claim is written, flushed, and read back after settle_ms: a
 *    claimer that raced us and wrote later wins, and we are refused.
 *  - While held, a heartbeat rewrites the record (seq + 1, time) every
 *    interval; if it finds another claimer's record there, it calls
 *    `lost` once and stops: two writers on one image, the caller must stop
 *    writing at once.
 *  - Only read-write users claim.  The record is written directly on the
 *    device, never through the journal.
 */
#ifndef ORDFS_SUPER_OWNER_H
#define ORDFS_SUPER_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct blockdev;
struct owner_claim;

#define OWNER_DEFAULT_INTERVAL_MS 1000u
/* The longest heartbeat interval a record may claim (FORMAT.md): a claimer
 * reads a larger one as this, so a silent holder costs it at most
 * 2 * 5 s + 1 s = 11 s, whatever an untrusted record says; and a holder
 * never beats more slowly than this (owner_claim clamps its own), or
 * another claimer would take the image from it while it runs. */
#define OWNER_MAX_INTERVAL_MS 5000u

struct owner_opts {
	const char *program;     /* "ordfs", "mkfs.ordfs", ... */
	unsigned interval_ms;    /* heartbeat; 0: OWNER_DEFAULT_INTERVAL_MS;
				  * at most OWNER_MAX_INTERVAL_MS */
	unsigned settle_ms;      /* wait before reading a claim back */
	/* Another claimer took the image (from the heartbeat thread, once). */
	void (*lost)(void *ctx);
	void *lost_ctx;
};

/* Does the record fit on this device past the filesystem's backup
 * superblock (always with blocks of 2 KiB and more)? */
bool owner_record_fits(uint64_t dev_size, uint64_t block_count, uint32_t block_size);

/* Claims the image.  0; -EBUSY with *why naming the holder; or an I/O
 * error.  No thread yet: owner_start starts the heartbeat. */
int owner_claim(struct blockdev *bd, const struct owner_opts *opts, struct owner_claim **out,
		char *why, size_t why_len);
/* The device the claim writes to from now on: the same image, opened again
 * after a fork; NULL while there is none (release then writes nothing).
 * Not while the heartbeat runs.  c may be NULL (nothing to do). */
void owner_set_device(struct owner_claim *c, struct blockdev *bd);
/* The device is about to grow (an online grow): the heartbeat stops, so
 * that it never looks for the record at an end the device no longer
 * has.  owner_resume, once the device has its new size, writes the record
 * at the new end, flushes it and starts the heartbeat again (the old
 * record is left where it was: the filesystem's new blocks cover it).
 * Both do nothing for c NULL or a claim not running. */
void owner_pause(struct owner_claim *c);
int owner_resume(struct owner_claim *c);
/* Starts the heartbeat on the claim's device. */
int owner_start(struct owner_claim *c);
/* Stops the heartbeat, marks the record free (unless it was lost) on the
 * claim's device, flushes, frees c.  c may be NULL. */
void owner_release(struct owner_claim *c);
/* Stops the heartbeat, writes back what the record's sector held before
 * the claim (a start that was refused leaves no trace), frees c. */
void owner_undo(struct owner_claim *c);
/* Frees c without writing (the device is gone, or the process exits
 * without a clean release: the next claimer finds a stale record). */
void owner_abandon(struct owner_claim *c);

/* What a read-write user does after reading the superblock: claims the
 * record where it fits and, with start, starts the heartbeat.  Over NBD
 * the record must fit (-ENOSPC otherwise); on a file or block device the
 * flock the caller holds suffices where it does not (*out = NULL).  A
 * claim over NBD settles for OWNER_NBD_SETTLE_MS. */
#define OWNER_NBD_SETTLE_MS 500u
int owner_take(struct blockdev *bd, uint64_t block_count, uint32_t block_size,
	       const struct owner_opts *opts, bool start, struct owner_claim **out, char *why,
	       size_t why_len);

/* Reads the record: 0 with *held and the holder's description in why when
 * held, else *held false. */
int owner_describe(struct blockdev *bd, bool *held, char *why, size_t why_len);

/* Is the record's holder a running process of this host?  False for a
 * free record, one of another host, or a holder that has exited. */
bool owner_holder_runs(struct blockdev *bd);

#endif
