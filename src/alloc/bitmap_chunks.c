/*
 * bitmap_chunks.c - an on-disk bitmap in memory, a bitmap block at a time
 * (bitmap_chunks.h says the rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap_chunks.h"
#include "../base/log.h"
#include "../base/ordfs_assert.h"
#include "../blockdev/blockdev.h"
#include "../cache/bcache.h"
#include "../format/endian_le.h"

/* 64 MiB of loaded bits by default: every chunk of a 2 TiB image with
 * 4 KiB blocks, a sixteenth of a 32 TiB one. */
#define DEFAULT_MAX_LOADED_BYTES (64u << 20)
/* Bitmap blocks read in one request when counting at mount. */
#define COUNT_RUN 256u

enum chunk_state { CHUNK_DISK = 0, CHUNK_ALL_FREE, CHUNK_UNREADABLE };

struct chunk {
	uint64_t *bits;    /* NULL: not loaded; with hints, `words` more
			      words follow: the hint bits */
	uint32_t free;     /* clear bits inside the counted range */
	uint32_t unhinted; /* loaded, with hints: of those, not hinted */
	uint8_t state;     /* where its bits come from (enum chunk_state) */
};

struct chunks {
	struct chunks_config cfg;
	uint32_t bits_per_chunk;
	uint32_t words;            /* uint64_t words per chunk */
	uint64_t nchunks;
	struct chunk *v;
	/* Loaded chunks, oldest first: a ring of ring_cap slots holding
	 * `loaded` chunk numbers from ring_head on. */
	uint64_t *ring;
	size_t ring_cap, ring_head, loaded, max_loaded;
	uint64_t *scratch;         /* one chunk's words, for comparisons */
	bool holding;              /* chunks_hold: nothing is dropped */
	bool hints;                /* cfg.hint_load given */
	uint64_t unhinted;         /* sum of loaded chunks' `unhinted` */
};

static bool word_bit(const uint64_t *w, uint32_t bit)
{
	return (w[bit / 64] >> (bit % 64)) & 1;
}

/* Words a loaded chunk holds: its bits, and as many hint bits. */
static size_t chunk_words(const struct chunks *m)
{
	return (size_t)m->words * (m->hints ? 2 : 1);
}

static uint64_t *hint_words(const struct chunks *m, uint64_t *bits)
{
	return bits + m->words;
}

/* The counted bits of chunk ci: [lo, hi) relative to the chunk. */
static void counted_range(const struct chunks *m, uint64_t ci, uint32_t *lo, uint32_t *hi)
{
	uint64_t first = ci * m->bits_per_chunk, last = first + m->bits_per_chunk;
	uint64_t from = m->cfg.count_from > first ? m->cfg.count_from : first;
	uint64_t to = m->cfg.count_to < last ? m->cfg.count_to : last;
	if (from >= to) {
		*lo = *hi = 0;
		return;
	}
	*lo = (uint32_t)(from - first);
	*hi = (uint32_t)(to - first);
}

/* Where chunk ci's bitmap block is. */
static uint64_t chunk_block(const struct chunks *m, uint64_t ci)
{
	return m->cfg.sb ? ordfs_block_bitmap_block(m->cfg.sb, ci) : m->cfg.bitmap_start + ci;
}

/* Chunks whose blocks follow each other from the first one (the block
 * bitmap's area; all of the inode bitmap's). */
static uint64_t contiguous_chunks(const struct chunks *m)
{
	if (m->cfg.sb && m->cfg.sb->block_bitmap_blocks < m->nchunks)
		return m->cfg.sb->block_bitmap_blocks;
	return m->nchunks;
}

/* A bitmap block fresh from the device: header, checksum and (a group
 * bitmap block) its own bit. */
static int verify_block(const struct chunks *m, uint64_t ci, const uint8_t *data)
{
	if (m->cfg.sb)
		return ordfs_block_bitmap_verify(m->cfg.sb, ci, data);
	return ordfs_block_verify(data, m->cfg.block_size, m->cfg.csum_seed, m->cfg.type,
				  chunk_block(m, ci));
}

