/*
 * recovery.c - replaying the journal after a crash (shared by the daemon's
 * mount and by fsck).
 *
 * Owns: journal_recover().  Three passes over one struct recovery, which
 * must agree on where the log ends:
 *
 *   PASS_SCAN    from the journal superblock's `start`, expecting its
 *                `sequence`, walk transactions (wrapping from the last log
 *                block to `first`) and find the first sequence that is not
 *                a complete, valid transaction: end_seq.  Nothing else.
 *   PASS_REVOKE  walk the valid transactions again and record, for every
 *                revoked block, the highest sequence revoking it.
 *   PASS_REPLAY  walk them a third time and write every tagged copy home,
 *                unless a transaction with sequence >= the copy's revoked
 *                the block, or the copy fails its tag checksum (counted,
 *                skipped: recover what we can).  Later transactions are
 *                replayed after earlier ones, so the newest copy wins.
 *   Then F(home) flush, journal superblock start = 0 and sequence =
 *   end_seq (the next after the last one replayed) [J7], F(super) flush.
 *   An end_seq at or past ORDFS_JSEQ_LIMIT (a log written by an ordfs
 *   before the limit) is written as ORDFS_JSEQ_LIMIT - 1: still past
 *   ORDFS_JSEQ_RENEW, so the next open for writing zeroes the log and
 *   starts again at 1 (journal.c), and never a value the reader refuses.
 *
 * What makes a transaction valid (anything else ends the log there):
 *  - it is a run of descriptor and revoke blocks, in any order, each
 *    descriptor followed by its copies in tag order, closed by a commit
 *    block; every non-copy block has the journal magic, its type, the
 *    expected sequence and a good tail checksum (ordfs_jblock_valid);
 *  - descriptor tag counts are at most ordfs_jtags_per_descriptor(), revoke
 *    counts at most ordfs_jrevokes_per_block() (counts come from the image);
 *  - every tag has only known flags and a target inside the filesystem and
 *    outside the journal: [0, block_count) minus [journal_start,
 *    +journal_blocks).  Block 0 is allowed because the primary superblock
 *    is journaled (orphan list head).  A tag outside that range can only
 *    come from corruption or a bug, and we refuse to guess: the transaction
 *    is treated as corrupt, i.e. the log ends before it;
 *  - the commit block's count equals the blocks before it, and its CRC,
 *    chained from csum_seed over those blocks' raw log bytes in log order,
 *    matches (so a missing or torn copy invalidates the transaction).
 *  A transaction with sequence UINT64_MAX also ends the log: there would be
 *  no next sequence to leave in the superblock.
 *
 * Rules kept:
 *  - The image is untrusted: every count and block number read from it is
 *    bounds-checked before use; no pass reads more than total - first log
 *    blocks (a log of endless valid blocks cannot loop us); revoke memory
 *    grows with the distinct revoked blocks, which the journal size bounds.
 *  - Passes REVOKE and REPLAY only walk what SCAN accepted, with the same
 *    checks; if the log reads differently on a later pass the device is
 *    lying and recovery fails with -EIO rather than guess.
 *  - Idempotent: nothing in the log is written until every home write is
 *    flushed; a crash at any point leaves a log that replays to the same
 *    image.  The first I/O error stops recovery with the log left intact.
 *  - JOURNAL_RECOVER_DRY_RUN reads and verifies everything, writes and
 *    flushes nothing, and fills the same info a real run would.
 *
 * journal_needs_recovery() lives in journal.c next to journal_open(), which
 * reads the journal superblock the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "journal_internal.h"
#include "../blockdev/blockdev.h"

enum recovery_pass { PASS_SCAN, PASS_REVOKE, PASS_REPLAY };

enum jblock_kind { JK_INVALID, JK_DESCRIPTOR, JK_REVOKE, JK_COMMIT };

/* Offsets inside descriptor, revoke and commit blocks (format.h). */
#define JB_COUNT_OFF 16u      /* u32: tags, revoke records or logged blocks */
#define JB_COMMIT_CRC_OFF 20u /* u32: chained crc over the logged blocks */
#define JB_RECORDS_OFF (ORDFS_JB_HDR + 8u) /* first tag / revoke record */

