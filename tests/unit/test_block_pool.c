/*
 * test_block_pool.c - the block pool behind file data pages and the flush
 * guard's copies (base/block_pool.c): distinct blocks that keep what is
 * written in them, reuse instead of new mappings, the warmest slab first,
 * memory given back (block_pool_trim) only when it stayed free and past
 * the retained amount, and still usable; wholly free slabs whose pages the
 * kernel dropped; blocks from several threads at once.
 */
#include "suite_main.h"
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/block_pool.h"

#define BS 4096u
#define SLAB_BYTES (512u * BS)

struct held {
	void *b;
	struct block_slab *s;
};

START_TEST(test_blocks_are_distinct_and_keep_their_bytes)
{
	struct block_pool *p;
	ck_assert_int_eq(block_pool_new(BS, &p), 0);
	enum { N = 1500 }; /* three slabs */
	struct held *h = calloc(N, sizeof(*h));
	for (unsigned i = 0; i < N; i++) {
		h[i].b = block_pool_get(p, &h[i].s);
		ck_assert_ptr_nonnull(h[i].b);
		memset(h[i].b, (int)(i & 0xff), BS);
	}
	ck_assert_uint_eq(block_pool_in_use(p), N);
	ck_assert_uint_eq(block_pool_mapped_bytes(p), 3ull * SLAB_BYTES);
	/* No two overlap: each still holds its own byte everywhere. */
	for (unsigned i = 0; i < N; i++) {
		const uint8_t *b = h[i].b;
		ck_assert_msg(b[0] == (i & 0xff) && b[BS - 1] == (i & 0xff) && b[BS / 2] == (i & 0xff),
			      "block %u was overwritten", i);
	}
	for (unsigned i = 0; i < N; i++)
		block_pool_put(p, h[i].s, h[i].b);
	ck_assert_uint_eq(block_pool_in_use(p), 0);
	free(h);
	block_pool_destroy(p);
}
END_TEST

START_TEST(test_reuse_maps_nothing_new)
{
	struct block_pool *p;
	ck_assert_int_eq(block_pool_new(BS, &p), 0);
	enum { N = 700 };
	struct held h[N];
	for (int round = 0; round < 50; round++) {
		for (unsigned i = 0; i < N; i++) {
			h[i].b = block_pool_get(p, &h[i].s);
			ck_assert_ptr_nonnull(h[i].b);
			memset(h[i].b, round, 64);
		}
		for (unsigned i = 0; i < N; i++)
			block_pool_put(p, h[i].s, h[i].b);
	}
	/* The peak was 700 blocks: two slabs, whatever the rounds. */
	ck_assert_uint_eq(block_pool_mapped_bytes(p), 2ull * SLAB_BYTES);
	block_pool_destroy(p);
}
END_TEST

START_TEST(test_warmest_block_comes_back_first)
{
	struct block_pool *p;
	ck_assert_int_eq(block_pool_new(BS, &p), 0);
	struct held a, b, c;
	a.b = block_pool_get(p, &a.s);
	b.b = block_pool_get(p, &b.s);
	block_pool_put(p, a.s, a.b);
	c.b = block_pool_get(p, &c.s);
	ck_assert_ptr_eq(c.b, a.b); /* the one just given back */
	block_pool_put(p, b.s, b.b);
	block_pool_put(p, c.s, c.b);
	block_pool_destroy(p);
}
END_TEST

/* Free slabs go back to the kernel only through block_pool_trim, and only
 * those free since the call before, past BLOCK_POOL_RETAIN of warm free
 * blocks; taking them again gives usable memory. */