/* The bitmap block's bits (as words) into out, from its buffer.  A
 * block that comes from the device now (not cached: the image may have
 * changed under the mount, an NBD export someone else runs) is verified
 * in full, checksum and a group bitmap block's own bit included, as at
 * the mount; a cached one is the allocator's own copy (only it changes
 * bitmap buffers, under its lock, which the caller holds). */
static int read_block_bits(struct chunks *m, uint64_t ci, bool verify, uint64_t *out)
{
	struct buf *b;
	uint64_t blockno = chunk_block(m, ci);
	if (!verify && !bcache_contains(m->cfg.cache, blockno))
		verify = true;
	int err = bcache_read(m->cfg.cache, blockno, &b);
	if (err)
		return err;
	if (verify) {
		err = verify_block(m, ci, b->data);
	} else if (le_get32(b->data) != ORDFS_BLOCK_MAGIC || le_get16(b->data + 4) != m->cfg.type ||
		   le_get64(b->data + 16) != blockno ||
		   (m->cfg.sb && ci >= m->cfg.sb->block_bitmap_blocks &&
		    !ordfs_bitmap_bit(b->data, 0))) {
		/* A buffer the journal holds may carry a stale checksum in
		 * memory: only its structure is checked once mounted (a group
		 * bitmap block's own bit is set, whatever else changed). */
		err = -EUCLEAN;
	}
	if (!err) {
		for (uint32_t w = 0; w < m->words; w++)
			out[w] = le_get64(b->data + ORDFS_BLOCK_HDR_SIZE + (size_t)w * 8);
	}
	bcache_put(m->cfg.cache, b);
	return err;
}

