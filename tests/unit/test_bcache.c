/*
 * test_bcache.c - the metadata buffer cache: one read per block, hits,
 * eviction of unreferenced buffers only, failed reads not cached,
 * readahead (one device read per run of uncached blocks, cached buffers
 * kept as they are).
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev/blockdev.h"
#include "cache/bcache.h"

START_TEST(test_read_once_then_hit)
{
	struct blockdev *mem, *rec;
	struct bcache *c;
	ck_assert_int_eq(blockdev_mem_create(64 * 1024, &mem), 0);
	blockdev_mem_bytes(mem)[5 * 1024] = 0x5a;
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	ck_assert_int_eq(bcache_create(rec, 1024, 64, 8, &c), 0);

	struct buf *b1, *b2;
	ck_assert_int_eq(bcache_read(c, 5, &b1), 0);
	ck_assert_uint_eq(b1->data[0], 0x5a);
	ck_assert_int_eq(bcache_read(c, 5, &b2), 0);
	ck_assert_ptr_eq(b1, b2);
	struct blockdev_counts n;
	blockdev_record_counts(rec, &n);
	ck_assert_uint_eq(n.reads, 1);
	ck_assert_ptr_eq(bcache_peek(c, 5), b1);
	bcache_put(c, b1);
	bcache_put(c, b1);
	bcache_put(c, b1);
	ck_assert_ptr_null(bcache_peek(c, 6));
	ck_assert_int_eq(bcache_read(c, 64, &b1), -EINVAL);
	bcache_destroy(c);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

START_TEST(test_readahead_reads_runs_and_keeps_cached)
{
	struct blockdev *mem, *rec;
	struct bcache *c;
	ck_assert_int_eq(blockdev_mem_create(64 * 1024, &mem), 0);
	for (int i = 0; i < 64; i++)
		blockdev_mem_bytes(mem)[i * 1024] = (uint8_t)(i + 1);
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	ck_assert_int_eq(bcache_create(rec, 1024, 64, 64, &c), 0);

	/* Block 12 is cached and changed in memory: newer than the device. */
	struct buf *held;
	ck_assert_int_eq(bcache_read(c, 12, &held), 0);
	held->data[0] = 0xee;
	bcache_readahead(c, 8, 100); /* 8..63: runs 8-11 and 13-63 */
	struct blockdev_counts n;
	blockdev_record_counts(rec, &n);
	ck_assert_uint_eq(n.reads, 1 + 2);
	for (uint64_t i = 8; i < 64; i++) {
		struct buf *b;
		ck_assert_int_eq(bcache_read(c, i, &b), 0);
		ck_assert_uint_eq(b->data[0], i == 12 ? 0xee : (uint8_t)(i + 1));
		bcache_put(c, b);
	}
	blockdev_record_counts(rec, &n);
	ck_assert_uint_eq(n.reads, 3); /* every block was a hit */
	bcache_put(c, held);
	bcache_readahead(c, 64, 4); /* past the end: nothing */
	bcache_destroy(c);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

START_TEST(test_eviction_spares_referenced)
{
	struct blockdev *mem;
	struct bcache *c;
	ck_assert_int_eq(blockdev_mem_create(256 * 1024, &mem), 0);
	ck_assert_int_eq(bcache_create(mem, 1024, 256, 4, &c), 0);
	struct buf *held;
	ck_assert_int_eq(bcache_read(c, 0, &held), 0);
	held->data[0] = 0x77; /* an in-memory change a reread would lose */
	for (uint64_t i = 1; i < 100; i++) {
		struct buf *b;
		ck_assert_int_eq(bcache_read(c, i, &b), 0);
		bcache_put(c, b);
	}
	struct bcache_stats st;
	bcache_stats(c, &st);
	ck_assert_uint_le(st.cached, 5); /* 4 unreferenced + the held one */
	ck_assert_uint_ge(st.evictions, 90);
	struct buf *again;
	ck_assert_int_eq(bcache_read(c, 0, &again), 0);
	ck_assert_ptr_eq(again, held);
	ck_assert_uint_eq(again->data[0], 0x77);
	bcache_put(c, again);
	bcache_put(c, held);
	bcache_shrink(c);
	bcache_stats(c, &st);
	ck_assert_uint_eq(st.cached, 0);
	bcache_destroy(c);
	blockdev_destroy(mem);
}
END_TEST

START_TEST(test_failed_read_not_cached)
{
	struct blockdev *mem, *rec;
	struct bcache *c;
	ck_assert_int_eq(blockdev_mem_create(16 * 1024, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	/* The cache believes in more blocks than the device has. */
	ck_assert_int_eq(bcache_create(rec, 1024, 32, 8, &c), 0);
	struct buf *b;
	ck_assert_int_eq(bcache_read(c, 20, &b), -EIO);
	ck_assert_ptr_null(bcache_peek(c, 20));
	struct bcache_stats st;
	bcache_stats(c, &st);
	ck_assert_uint_eq(st.cached, 0);
	bcache_destroy(c);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

struct reader {
	struct bcache *c;
	int failures;
};

static void *read_many(void *arg)
{
	struct reader *r = arg;
	for (int i = 0; i < 20000; i++) {
		struct buf *b;
		uint64_t blk = (uint64_t)(i * 7919) % 128;
		if (bcache_read(r->c, blk, &b) != 0 || b->data[0] != (uint8_t)blk) {
			r->failures++;
			continue;
		}
		bcache_put(r->c, b);
	}
	return NULL;
}

START_TEST(test_concurrent_readers)
{
	struct blockdev *mem;
	struct bcache *c;
	ck_assert_int_eq(blockdev_mem_create(128 * 1024, &mem), 0);
	for (int i = 0; i < 128; i++)
		blockdev_mem_bytes(mem)[i * 1024] = (uint8_t)i;
	ck_assert_int_eq(bcache_create(mem, 1024, 128, 16, &c), 0);
	pthread_t t[4];
	struct reader r[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){ c, 0 };
		pthread_create(&t[i], NULL, read_many, &r[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(r[i].failures, 0);
	}
	bcache_destroy(c);
	blockdev_destroy(mem);
}
END_TEST

static Suite *bcache_suite(void)
{
	Suite *s = suite_create("bcache");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_read_once_then_hit);
	tcase_add_test(tc, test_readahead_reads_runs_and_keeps_cached);
	tcase_add_test(tc, test_eviction_spares_referenced);
	tcase_add_test(tc, test_failed_read_not_cached);
	tcase_add_test(tc, test_concurrent_readers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(bcache_suite());
}