/* Empty slot marker.  Revokes of blocks >= block_count are never stored (no
 * tag can target them), so no stored block number can be UINT64_MAX. */
#define REVOKE_EMPTY UINT64_MAX
#define REVOKE_MIN_SLOTS 64u

struct revoke_slot {
	uint64_t block;
	uint64_t seq; /* highest sequence revoking the block */
};

/* Open-addressing hash table, power-of-two size, at most 3/4 full. */
struct revoke_table {
	struct revoke_slot *slots;
	size_t size;
	size_t used;
};

/* A position in the circular log and how many blocks may still be read. */
struct log_cursor {
	uint32_t pos;
	uint32_t left;
};

struct recovery {
	struct blockdev *bd;
	const struct ordfs_super *sb;
	struct journal_recovery_info *info;
	bool dry_run;
	uint32_t bs;
	struct ordfs_journal_super js;
	uint32_t capacity;      /* log blocks in the circular area */
	/* Where the log ends: set by PASS_SCAN, obeyed by the other passes. */
	uint64_t end_seq;       /* first sequence not valid */
	uint32_t valid_blocks;  /* log blocks the valid transactions span */
	struct revoke_table revokes;
	uint8_t *blk;           /* descriptor, revoke or commit block */
	uint8_t *copy;          /* one block copy */
};

/* ---- the circular log ---------------------------------------------------- */

static uint32_t log_next(const struct recovery *r, uint32_t pos)
{
	return pos + 1 >= r->js.total_blocks ? r->js.first : pos + 1;
}

static int log_read(struct recovery *r, uint32_t pos, uint8_t *buf)
{
	uint64_t off = (r->sb->journal_start + pos) * (uint64_t)r->bs;
	return blockdev_read(r->bd, buf, r->bs, off);
}

/* Reads the block under the cursor and advances.  Returns 1 if a block was
 * read, 0 if the cursor's budget is spent (nothing read), or a negative
 * errno. */
static int cursor_read(struct recovery *r, struct log_cursor *c, uint8_t *buf)
{
	if (c->left == 0)
		return 0;
	int err = log_read(r, c->pos, buf);
	if (err)
		return err;
	c->pos = log_next(r, c->pos);
	c->left--;
	return 1;
}

/* Advances over n blocks without reading them; -EIO if the budget (what
 * PASS_SCAN accepted) does not cover them. */
static int cursor_skip(struct recovery *r, struct log_cursor *c, uint32_t n)
{
	if (n > c->left)
		return -EIO;
	c->left -= n;
	c->pos = r->js.first + (uint32_t)(((uint64_t)c->pos - r->js.first + n) % r->capacity);
	return 0;
}

/* ---- recognising journal blocks ----------------------------------------- */

static bool target_in_range(const struct recovery *r, uint64_t target)
{
	uint64_t jstart = r->sb->journal_start;

	if (target >= r->sb->block_count)
		return false;
	return target < jstart || target - jstart >= r->sb->journal_blocks;
}

static const uint8_t *tag_at(const uint8_t *desc, uint32_t i)
{
	return desc + JB_RECORDS_OFF + (size_t)i * ORDFS_JTAG_SIZE;
}

static bool descriptor_body_ok(const struct recovery *r, const uint8_t *blk)
{
	uint32_t ntags = le_get32(blk + JB_COUNT_OFF);

	if (ntags > ordfs_jtags_per_descriptor(r->bs))
		return false;
	for (uint32_t i = 0; i < ntags; i++) {
		const uint8_t *tag = tag_at(blk, i);
		if ((le_get32(tag + 8) & ~ORDFS_JTAG_ESCAPED) != 0)
			return false;
		if (!target_in_range(r, le_get64(tag)))
			return false;
	}
	return true;
}

static bool revoke_body_ok(const struct recovery *r, const uint8_t *blk)
{
	return le_get32(blk + JB_COUNT_OFF) <= ordfs_jrevokes_per_block(r->bs);
}

/* What blk is as a block of transaction seq, with its counts and tags
 * checked; JK_INVALID for anything that is not (including a data copy). */
