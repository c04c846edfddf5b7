/*
 * check.h - the library's consistency checker (fsck.ordfs grows from it).
 *
 * Owns: a read-only walk of a whole image that compares what is reachable
 * with what is recorded: inodes against the inode bitmap, blocks of every
 * inode (extent trees, directories) against the block bitmap and against
 * each other, directory structure, link counts, ".." of directories, the
 * orphan list and the superblock's summary counts.
 *
 * Rules: never writes; never trusts a field (everything goes through the
 * verifying decoders); reports every problem through the callback with a
 * code from check_problem and a one-line message, and keeps going.
 *
 * Design: docs/design/checker.md.
 */
#ifndef ORDFS_CHECK_H
#define ORDFS_CHECK_H

#include <stdbool.h>
#include <stdint.h>

struct blockdev;

enum check_problem {
	CHK_SUPER = 1,          /* superblock unreadable or invalid */
	CHK_JOURNAL_NOT_EMPTY,  /* journal needs replay */
	CHK_INODE_CORRUPT,      /* inode fails its checksum or decode */
	CHK_INODE_BITMAP,       /* inode bitmap disagrees with the inode table */
	CHK_EXTENT_TREE,        /* bad extent tree block or record */
	CHK_BLOCK_RANGE,        /* block outside the data area */
	CHK_BLOCK_DUP,          /* block claimed twice */
	CHK_BLOCK_BITMAP,       /* block bitmap disagrees with what is in use */
	CHK_BLOCK_COUNT,        /* inode's blocks count is wrong */
	CHK_SIZE,               /* size disagrees with the blocks mapped */
	CHK_DIR_STRUCT,         /* directory block or index problem */
	CHK_DIR_ENTRY,          /* entry points at a free/bad inode or wrong type */
	CHK_DIR_PARENT,         /* ".." of a directory is wrong */
	CHK_DIR_LOOP,           /* directory reachable twice */
	CHK_LINK_COUNT,         /* link count disagrees with the entries */
	CHK_UNREACHABLE,        /* in-use inode not reachable and not orphaned */
	CHK_ORPHAN,             /* orphan list problem */
	CHK_SUMMARY,            /* superblock free counts wrong (clean image) */
	CHK_XATTR,              /* bad extended attribute block */
	CHK_SUPER_COPY,         /* a superblock's two sector copies differ */
	CHK_FILE_FLAGS,         /* file flags unknown, wrong for the inode's type,
				   or without the superblock's feature */
	CHK_SYMLINK,            /* a symlink the daemon's readlink refuses
				   (ordfs_symlink_check) */
};

#define CHECK_PASSES 5u

/* What a check found that a repair can act on (check/repair.c), in the
 * order repairs apply them.  Filled when check_result.findings is set. */
struct check_entry_fix {
	uint32_t dir;
	uint32_t ino;     /* retype: the inode the name stays pointing at */
	uint8_t dtype;    /* retype: the right type */
	char name[256];
};

/* A directory whose entries' hashes are not their names' under the
 * superblock's seed: rebuilt with all of them (every entry so: the seed
 * changed), or without those (some: their names or hashes are damaged;
 * their inodes go to lost+found next round). */
struct check_rehash {
	uint32_t dir;
	bool drop_bad;
};

struct check_block_ref {
	uint32_t ino;
	uint64_t block;
};

struct check_size_fix {
	uint32_t ino;
	uint64_t size;
};

struct check_inode_fix {
	uint32_t ino;
	uint32_t links, parent;
	uint64_t blocks, size;
	uint32_t attr_flags;
	bool fix_links, fix_parent, fix_blocks, fix_size, drop_xattr, fix_flags;
};

#define CHECK_VEC(T) struct { T *v; uint32_t n, cap; }

