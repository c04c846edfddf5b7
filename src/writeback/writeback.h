/*
 * writeback.h - the writeback layer: getting delayed data from the page
 * index (inode/pages.h) onto the image, the bound on dirty data, and the
 * writeback thread.
 *
 * Owns:
 *  - the write routes (route.h) and their execution (writeback.c):
 *    writeback of a file claims blocks for its delayed pages, writes the
 *    data there, and only then starts the handle that marks the bitmap
 *    and maps the extent (or raises the size over a written last block)
 *    [J1], so the transaction that makes the data reachable never waits
 *    for it and a commit carries no other file's data: fsync of one file
 *    writes one file;
 *  - the dirty limit and the bandwidth estimate that sizes it, and the
 *    throttling of a writer past it (limit.c);
 *  - the writeback thread (thread.c).
 *
 * Rules: every call here is made with no handle held [J8]; the "_locked"
 * calls with inode->lock held exclusively.  Writeback of one inode never
 * waits for another inode's data.  A page that fails to be written stays
 * dirty and its error goes to the file's errseq (reported once per open
 * file description).
 *
 * Design: docs/design/write-routes.md.
 */
#ifndef ORDFS_WRITEBACK_H
#define ORDFS_WRITEBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ordfs;
struct inode;

/* Writes back every dirty page of the inode.  `waited`: a caller waits
 * for the commit (fsync), so in data=ordered a little new data is logged
 * (route.h). */
int writeback_file_locked(struct ordfs *fs, struct inode *inode, bool waited);
/* Writes back every dirty inode in the cache, each in one hold of its
 * lock (sync, unmount); `waited` as for writeback_file_locked. */
int writeback_all(struct ordfs *fs, bool waited);
/* The writeback thread's periodic pass: every dirty file, in slices with
 * its lock let go between them (data written meanwhile may wait for the
 * next pass). */
int writeback_periodic(struct ordfs *fs);
/* Background writeback of the lowest max_pages dirty pages of every
 * file (one slice each). */
int writeback_slices(struct ordfs *fs, uint64_t max_pages);
/* The writeback thread's early pass: slices of every dirty file until
 * the dirty data is down to half the background threshold. */
int writeback_early(struct ordfs *fs);
/* Gives the mapped blocks [lblk, lblk + count) extent flags `flags`
 * (extent_set_flags) in bounded handles, raising d.size to disk_size in
 * each.  `orders_data`: the change makes data written in place, and not
 * yet durable, visible, so its commit needs F1 first. */
int writeback_set_extent_flags(struct ordfs *fs, struct inode *inode, uint64_t lblk,
			       uint64_t count, uint32_t flags, uint64_t disk_size,
			       bool orders_data);

/* The dirty limit (limit.c).  Dirty pages fs-wide past which a writer
 * writes back its own pages: the dirty_limit option, or about a second of
 * the image's measured write bandwidth. */
uint64_t writeback_dirty_limit_pages(const struct ordfs *fs);
/* Dirty pages fs-wide past which the writeback thread starts early. */
uint64_t writeback_background_pages(const struct ordfs *fs);
/* Feeds one timed bulk write into the bandwidth estimate. */
void writeback_note_bandwidth(struct ordfs *fs, size_t bytes, uint64_t ns);
/* After a write dirtied pages of the inode: kicks the thread past the
 * background threshold and, past the limit, writes back the writer's own
 * lowest pages (the heavy writer is throttled, not the fsync caller). */
int writeback_balance_dirty_locked(struct ordfs *fs, struct inode *inode);
/* Writes back the inode's lowest max_pages pages (writeback.c). */
int writeback_some_locked(struct ordfs *fs, struct inode *inode, bool waited,
			  uint64_t max_pages);

/* The writeback thread (thread.c): started at a read-write mount when the
 * commit interval is not 0, stopped first at unmount.  writeback_kick
 * asks it to start writing back early (cheap when it already was). */
void writeback_thread_start(struct ordfs *fs);
/* Blocks the allocator refused since the last call (free in a damaged
 * bitmap but known in use: alloc/known_used.h) go through errors= now,
 * with no handle open: after each periodic pass, and at unmount.  Returns
 * the error errors= gave (0 when nothing was refused). */
int writeback_report_refused(struct ordfs *fs);
void writeback_thread_stop(struct ordfs *fs);
void writeback_kick(struct ordfs *fs);
/* A remount changed commit=: the thread's next pass is one new interval
 * from now (and a thread starts if commit=0 kept it from starting). */
void writeback_interval_changed(struct ordfs *fs);

/* Background writeback goes per hold of a file's lock in slices of this
 * size (the writer goes on between them). */
#define BG_SLICE_BYTES (1u << 20)

#endif