static enum jblock_kind classify(const struct recovery *r, const uint8_t *blk, uint64_t seq)
{
	uint32_t type = le_get32(blk + 4);

	if (type != ORDFS_JB_DESCRIPTOR && type != ORDFS_JB_REVOKE && type != ORDFS_JB_COMMIT)
		return JK_INVALID;
	if (!ordfs_jblock_valid(blk, r->bs, r->sb->csum_seed,
				(enum ordfs_journal_block_type)type, seq))
		return JK_INVALID;
	if (type == ORDFS_JB_COMMIT)
		return JK_COMMIT;
	if (type == ORDFS_JB_DESCRIPTOR)
		return descriptor_body_ok(r, blk) ? JK_DESCRIPTOR : JK_INVALID;
	return revoke_body_ok(r, blk) ? JK_REVOKE : JK_INVALID;
}

/* ---- PASS_SCAN ------------------------------------------------------------ */

static bool commit_closes(const uint8_t *commit, uint32_t nblocks, uint32_t crc)
{
	return le_get32(commit + JB_COUNT_OFF) == nblocks &&
	       le_get32(commit + JB_COMMIT_CRC_OFF) == crc;
}

/* Checks the transaction seq at cursor c.  Returns 1 and moves c past its
 * commit block if it is complete and valid, 0 if the log ends here, or a
 * negative errno. */
static int scan_transaction(struct recovery *r, uint64_t seq, struct log_cursor *c)
{
	struct log_cursor t = *c;
	uint32_t nblocks = 0, crc = r->sb->csum_seed;

	for (;;) {
		int n = cursor_read(r, &t, r->blk);
		if (n <= 0)
			return n;
		enum jblock_kind kind = classify(r, r->blk, seq);
		if (kind == JK_INVALID)
			return 0;
		if (kind == JK_COMMIT) {
			if (!commit_closes(r->blk, nblocks, crc))
				return 0;
			*c = t;
			return 1;
		}
		crc = ordfs_crc32c(crc, r->blk, r->bs);
		nblocks++;
		if (kind == JK_REVOKE)
			continue;
		uint32_t ntags = le_get32(r->blk + JB_COUNT_OFF);
		for (uint32_t i = 0; i < ntags; i++) {
			n = cursor_read(r, &t, r->copy);
			if (n <= 0)
				return n;
			crc = ordfs_crc32c(crc, r->copy, r->bs);
			nblocks++;
		}
	}
}

static int pass_scan(struct recovery *r)
{
	struct log_cursor c = { r->js.start, r->capacity };
	uint64_t seq = r->js.sequence;

	while (seq != UINT64_MAX) {
		int valid = scan_transaction(r, seq, &c);
		if (valid < 0)
			return valid;
		if (valid == 0)
			break;
		seq++;
	}
	r->end_seq = seq;
	r->valid_blocks = r->capacity - c.left;
	r->info->next_seq = seq;
	r->info->transactions = (uint32_t)(seq - r->js.sequence); /* <= capacity */
	return 0;
}

/* ---- PASS_REVOKE: the revoke table ---------------------------------------- */

static size_t revoke_hash(uint64_t block, size_t size)
{
	return (size_t)((block * 0x9e3779b97f4a7c15ull) >> 17) & (size - 1);
}

static struct revoke_slot *revoke_find(const struct revoke_table *t, uint64_t block)
{
	size_t i = revoke_hash(block, t->size);
	while (t->slots[i].block != REVOKE_EMPTY && t->slots[i].block != block)
		i = (i + 1) & (t->size - 1);
	return &t->slots[i];
}

static int revoke_table_resize(struct revoke_table *t, size_t size)
{
	struct revoke_table bigger = { malloc(size * sizeof(*t->slots)), size, 0 };

	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		bigger.slots[i].block = REVOKE_EMPTY;
	for (size_t i = 0; i < t->size; i++) {
		if (t->slots[i].block == REVOKE_EMPTY)
			continue;
		*revoke_find(&bigger, t->slots[i].block) = t->slots[i];
		bigger.used++;
	}
	free(t->slots);
	*t = bigger;
	return 0;
}