static int ring_push(struct chunks *m, uint64_t ci)
{
	if (m->loaded == m->ring_cap) {
		size_t cap = m->ring_cap ? m->ring_cap * 2 : 64;
		uint64_t *r = malloc(cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		for (size_t k = 0; k < m->loaded; k++)
			r[k] = m->ring[(m->ring_head + k) % m->ring_cap];
		free(m->ring);
		m->ring = r;
		m->ring_cap = cap;
		m->ring_head = 0;
	}
	m->ring[(m->ring_head + m->loaded) % m->ring_cap] = ci;
	m->loaded++;
	return 0;
}

static uint64_t ring_pop(struct chunks *m)
{
	ORDFS_ASSERT(m->loaded > 0);
	uint64_t ci = m->ring[m->ring_head];
	m->ring_head = (m->ring_head + 1) % m->ring_cap;
	m->loaded--;
	return ci;
}

/* Makes room for one more: drops the oldest loaded chunks whose bits
 * equal their block's, until fewer than max_loaded are loaded or none of
 * them can go. */
static void shrink(struct chunks *m)
{
	size_t tries = m->holding ? 0 : m->loaded;
	while (m->loaded >= m->max_loaded && tries-- > 0) {
		uint64_t ci = ring_pop(m);
		struct chunk *c = &m->v[ci];
		bool same = c->state == CHUNK_DISK && read_block_bits(m, ci, false, m->scratch) == 0 &&
			    memcmp(m->scratch, c->bits, (size_t)m->words * 8) == 0;
		if (same) {
			free(c->bits);
			c->bits = NULL;
			m->unhinted -= c->unhinted;
			c->unhinted = 0;
		} else {
			(void)ring_push(m, ci); /* the slot just freed: cannot fail */
		}
	}
}

static bool in_counted(const struct chunks *m, uint64_t i)
{
	return i >= m->cfg.count_from && i < m->cfg.count_to;
}

/* Fills a chunk's hint bits from the callback and counts its clear,
 * unhinted bits. */
static void load_hints(struct chunks *m, uint64_t ci)
{
	struct chunk *c = &m->v[ci];
	uint64_t *hint = hint_words(m, c->bits);
	memset(hint, 0, (size_t)m->words * 8);
	uint64_t first = ci * m->bits_per_chunk;
	uint64_t n = m->cfg.nbits - first < m->bits_per_chunk ? m->cfg.nbits - first
							       : m->bits_per_chunk;
	m->cfg.hint_load(m->cfg.hint_ctx, first, (uint32_t)n, hint);
	uint32_t lo, hi;
	counted_range(m, ci, &lo, &hi);
	c->unhinted = 0;
	for (uint32_t bit = lo; bit < hi; bit++)
		c->unhinted += !word_bit(c->bits, bit) && !word_bit(hint, bit);
	m->unhinted += c->unhinted;
}

/* The chunk's bits, loaded if need be; NULL if they cannot be had (an
 * unreadable chunk, or no memory: both read as all in use). */
static uint64_t *chunk_bits(struct chunks *m, uint64_t ci)
{
	struct chunk *c = &m->v[ci];
	int err;
	if (c->bits || c->state == CHUNK_UNREADABLE)
		return c->bits;
	shrink(m);
	uint64_t *bits = malloc(chunk_words(m) * 8);
	if (!bits)
		return NULL;
	if (c->state == CHUNK_ALL_FREE) {
		memset(bits, 0, (size_t)m->words * 8);
	} else if ((err = read_block_bits(m, ci, false, bits)) != 0) {
		/* Damaged or unreadable since the mount counted it: nothing
		 * more comes out of it. */
		ordfs_log(LOG_ERR, "%s bitmap block %llu: %s since the mount: nothing more is "
			  "allocated from it (run fsck.ordfs)",
			  m->cfg.sb ? "block" : "inode", (unsigned long long)chunk_block(m, ci),
			  err == -EUCLEAN || err == -EBADMSG ? "damaged" : strerror(-err));
		free(bits);
		c->state = CHUNK_UNREADABLE;
		c->free = 0;
		return NULL;
	}
	if (ring_push(m, ci) != 0) {
		free(bits);
		return NULL;
	}
	c->bits = bits;
	if (m->hints)
		load_hints(m, ci);
	return c->bits;
}

int chunks_create(const struct chunks_config *cfg, struct chunks **out, uint64_t *free_bits,
		  uint64_t *bad_block, uint32_t *bad_count)
{
	struct chunks *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->cfg = *cfg;
	m->bits_per_chunk = ordfs_bits_per_bitmap_block(cfg->block_size);
	m->words = m->bits_per_chunk / 64;
	ORDFS_ASSERT(m->words * 64 == m->bits_per_chunk);
	m->nchunks = (cfg->nbits + m->bits_per_chunk - 1) / m->bits_per_chunk;
	m->hints = cfg->hint_load != NULL;
	m->max_loaded = cfg->max_loaded ? cfg->max_loaded
					: DEFAULT_MAX_LOADED_BYTES / (chunk_words(m) * 8);
	m->v = calloc(m->nchunks ? m->nchunks : 1, sizeof(*m->v));
	m->scratch = malloc((size_t)m->words * 8);
	int err = m->v && m->scratch ? 0 : -ENOMEM;
	*free_bits = 0;
	/* The blocks are read from the device in runs (one request per
	 * COUNT_RUN blocks, which matters over a network), except those the
	 * cache holds. */
	uint8_t *run = err ? NULL : malloc((size_t)COUNT_RUN * cfg->block_size);
	if (!err && !run)
		err = -ENOMEM;
	uint64_t run_first = 0, run_len = 0;
	uint64_t contiguous = contiguous_chunks(m);
	for (uint64_t ci = 0; ci < m->nchunks && !err; ci++) {
		struct chunk *c = &m->v[ci];
		uint64_t blockno = chunk_block(m, ci);
		if (bcache_contains(cfg->cache, blockno)) {
			err = read_block_bits(m, ci, true, m->scratch);
		} else {
			if (ci >= run_first + run_len) {
				/* A run of the area; a group bitmap block alone. */
				uint64_t left = ci < contiguous ? contiguous - ci : 1;
				run_first = ci;
				run_len = left < COUNT_RUN ? left : COUNT_RUN;
				err = blockdev_read(bcache_device(cfg->cache), run,
						    (size_t)run_len * cfg->block_size,
						    blockno * cfg->block_size);
				if (err)
					break;
			}
			const uint8_t *data = run + (size_t)(ci - run_first) * cfg->block_size;
			err = verify_block(m, ci, data);
			for (uint32_t w = 0; !err && w < m->words; w++)
				m->scratch[w] = le_get64(data + ORDFS_BLOCK_HDR_SIZE + (size_t)w * 8);
		}
		if (err == -EUCLEAN || err == -EBADMSG) {
			if (bad_block && (!bad_count || *bad_count == 0))
				*bad_block = blockno;
			if (!cfg->tolerant)
				break;
			if (bad_count)
				(*bad_count)++;
			c->state = CHUNK_ALL_FREE; /* reads as all free, as before */
			memset(m->scratch, 0, (size_t)m->words * 8);
			err = 0;
		}
		if (err)
			break;
		uint32_t lo, hi;
		counted_range(m, ci, &lo, &hi);
		for (uint32_t bit = lo; bit < hi; bit++)
			c->free += !word_bit(m->scratch, bit);
		*free_bits += c->free;
	}
	free(run);
	if (err) {
		chunks_destroy(m);
		return err;
	}
	*out = m;
	return 0;
}

void chunks_destroy(struct chunks *m)
{
	if (!m)
		return;
	for (uint64_t ci = 0; m->v && ci < m->nchunks; ci++)
		free(m->v[ci].bits);
	free(m->v);
	free(m->ring);
	free(m->scratch);
	free(m);
}

bool chunks_test(struct chunks *m, uint64_t i)
{
	ORDFS_ASSERT(i < m->cfg.nbits);
	uint64_t ci = i / m->bits_per_chunk;
	uint64_t *bits = chunk_bits(m, ci);
	return !bits || word_bit(bits, (uint32_t)(i % m->bits_per_chunk));
}

static bool change(struct chunks *m, uint64_t i, bool on)
{
	ORDFS_ASSERT(i < m->cfg.nbits);
	uint64_t ci = i / m->bits_per_chunk;
	uint64_t *bits = chunk_bits(m, ci);
	if (!bits)
		return false;
	uint32_t bit = (uint32_t)(i % m->bits_per_chunk);
	if (word_bit(bits, bit) == on)
		return false;
	if (on)
		bits[bit / 64] |= 1ull << (bit % 64);
	else
		bits[bit / 64] &= ~(1ull << (bit % 64));
	if (in_counted(m, i)) {
		struct chunk *c = &m->v[ci];
		bool unhinted = m->hints && !word_bit(hint_words(m, bits), bit);
		if (on) {
			ORDFS_ASSERT(c->free > 0);
			c->free--;
			if (unhinted) {
				ORDFS_ASSERT(c->unhinted > 0);
				c->unhinted--;
				m->unhinted--;
			}
		} else {
			c->free++;
			if (unhinted) {
				c->unhinted++;
				m->unhinted++;
			}
		}
	}
	return true;
}

bool chunks_set(struct chunks *m, uint64_t i)
{
	return change(m, i, true);
}

bool chunks_clear(struct chunks *m, uint64_t i)
{
	return change(m, i, false);
}

uint64_t chunks_find_zero(struct chunks *m, uint64_t from, uint64_t to)
{
	/* Skipping a chunk by its count is right only inside the counted
	 * range. */
	ORDFS_ASSERT(from >= to || (from >= m->cfg.count_from && to <= m->cfg.count_to));
	uint64_t i = from;
	while (i < to) {
		uint64_t ci = i / m->bits_per_chunk;
		uint64_t chunk_end = (ci + 1) * m->bits_per_chunk;
		if (chunk_end > to)
			chunk_end = to;
		uint64_t *bits = m->v[ci].free ? chunk_bits(m, ci) : NULL;
		if (!bits) {
			i = chunk_end;
			continue;
		}
		uint32_t bit = (uint32_t)(i % m->bits_per_chunk);
		uint32_t end = (uint32_t)(chunk_end - ci * m->bits_per_chunk);
		while (bit < end) {
			if (bit % 64 == 0 && end - bit >= 64 && bits[bit / 64] == ~0ull) {
				bit += 64;
				continue;
			}
			if (!word_bit(bits, bit))
				return ci * m->bits_per_chunk + bit;
			bit++;
		}
		i = chunk_end;
	}
	return to;
}

uint64_t chunks_find_zero_unhinted(struct chunks *m, uint64_t from, uint64_t to)
{
	ORDFS_ASSERT(from >= to || (from >= m->cfg.count_from && to <= m->cfg.count_to));
	if (!m->hints || m->unhinted == 0)
		return to;
	uint64_t i = from;
	while (i < to) {
		uint64_t ci = i / m->bits_per_chunk;
		uint64_t chunk_end = (ci + 1) * m->bits_per_chunk;
		if (chunk_end > to)
			chunk_end = to;
		struct chunk *c = &m->v[ci];
		if (!c->bits || c->unhinted == 0) {
			i = chunk_end;
			continue;
		}
		const uint64_t *bits = c->bits, *hint = hint_words(m, c->bits);
		uint32_t bit = (uint32_t)(i % m->bits_per_chunk);
		uint32_t end = (uint32_t)(chunk_end - ci * m->bits_per_chunk);
		while (bit < end) {
			uint64_t taken = bits[bit / 64] | hint[bit / 64];
			if (bit % 64 == 0 && end - bit >= 64 && taken == ~0ull) {
				bit += 64;
				continue;
			}
			if (!((taken >> (bit % 64)) & 1))
				return ci * m->bits_per_chunk + bit;
			bit++;
		}
		i = chunk_end;
	}
	return to;
}

uint64_t chunks_unhinted_free(const struct chunks *m)
{
	return m->unhinted;
}

bool chunks_hinted(struct chunks *m, uint64_t i)
{
	ORDFS_ASSERT(i < m->cfg.nbits);
	if (!m->hints)
		return false;
	const uint64_t *bits = m->v[i / m->bits_per_chunk].bits;
	return !bits || word_bit(hint_words(m, (uint64_t *)bits), (uint32_t)(i % m->bits_per_chunk));
}

bool chunks_any_hinted(struct chunks *m, uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++)
		if (chunks_hinted(m, i))
			return true;
	return false;
}

