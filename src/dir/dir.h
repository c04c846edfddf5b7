/*
 * dir.h - directories: a B+tree of entries keyed by name hash.
 *
 * Owns: the contents of directory inodes: index and leaf blocks (format.h)
 * stored as the directory's logical blocks, mapped by its extent tree.
 * "." and ".." are not stored: "." is the directory, ".." is inode.parent.
 * A lookup in a directory of n entries reads O(log n) blocks.
 *
 * Rules:
 *  - Callers hold dir->lock: shared for lookup/readdir/is_empty, exclusive
 *    for add/remove, and a handle with dir_credits() for changes.
 *  - Directory blocks are metadata: journaled (JWA_CSUM_HDR), verified when
 *    read (-EUCLEAN, nothing changed).  New directory blocks are allocated
 *    in the handle (alloc_blocks + extent_insert), never delayed.
 *  - Names are 1..255 bytes, contain no '/' or NUL and are not "." or "..":
 *    -EINVAL otherwise, -ENAMETOOLONG past 255.
 *  - readdir cookies are non-zero, < 2^63, strictly increasing along one
 *    readdir pass, and stay valid while other entries are added or removed
 *    (an entry added or removed meanwhile may or may not be seen, no entry is
 *    seen twice).  Cookies 1 and 2 never name an entry, so the FUSE glue may
 *    use them for "." and ".." and resume with dir_readdir(..., 2, ...).
 *  - d.size of a directory is its number of blocks times the block size.
 *
 * Design: docs/design/directories.md.
 */
#ifndef ORDFS_DIR_H
#define ORDFS_DIR_H

#include <stddef.h>
#include <stdint.h>

struct ordfs;
struct handle;
struct inode;

/* Validates a name (see rules).  0 or -EINVAL / -ENAMETOOLONG. */
int dir_check_name(const char *name, size_t len);

/* 0 with *ino and *dtype set, -ENOENT, or a negative errno. dtype may be NULL. */
int dir_lookup(struct ordfs *fs, struct inode *dir, const char *name, size_t len,
	       uint32_t *ino, uint8_t *dtype);
/* Adds name -> ino.  -EEXIST if the name exists (nothing changed). */
int dir_add(struct ordfs *fs, struct handle *h, struct inode *dir, const char *name,
	    size_t len, uint32_t ino, uint8_t dtype);
/* Removes name; its inode number in *ino if ino != NULL.  -ENOENT if absent. */
int dir_remove(struct ordfs *fs, struct handle *h, struct inode *dir, const char *name,
	       size_t len, uint32_t *ino);
/* Changes the inode (and type) an existing name points at (rename over). */
int dir_replace(struct ordfs *fs, struct handle *h, struct inode *dir, const char *name,
		size_t len, uint32_t ino, uint8_t dtype);

/* Calls emit for each entry after `cookie` (0 = from the start), in hash
 * order, until emit returns non-zero or the entries end.  next_cookie is
 * what to pass to resume after this entry.  Returns 0, or emit's non-zero
 * value if it stopped the walk, or a negative errno. */
typedef int (*dir_emit_fn)(void *ctx, const char *name, size_t len, uint32_t ino,
			   uint8_t dtype, uint64_t next_cookie);
int dir_readdir(struct ordfs *fs, struct inode *dir, uint64_t cookie, dir_emit_fn emit,
		void *ctx);

/* 1 if the directory has no entries, 0 if it has, or a negative errno. */
int dir_is_empty(struct ordfs *fs, struct inode *dir);
/* Frees every block of an empty directory (rmdir), under h. */
int dir_free_blocks(struct ordfs *fs, struct handle *h, struct inode *dir);

/* Worst-case metadata blocks one add or remove can dirty. */
uint32_t dir_credits(struct ordfs *fs, struct inode *dir);

/* Checker: verifies every block (checksums, sort order, index keys covering
 * their children, leaf chain, entry bounds) and reports each entry.  Returns
 * 0 if the structure is sound, -EUCLEAN after reporting problems via
 * problem_cb (which may be NULL), or another negative errno. */
struct dir_verify_ops {
	int (*entry_cb)(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype);
	void (*problem_cb)(void *ctx, uint64_t lblk, const char *what);
	void *ctx;
};
int dir_verify(struct ordfs *fs, struct inode *dir, const struct dir_verify_ops *ops);
/* dir_verify's `what` for an entry whose stored hash is not its name's
 * under the superblock's seed (the one problem a rebuilt index cures). */
#define DIR_VERIFY_BAD_HASH "entry hash does not match its name"


#endif