static void revoke_table_free(struct revoke_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->size = t->used = 0;
}

/* Records that transaction seq revokes block (keeping the highest seq). */
static int revoke_add(struct recovery *r, uint64_t block, uint64_t seq)
{
	struct revoke_table *t = &r->revokes;

	if (block >= r->sb->block_count)
		return 0; /* no tag can target it: nothing to cancel */
	if ((t->used + 1) * 4 > t->size * 3) {
		int err = revoke_table_resize(t, t->size ? t->size * 2 : REVOKE_MIN_SLOTS);
		if (err)
			return err;
	}
	struct revoke_slot *s = revoke_find(t, block);
	if (s->block == REVOKE_EMPTY) {
		s->block = block;
		s->seq = seq;
		t->used++;
	} else if (seq > s->seq) {
		s->seq = seq;
	}
	return 0;
}

/* A copy logged by transaction seq is cancelled by a revoke of its block in
 * a transaction with sequence >= seq (jbd2's rule). */
static bool revoked(const struct recovery *r, uint64_t block, uint64_t seq)
{
	if (r->revokes.size == 0)
		return false;
	const struct revoke_slot *s = revoke_find(&r->revokes, block);
	return s->block == block && s->seq >= seq;
}

static int record_revokes(struct recovery *r, const uint8_t *blk, uint64_t seq)
{
	uint32_t count = le_get32(blk + JB_COUNT_OFF); /* checked by classify */

	for (uint32_t i = 0; i < count; i++) {
		int err = revoke_add(r, le_get64(blk + JB_RECORDS_OFF + (size_t)i * 8), seq);
		if (err)
			return err;
	}
	if (r->info->revoke_records <= UINT32_MAX - count)
		r->info->revoke_records += count;
	else
		r->info->revoke_records = UINT32_MAX;
	return 0;
}

/* ---- PASS_REPLAY ---------------------------------------------------------- */

static uint32_t tag_csum(const struct recovery *r, uint64_t seq, const uint8_t *block)
{
	uint8_t le_seq[8];

	le_put64(le_seq, seq);
	return ordfs_crc32c(ordfs_crc32c(r->sb->csum_seed, le_seq, 8), block, r->bs);
}

/* Replays one tag whose copy is the block under cursor c. */
static int replay_tag(struct recovery *r, const uint8_t *tag, uint64_t seq,
		      struct log_cursor *c)
{
	uint64_t target = le_get64(tag);

	if (revoked(r, target, seq)) {
		r->info->blocks_revoked++;
		return cursor_skip(r, c, 1);
	}
	int n = cursor_read(r, c, r->copy);
	if (n <= 0)
		return n < 0 ? n : -EIO;
	if (le_get32(tag + 8) & ORDFS_JTAG_ESCAPED)
		le_put32(r->copy, ORDFS_JOURNAL_MAGIC);
	if (tag_csum(r, seq, r->copy) != le_get32(tag + 12)) {
		r->info->bad_tag_csums++;
		return 0;
	}
	if (!r->dry_run) {
		int err = blockdev_write(r->bd, r->copy, r->bs, target * (uint64_t)r->bs);
		if (err)
			return err;
	}
	r->info->blocks_replayed++;
	return 0;
}

static int replay_descriptor(struct recovery *r, const uint8_t *desc, uint64_t seq,
			     struct log_cursor *c)
{
	uint32_t ntags = le_get32(desc + JB_COUNT_OFF); /* checked by classify */

	for (uint32_t i = 0; i < ntags; i++) {
		int err = replay_tag(r, tag_at(desc, i), seq, c);
		if (err)
			return err;
	}
	return 0;
}

/* ---- walking the valid log (PASS_REVOKE and PASS_REPLAY) ----------------- */

static int walk_block(struct recovery *r, enum recovery_pass pass, enum jblock_kind kind,
		      uint64_t seq, struct log_cursor *c)
{
	switch (kind) {
	case JK_REVOKE:
		return pass == PASS_REVOKE ? record_revokes(r, r->blk, seq) : 0;
	case JK_DESCRIPTOR:
		if (pass == PASS_REPLAY)
			return replay_descriptor(r, r->blk, seq, c);
		return cursor_skip(r, c, le_get32(r->blk + JB_COUNT_OFF));
	default:
		return -EIO; /* PASS_SCAN accepted something else here */
	}
}

