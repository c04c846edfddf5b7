/*
 * hostile.h - what the files of the hostile-image harness share
 * (tests/hostile/README.md says how to run it and what it checks).
 *
 * The files, one job each: base.c builds the base images (mkfs and a
 * populated tree, through the library); mutator.c damages one structure
 * of a copy per case, by seed, and fixes every checksum it touched;
 * session.c is an in-process FUSE session over the daemon's own
 * lowlevel operations table (requests in the kernel's wire format,
 * replies caught by a custom writev); walk.c is the walk through that
 * session and the oracle; hostile.c runs the cases, each in a forked
 * child, and counts them.
 */
#ifndef ORDFS_HOSTILE_H
#define ORDFS_HOSTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/format.h"

#define H_BS 1024u
#define H_IMG_SIZE (4u << 20)

/* ---- base images (base.c) ---------------------------------------------- */

enum h_base {
	H_BASE_CLEAN,   /* unmounted cleanly: an empty journal */
	H_BASE_LIVE,    /* the last transactions left in the journal (a crash) */
	H_BASES
};

struct h_image {
	uint8_t *bytes;
	size_t size;
	struct ordfs_super sb; /* as built (the mutator's map of the image) */
};

/* Builds base image kind into *out (0 or a negative errno, *why set). */
int h_base_build(enum h_base kind, struct h_image *out, const char **why);

/* ---- the mutator (mutator.c) ------------------------------------------- */

enum h_struct {
	HS_SUPER,       /* superblock fields (both sector copies) */
	HS_BBITMAP,     /* block bitmap bits */
	HS_IBITMAP,     /* inode bitmap bits */
	HS_INODE,       /* inode slot fields */
	HS_EXTENT,      /* extent-tree roots and nodes */
	HS_DIR,         /* directory leaves and index nodes */
	HS_XATTR,       /* xattr blocks */
	HS_JSUPER,      /* the journal superblock */
	HS_JBLOCK,      /* journal blocks: descriptors, copies, revokes, commits */
	HS_OWNER,       /* the owner record */
	HS_LOOP,        /* cross-structure loops (two directories' '..', entries) */
	HS_COUNT
};

const char *h_struct_name(enum h_struct s);
/* The structure named, or -1. */
int h_struct_parse(const char *name);

/* Damages img (a copy of a base image whose superblock is sb) as seed
 * says: the structure (want, or chosen by seed when want is -1) and the
 * mutation.  Every checksum the mutation touched is set again.  0 with
 * *which and desc (one line) set, or -ENOENT when the image has no target
 * for it (nothing changed). */
int h_mutate(uint8_t *img, size_t size, const struct ordfs_super *sb, uint64_t seed, int want,
	     enum h_struct *which, char *desc, size_t desc_len);

/* A small deterministic generator (splitmix64). */
static inline uint64_t h_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the session (session.c) ------------------------------------------- */

struct h_session;
struct daemon_ctx;

/* A session over ordfs_fuse_ops for dc, INIT done. */
int h_session_new(struct daemon_ctx *dc, struct h_session **out);
void h_session_free(struct h_session *s);

/* One request: opcode on nodeid, its argument the concatenation of up to
 * three parts.  Returns the reply's error (0 or a negative errno); the
 * reply's payload is in *out (valid until the next request), its length
 * in *out_len.  -ENOMSG: no reply at all (FORGET). */
int h_request(struct h_session *s, uint32_t opcode, uint64_t nodeid, const void *a, size_t alen,
	      const void *b, size_t blen, const void *c, size_t clen, const uint8_t **out,
	      size_t *out_len);

/* ---- the walk (walk.c) --------------------------------------------------- */

struct h_walk_result {
	char failure[512];  /* empty: the oracle found nothing */
	unsigned requests;  /* sent */
	unsigned euclean;   /* replies EUCLEAN or EIO */
	char first_euclean[64]; /* the first request answered EUCLEAN: "READLINK node 87" */
	bool mounted;       /* the mount was accepted */
	bool readonly;      /* mounted read-only (the image recorded an error) */
};

/* Mounts the image in memory (img, size), walks it through the daemon's
 * operations, unmounts, mounts again read-only and checks the files the
 * walk read and did not touch.  The image bytes are updated in place. */
void h_walk(uint8_t *img, size_t size, struct h_walk_result *r);

/* Mounts the image in memory as the walk does and runs the online scrub
 * (check/scrub.h) before anything is written: how many block problems
 * it reports (a block mapped twice, or mapped and marked free), or a
 * negative errno when the image does not mount.  img is changed (the
 * mount's own writes). */
int h_scrub_block_problems(uint8_t *img, size_t size);

#endif