START_TEST(test_trim_gives_back_what_stayed_free_past_the_retained_amount)
{
	struct block_pool *p;
	ck_assert_int_eq(block_pool_new(BS, &p), 0);
	unsigned n = BLOCK_POOL_RETAIN / BS + 3 * 512;
	struct held *h = calloc(n, sizeof(*h));
	for (unsigned i = 0; i < n; i++) {
		h[i].b = block_pool_get(p, &h[i].s);
		memset(h[i].b, 0x5a, BS);
	}
	uint64_t mapped = block_pool_mapped_bytes(p);
	block_pool_trim(p); /* nothing free yet */
	for (unsigned i = 0; i < n; i++)
		block_pool_put(p, h[i].s, h[i].b);
	ck_assert_uint_eq(block_pool_cold_bytes(p), 0); /* not when a slab empties */
	block_pool_trim(p);
	ck_assert_uint_eq(block_pool_cold_bytes(p), 0); /* free for less than an interval */
	block_pool_trim(p);
	ck_assert_uint_eq(block_pool_cold_bytes(p), 3ull * SLAB_BYTES); /* what is past the retained */
	block_pool_trim(p);
	ck_assert_uint_eq(block_pool_cold_bytes(p), 3ull * SLAB_BYTES); /* never below it */
	for (unsigned i = 0; i < n; i++) {
		h[i].b = block_pool_get(p, &h[i].s);
		ck_assert_ptr_nonnull(h[i].b);
		memset(h[i].b, (int)(i & 0xff), BS);
	}
	ck_assert_uint_eq(block_pool_cold_bytes(p), 0);
	for (unsigned i = 0; i < n; i++)
		ck_assert_uint_eq(((uint8_t *)h[i].b)[BS - 1], i & 0xff);
	ck_assert_uint_eq(block_pool_mapped_bytes(p), mapped);
	for (unsigned i = 0; i < n; i++)
		block_pool_put(p, h[i].s, h[i].b);
	free(h);
	block_pool_destroy(p);
}
END_TEST

/* The kernel may drop a free slab's pages (MADV_FREE: they read back as
 * zeros).  Dropping every page of every wholly free slab, here with
 * MADV_DONTNEED, must leave the pool working: it keeps nothing it needs
 * (a free list's links) in such a slab. */
START_TEST(test_pages_of_free_slabs_may_be_dropped)
{
	struct block_pool *p;
	ck_assert_int_eq(block_pool_new(BS, &p), 0);
	enum { N = 3 * 512 };
	struct held *h = calloc(N, sizeof(*h));
	for (int round = 0; round < 3; round++) {
		for (unsigned i = 0; i < N; i++) {
			h[i].b = block_pool_get(p, &h[i].s);
			ck_assert_ptr_nonnull(h[i].b);
			memset(h[i].b, (int)(i & 0xff), BS);
		}
		for (unsigned i = 0; i < N; i++)
			ck_assert_uint_eq(((uint8_t *)h[i].b)[BS / 2], i & 0xff);
		/* Give back out of order, so the free lists are long. */
		for (unsigned i = 0; i < N; i += 2)
			block_pool_put(p, h[i].s, h[i].b);
		for (unsigned i = 1; i < N; i += 2)
			block_pool_put(p, h[i].s, h[i].b);
		for (unsigned i = 0; i < N; i++)
			ck_assert_int_eq(madvise(h[i].b, BS, MADV_DONTNEED), 0);
	}
	ck_assert_uint_eq(block_pool_mapped_bytes(p), 3ull * SLAB_BYTES);
	free(h);
	block_pool_destroy(p);
}
END_TEST

struct worker {
	struct block_pool *p;
	unsigned id;
	int bad;
};

static void *churn(void *arg)
{
	struct worker *w = arg;
	struct held h[64];
	for (int round = 0; round < 2000; round++) {
		for (unsigned i = 0; i < 64; i++) {
			h[i].b = block_pool_get(w->p, &h[i].s);
			if (!h[i].b) {
				w->bad++;
				return NULL;
			}
			memset(h[i].b, (int)w->id, 256);
		}
		for (unsigned i = 0; i < 64; i++) {
			if (((uint8_t *)h[i].b)[255] != w->id)
				w->bad++;
			block_pool_put(w->p, h[i].s, h[i].b);
		}
	}
	return NULL;
}

START_TEST(test_threads_share_a_pool)
{
	struct block_pool *p;
	ck_assert_int_eq(block_pool_new(BS, &p), 0);
	struct worker w[4];
	pthread_t t[4];
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){ .p = p, .id = i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].bad, 0);
	}
	ck_assert_uint_eq(block_pool_in_use(p), 0);
	ck_assert_uint_eq(block_pool_mapped_bytes(p), SLAB_BYTES); /* 256 at most in use */
	block_pool_destroy(p);
}
END_TEST

static Suite *block_pool_suite(void)
{
	Suite *s = suite_create("block_pool");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_blocks_are_distinct_and_keep_their_bytes);
	tcase_add_test(tc, test_reuse_maps_nothing_new);
	tcase_add_test(tc, test_warmest_block_comes_back_first);
	tcase_add_test(tc, test_trim_gives_back_what_stayed_free_past_the_retained_amount);
	tcase_add_test(tc, test_pages_of_free_slabs_may_be_dropped);
	tcase_add_test(tc, test_threads_share_a_pool);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(block_pool_suite());
}