static int walk_transaction(struct recovery *r, enum recovery_pass pass, uint64_t seq,
			    struct log_cursor *c)
{
	for (;;) {
		int n = cursor_read(r, c, r->blk);
		if (n < 0)
			return n;
		enum jblock_kind kind = n ? classify(r, r->blk, seq) : JK_INVALID;
		if (kind == JK_COMMIT)
			return 0;
		int err = walk_block(r, pass, kind, seq, c);
		if (err)
			return err;
	}
}

static int walk_valid_log(struct recovery *r, enum recovery_pass pass)
{
	struct log_cursor c = { r->js.start, r->valid_blocks };

	for (uint64_t seq = r->js.sequence; seq < r->end_seq; seq++) {
		int err = walk_transaction(r, pass, seq, &c);
		if (err)
			return err;
	}
	return 0;
}

/* ---- setup and the final superblock --------------------------------------- */

/* The fields of the filesystem superblock recovery relies on. */
static int check_fs_geometry(struct blockdev *bd, const struct ordfs_super *sb)
{
	if (sb->log_block_size < ORDFS_MIN_BLOCK_LOG || sb->log_block_size > ORDFS_MAX_BLOCK_LOG)
		return -EUCLEAN;
	uint64_t bs = ordfs_block_size(sb);
	if (sb->block_count > (1ull << 48)) /* keeps block * bs inside 64 bits */
		return -EUCLEAN;
	if (sb->journal_start == 0 || sb->journal_start >= sb->block_count ||
	    sb->journal_blocks < 2 || sb->journal_blocks > sb->block_count - sb->journal_start)
		return -EUCLEAN;
	if (sb->journal_start + sb->journal_blocks > blockdev_size(bd) / bs)
		return -EUCLEAN;
	return 0;
}

static int read_journal_super(struct recovery *r)
{
	int err = log_read(r, 0, r->blk);
	if (err)
		return err;
	err = ordfs_journal_super_decode(r->blk, r->bs, r->sb->csum_seed, &r->js, NULL);
	if (err)
		return err;
	if (r->js.total_blocks != r->sb->journal_blocks)
		return -EUCLEAN;
	r->capacity = r->js.total_blocks - r->js.first;
	return 0;
}

/* The journal superblock's errno field as the caller may use it: 0, or a
 * negative errno.  Anything else non-zero (positive, below -4095, INT_MIN,
 * whose negation overflows) says an error was recorded but not which: it
 * is read as -EUCLEAN. */
static int32_t recorded_errno(int32_t field)
{
	if (field == 0 || (field < 0 && field >= -4095))
		return field;
	return -EUCLEAN;
}

static int recovery_init(struct recovery *r, struct blockdev *bd, const struct ordfs_super *sb,
			 unsigned flags, struct journal_recovery_info *info)
{
	memset(r, 0, sizeof(*r));
	memset(info, 0, sizeof(*info));
	r->bd = bd;
	r->sb = sb;
	r->info = info;
	r->dry_run = (flags & JOURNAL_RECOVER_DRY_RUN) != 0;
	int err = check_fs_geometry(bd, sb);
	if (err)
		return err;
	r->bs = ordfs_block_size(sb);
	r->blk = malloc(r->bs);
	r->copy = malloc(r->bs);
	if (!r->blk || !r->copy)
		return -ENOMEM;
	err = read_journal_super(r);
	if (err)
		return err;
	info->first_seq = info->next_seq = r->js.sequence;
	info->needed = r->js.start != 0;
	info->journal_err = recorded_errno(r->js.err);
	return 0;
}

static void recovery_free(struct recovery *r)
{
	revoke_table_free(&r->revokes);
	free(r->blk);
	free(r->copy);
}

/* Home blocks durable, then the empty log with the next sequence, durable
 * [J7].  Other journal superblock fields (errno, uuid) are kept. */