void chunks_set_hints(struct chunks *m, uint64_t first, uint64_t n, bool on)
{
	if (!m->hints)
		return;
	for (uint64_t i = first; i < first + n; i++) {
		ORDFS_ASSERT(i < m->cfg.nbits);
		uint64_t ci = i / m->bits_per_chunk;
		struct chunk *c = &m->v[ci];
		if (!c->bits)
			continue; /* loaded later from the truth */
		uint64_t *hint = hint_words(m, c->bits);
		uint32_t bit = (uint32_t)(i % m->bits_per_chunk);
		if (word_bit(hint, bit) == on)
			continue;
		if (on)
			hint[bit / 64] |= 1ull << (bit % 64);
		else
			hint[bit / 64] &= ~(1ull << (bit % 64));
		if (in_counted(m, i) && !word_bit(c->bits, bit)) {
			if (on) {
				ORDFS_ASSERT(c->unhinted > 0);
				c->unhinted--;
				m->unhinted--;
			} else {
				c->unhinted++;
				m->unhinted++;
			}
		}
	}
}

int chunks_hold(struct chunks *m, uint64_t first, uint64_t n)
{
	ORDFS_ASSERT(!m->holding);
	m->holding = true;
	for (uint64_t ci = first / m->bits_per_chunk; n && ci <= (first + n - 1) / m->bits_per_chunk;
	     ci++) {
		if (!chunk_bits(m, ci)) {
			m->holding = false;
			return -EIO;
		}
	}
	return 0;
}