struct check_findings {
	/* stage A, raw inode slots */
	CHECK_VEC(uint32_t) clear_inodes;   /* fail their checksum: zeroed */
	CHECK_VEC(uint32_t) empty_inodes;   /* bad extent tree or directory,
					       blocks out of range, tree blocks
					       claimed twice: truncated to nothing */
	CHECK_VEC(struct check_block_ref) clone_blocks; /* data blocks an earlier
					       inode claimed: the extents holding
					       them get copies */
	CHECK_VEC(uint32_t) strip_flags;    /* file-flag bits no ordfs defines:
					       rewritten without them */
	CHECK_VEC(struct check_size_fix) dir_sizes; /* directories whose size is
					       not where their blocks end: set
					       (raw, before any name is looked up:
					       the directory code reads only the
					       blocks its size covers) */
	/* stage B, a read-write mount */
	CHECK_VEC(struct check_entry_fix) drop_entries;   /* point at nothing */
	CHECK_VEC(struct check_entry_fix) retype_entries; /* wrong file type */
	CHECK_VEC(uint32_t) unreachable;    /* to /lost+found */
	CHECK_VEC(struct check_rehash) rehash_dirs; /* directories whose index
					       is rebuilt from their entries
					       (first, alone in its round) */
	/* stage C, a read-write mount */
	CHECK_VEC(struct check_inode_fix) inode_fixes;
	/* stage D, raw */
	bool bitmaps_wrong, summary_wrong, clean_with_orphans;
	bool super_copy_stale, journal_super_copy_stale; /* rewrite both copies */
	bool file_flags_feature;  /* inodes have flags, the superblock lacks
				     ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS */
	uint8_t *blocks_found;  /* bit per block in use (metadata included) */
	uint8_t *inodes_found;  /* bit per inode in use (bit i = inode i + 1) */
	/* stage R, raw: the root inode's slot is unreadable, free, or no
	 * directory (the mount refused it): a new, empty root replaces it,
	 * and what the old one named goes to /lost+found (e2fsck) */
	bool root_unusable;
	/* problems no stage handles */
	uint32_t unfixable;
};

void check_findings_free(struct check_findings *f);

struct check_result {
	uint32_t problems;
	uint64_t inodes_used, dirs, files, blocks_used;
	void (*report)(void *ctx, enum check_problem code, const char *msg);
	void *ctx;
	/* Optional: called as each pass (1..CHECK_PASSES) starts (done 0),
	 * now and then within it, and as it ends (done == total). */
	void (*progress)(void *ctx, unsigned pass, uint64_t done, uint64_t total);
	/* Optional: filled with what a repair can fix (free with
	 * check_findings_free). */
	struct check_findings *findings;
};

/* The name of a pass, for progress output. */
const char *check_pass_name(unsigned pass);
/* A short name for each problem code ("link-count", ...). */
const char *check_problem_name(enum check_problem code);

/* Checks the image on bd (not modified).  Returns 0 when the check ran
 * (result->problems tells whether it found anything) or a negative errno
 * when it could not run at all (unreadable device, out of memory). */
int ordfs_check(struct blockdev *bd, struct check_result *result);

/* ---- repair (repair.c) -------------------------------------------------- */

struct repair_result {
	uint32_t rounds;   /* check + repair rounds run */
	uint32_t fixes;    /* changes made */
	uint32_t problems; /* left after the last check */
};

/* Checks and repairs the image on bd (journal already replayed), round
 * after round until a check is clean or what is left cannot be fixed:
 * inodes that fail their checksum are cleared; inodes whose extent tree
 * or directory is damaged, or whose blocks are out of range or claimed
 * twice, are truncated to nothing; entries pointing at nothing are
 * removed, entries of the wrong type retyped; unreachable inodes go to
 * /lost+found (created if missing); link counts, '..', block counts and
 * sizes are set to what was found; the bitmaps and the summary counts are
 * rebuilt.  report (may be NULL) sees the problems of the first round.
 * Entry and inode changes go through the journal of a read-write mount,
 * so a crash during a repair leaves a consistent image too. */
#define REPAIR_PREEN 0x1u /* -p: only what loses nothing (no inode cleared or
			       truncated, no name removed or moved) */
int ordfs_repair(struct blockdev *bd, unsigned flags,
		 void (*report)(void *ctx, enum check_problem code, const char *msg), void *ctx,
		 struct repair_result *out);

#endif
