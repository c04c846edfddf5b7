/*
 * known_used.h - blocks the allocator knows are in use although the block
 * bitmap says they are free: a damaged image (issue 36, "trust nothing at
 * allocation").
 *
 * Owns: the check the allocator makes of every block before it hands it
 * out, beyond the bitmap: is the block a metadata block this mount has in
 * its buffer cache (an extent-tree, directory or xattr block: the common
 * header's magic, one of those types and its own block number), and not
 * one this mount freed since?  Blocks freed (or given back unused) while
 * their buffer was cached are remembered, as long as the buffer stays
 * cached, so a freed block whose stale copy lingers in the cache is never
 * taken for one in use.
 *
 * Rules:
 *  - Every call is made with the allocator's lock held (alloc.c); the
 *    buffer cache's lock is taken inside it (a leaf).
 *  - Never wrong the other way: a block it calls in use was read or
 *    written as metadata during this mount and not freed since.  When it
 *    cannot remember a free (no memory) it stops answering "in use" for
 *    the rest of the mount.
 *  - What it cannot see: a block no structure of this mount has touched
 *    (file data, or metadata not read since the mount), a long symlink's
 *    block (no header), data logged by data=journal.  Those need the full
 *    cross-reference (fsck, the online scrub).  design/allocation.md.
 *  - Cost: one hash lookup in the buffer cache per block handed out (a
 *    header read when it is cached); one per block freed or given back,
 *    plus memory for those still cached (8 bytes each, at most eight
 *    times over: a hash table at most half full, pruned to what is still
 *    cached before it grows).
 */
#ifndef ORDFS_ALLOC_KNOWN_USED_H
#define ORDFS_ALLOC_KNOWN_USED_H

#include <stdbool.h>
#include <stdint.h>

struct bcache;
struct known_used;

int known_used_create(struct bcache *cache, struct known_used **out);
void known_used_destroy(struct known_used *k);
/* Blocks [start, start + len) are free again (freed under a handle, or a
 * claim given back): a cached copy of them is stale from now on. */
void known_used_note_free(struct known_used *k, uint64_t start, uint64_t len);
/* Is blockno a metadata block in use by what this mount has cached? */
bool known_used_block(struct known_used *k, uint64_t blockno);

#endif