void chunks_unhold(struct chunks *m)
{
	ORDFS_ASSERT(m->holding);
	m->holding = false;
}

/* Clear bits of `bits` in [lo, hi). */
static uint32_t count_clear(const uint64_t *bits, uint32_t lo, uint32_t hi)
{
	uint32_t n = 0;
	for (uint32_t bit = lo; bit < hi; bit++)
		n += !word_bit(bits, bit);
	return n;
}

int chunks_grow(struct chunks *m, uint64_t nbits, uint64_t count_to, uint64_t fresh_from,
		uint64_t *added)
{
	ORDFS_ASSERT(nbits >= m->cfg.nbits && count_to >= m->cfg.count_to && count_to <= nbits);
	*added = 0;
	uint64_t nchunks = (nbits + m->bits_per_chunk - 1) / m->bits_per_chunk;
	if (nchunks > m->nchunks) {
		struct chunk *v = realloc(m->v, nchunks * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + m->nchunks, 0, (nchunks - m->nchunks) * sizeof(*v));
		m->v = v; /* the chunks past m->nchunks are not in use yet */
	}
	uint64_t old_to = m->cfg.count_to;
	if (count_to == old_to) {
		m->cfg.nbits = nbits;
		m->nchunks = nchunks > m->nchunks ? nchunks : m->nchunks;
		return 0;
	}
	/* Read every block the newly counted range touches before changing
	 * anything, so that a failure leaves the map as it was: each chunk's
	 * gain, and a loaded chunk's block words to take its new bits from. */
	uint64_t first_ci = old_to / m->bits_per_chunk;
	uint64_t span = (count_to - 1) / m->bits_per_chunk - first_ci + 1;
	uint32_t *gained = calloc(span, sizeof(*gained));
	uint64_t **words = calloc(span, sizeof(*words));
	int err = gained && words ? 0 : -ENOMEM;
	for (uint64_t k = 0; k < span && !err; k++) {
		uint64_t ci = first_ci + k, first = ci * m->bits_per_chunk;
		uint32_t lo = (uint32_t)(old_to > first ? old_to - first : 0);
		uint32_t hi = (uint32_t)(count_to - first < m->bits_per_chunk ? count_to - first
									       : m->bits_per_chunk);
		struct chunk *c = &m->v[ci];
		if (c->state == CHUNK_UNREADABLE)
			continue;
		if (c->state == CHUNK_ALL_FREE) {
			gained[k] = hi - lo;
			continue;
		}
		if (ci >= fresh_from && ci >= m->nchunks) {
			/* written whole by the grow: its own bit set, the rest of the
			 * counted range clear (no read: a grow by a TiB adds
			 * thousands of them, under the allocator's lock) */
			ORDFS_ASSERT(lo == 0 && hi > 0);
			gained[k] = hi - 1;
			continue;
		}
		err = read_block_bits(m, ci, false, m->scratch);
		if (err)
			break;
		gained[k] = count_clear(m->scratch, lo, hi);
		if (ci < m->nchunks && c->bits) {
			words[k] = malloc((size_t)m->words * 8);
			if (!words[k])
				err = -ENOMEM;
			else
				memcpy(words[k], m->scratch, (size_t)m->words * 8);
		}
	}
	/* Then change: the counts, and a loaded chunk's newly counted bits
	 * (never claimed or freed in memory: outside the counted range, so
	 * the block's bits are the truth). */
	if (!err) {
		m->cfg.nbits = nbits;
		m->cfg.count_to = count_to;
		m->nchunks = nchunks > m->nchunks ? nchunks : m->nchunks;
		for (uint64_t k = 0; k < span; k++) {
			uint64_t ci = first_ci + k, first = ci * m->bits_per_chunk;
			struct chunk *c = &m->v[ci];
			c->free += gained[k];
			*added += gained[k];
			if (!words[k])
				continue;
			uint64_t lo = old_to > first ? old_to - first : 0;
			uint64_t hi = count_to - first < m->bits_per_chunk ? count_to - first
									  : m->bits_per_chunk;
			for (uint64_t bit = lo; bit < hi; bit++) {
				uint64_t mask = 1ull << (bit % 64);
				c->bits[bit / 64] = (c->bits[bit / 64] & ~mask) | (words[k][bit / 64] & mask);
			}
			if (m->hints) {
				m->unhinted -= c->unhinted;
				load_hints(m, ci);
			}
		}
	}
	for (uint64_t k = 0; words && k < span; k++)
		free(words[k]);
	free(words);
	free(gained);
	return err;
}

void chunks_set_max_loaded(struct chunks *m, size_t n)
{
	m->max_loaded = n ? n : 1;
	/* Down to it now, as far as the chunks allow (shrink leaves room for
	 * one more: ask for one more). */
	m->max_loaded++;
	shrink(m);
	m->max_loaded--;
}

size_t chunks_loaded(const struct chunks *m)
{
	return m->loaded;
}

size_t chunks_memory(const struct chunks *m)
{
	return sizeof(*m) + m->nchunks * sizeof(struct chunk) + m->ring_cap * sizeof(uint64_t) +
	       m->loaded * chunk_words(m) * 8 + (size_t)m->words * 8;
}