static int mark_log_empty(struct recovery *r)
{
	int err = blockdev_flush(r->bd);
	if (err)
		return err;
	struct ordfs_journal_super js = r->js;
	js.start = 0;
	/* A log an ordfs before the sequence limit wrote may end past it: the
	 * largest sequence the reader accepts says "empty, renew at the next
	 * open for writing" just as well (journal_open zeroes the log then). */
	js.sequence = r->end_seq < ORDFS_JSEQ_LIMIT ? r->end_seq : ORDFS_JSEQ_LIMIT - 1;
	ordfs_journal_super_encode(&js, r->sb->csum_seed, r->blk);
	err = blockdev_write(r->bd, r->blk, r->bs, r->sb->journal_start * (uint64_t)r->bs);
	if (err)
		return err;
	return blockdev_flush(r->bd);
}

int journal_recover(struct blockdev *bd, const struct ordfs_super *sb, unsigned flags,
		    struct journal_recovery_info *info)
{
	struct recovery r;
	int err = recovery_init(&r, bd, sb, flags, info);
	if (err || !info->needed)
		goto out;
	err = pass_scan(&r);
	if (err)
		goto out;
	err = walk_valid_log(&r, PASS_REVOKE);
	if (err)
		goto out;
	err = walk_valid_log(&r, PASS_REPLAY);
	if (err || r.dry_run)
		goto out;
	err = mark_log_empty(&r);
out:
	recovery_free(&r);
	return err;
}

int journal_clear_error(struct blockdev *bd, const struct ordfs_super *sb, bool *cleared)
{
	uint32_t bs = ordfs_block_size(sb);
	uint8_t *blk = malloc(bs);
	struct ordfs_journal_super js;
	*cleared = false;
	if (!blk)
		return -ENOMEM;
	int err = blockdev_read(bd, blk, bs, sb->journal_start * (uint64_t)bs);
	if (!err)
		err = ordfs_journal_super_decode(blk, bs, sb->csum_seed, &js, NULL);
	if (!err && js.err != 0) {
		js.err = 0;
		ordfs_journal_super_encode(&js, sb->csum_seed, blk);
		err = blockdev_write(bd, blk, bs, sb->journal_start * (uint64_t)bs);
		if (!err)
			err = blockdev_flush(bd);
		*cleared = !err;
	}
	free(blk);
	return err;
}

#define ZERO_CHUNK_BLOCKS 64u

int journal_log_zero(struct blockdev *bd, uint64_t journal_start, uint32_t bs,
		     uint32_t total_blocks)
{
	uint32_t chunk = total_blocks - 1 < ZERO_CHUNK_BLOCKS ? total_blocks - 1 : ZERO_CHUNK_BLOCKS;
	uint8_t *zero = calloc(chunk ? chunk : 1, bs);
	if (!zero)
		return -ENOMEM;
	int err = 0;
	for (uint32_t i = 1; i < total_blocks && !err; i += chunk) {
		uint32_t n = total_blocks - i < chunk ? total_blocks - i : chunk;
		err = blockdev_write(bd, zero, (size_t)n * bs, (journal_start + i) * (uint64_t)bs);
	}
	free(zero);
	return err ? err : blockdev_flush(bd);
}

int journal_reset(struct blockdev *bd, const struct ordfs_super *sb)
{
	uint32_t bs = ordfs_block_size(sb);
	uint8_t *blk = calloc(1, bs);
	if (!blk)
		return -ENOMEM;
	/* Every log block zeroed first, so no stale descriptor or commit
	 * record can ever match the new sequence. */
	int err = journal_log_zero(bd, sb->journal_start, bs, sb->journal_blocks);
	if (!err) {
		struct ordfs_journal_super js = {
			.block_size = bs,
			.total_blocks = sb->journal_blocks,
			.first = 1,
			.start = 0,
			.sequence = 1,
			.err = 0,
		};
		memcpy(js.uuid, sb->uuid, ORDFS_UUID_LEN);
		ordfs_journal_super_encode(&js, sb->csum_seed, blk);
		err = blockdev_write(bd, blk, bs, sb->journal_start * (uint64_t)bs);
	}
	if (!err)
		err = blockdev_flush(bd);
	free(blk);
	return err;
}
