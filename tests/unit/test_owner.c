/*
 * test_owner.c - the owner record (super/owner.c): its format, claiming a
 * free, held, stale or raced record, the heartbeat noticing a second
 * claimer, release and undo, and the fence that stops every write.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blockdev/blockdev.h"
#include "blockdev/guard.h"
#include "format/format.h"
#include "super/owner.h"

#define DEV_SIZE (1u << 20)
#define FAST_MS 50u /* heartbeat interval of the tests' holders */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct blockdev *new_dev(void)
{
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_create(DEV_SIZE, &bd), 0);
	return bd;
}

static bool read_rec(struct blockdev *bd, struct ordfs_owner *rec)
{
	uint8_t raw[ORDFS_OWNER_SIZE];
	uint64_t at = blockdev_size(bd) - ORDFS_OWNER_SIZE;
	ck_assert_int_eq(blockdev_read(bd, raw, sizeof(raw), at), 0);
	return ordfs_owner_decode(raw, rec) == 0;
}

static void write_rec(struct blockdev *bd, const struct ordfs_owner *rec)
{
	uint8_t raw[ORDFS_OWNER_SIZE];
	ordfs_owner_encode(rec, raw);
	uint64_t at = blockdev_size(bd) - ORDFS_OWNER_SIZE;
	ck_assert_int_eq(blockdev_write(bd, raw, sizeof(raw), at), 0);
}

/* A held record as another program (pid, host) would leave it. */
static struct ordfs_owner foreign(uint32_t pid, const char *host)
{
	struct ordfs_owner r;
	memset(&r, 0, sizeof(r));
	r.state = ORDFS_OWNER_HELD;
	r.seq = 7;
	r.nonce = 0x1234;
	r.pid = pid;
	r.interval_ms = FAST_MS;
	r.time = (uint64_t)time(NULL);
	strcpy(r.program, "ordfs");
	strcpy(r.host, host);
	return r;
}

static const struct owner_opts plain = { .program = "test_owner", .interval_ms = FAST_MS };

START_TEST(test_format_round_trip_and_refusals)
{
	struct ordfs_owner r = foreign(42, "somehost"), back;
	uint8_t raw[ORDFS_OWNER_SIZE];
	ordfs_owner_encode(&r, raw);
	ck_assert_int_eq(ordfs_owner_decode(raw, &back), 0);
	ck_assert_uint_eq(back.seq, 7);
	ck_assert_uint_eq(back.pid, 42);
	ck_assert_str_eq(back.host, "somehost");
	ck_assert_str_eq(back.program, "ordfs");
	/* A torn or foreign sector is no record. */
	raw[100] ^= 1;
	ck_assert_int_eq(ordfs_owner_decode(raw, &back), -EUCLEAN);
	memset(raw, 0, sizeof(raw));
	ck_assert_int_eq(ordfs_owner_decode(raw, &back), -EUCLEAN);
	/* A state no writer uses is refused even with a good checksum. */
	r.state = 9;
	ordfs_owner_encode(&r, raw);
	ck_assert_int_eq(ordfs_owner_decode(raw, &back), -EUCLEAN);
	/* Names that fill their fields stay terminated when decoded. */
	r = foreign(1, "");
	memset(r.host, 'h', ORDFS_OWNER_HOST_LEN);
	r.host[ORDFS_OWNER_HOST_LEN] = '\0';
	ordfs_owner_encode(&r, raw);
	ck_assert_int_eq(ordfs_owner_decode(raw, &back), 0);
	ck_assert_uint_eq(strlen(back.host), ORDFS_OWNER_HOST_LEN);
}
END_TEST

START_TEST(test_record_fits_past_the_backup_superblock)
{
	/* 4 KiB blocks: the last block has room after its 1024 bytes. */
	ck_assert(owner_record_fits(256u << 12, 256, 4096));
	/* 1 KiB blocks filling the device: the backup is the whole block. */
	ck_assert(!owner_record_fits(1024u * 1024, 1024, 1024));
	/* ... one block short of it: the record lies past the filesystem. */
	ck_assert(owner_record_fits(1024u * 1024, 1023, 1024));
}
END_TEST

START_TEST(test_claim_free_then_release)
{
	struct blockdev *bd = new_dev();
	struct owner_claim *c;
	char why[256];
	ck_assert_int_eq(owner_claim(bd, &plain, &c, why, sizeof(why)), 0);
	struct ordfs_owner r;
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_eq(r.state, ORDFS_OWNER_HELD);
	ck_assert_uint_eq(r.pid, (uint32_t)getpid());
	ck_assert_str_eq(r.program, "test_owner");
	bool held;
	ck_assert_int_eq(owner_describe(bd, &held, why, sizeof(why)), 0);
	ck_assert(held);
	ck_assert_ptr_nonnull(strstr(why, "test_owner"));

	ck_assert_int_eq(owner_start(c), 0);
	uint64_t seq = r.seq;
	usleep(4 * FAST_MS * 1000);
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_gt(r.seq, seq); /* the heartbeat moves it */
	owner_release(c);
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_eq(r.state, ORDFS_OWNER_FREE);
	/* Free: the next claim is immediate. */
	uint64_t t0 = now_ms();
	ck_assert_int_eq(owner_claim(bd, &plain, &c, why, sizeof(why)), 0);
	ck_assert_uint_lt(now_ms() - t0, 500);
	owner_release(c);
	blockdev_destroy(bd);
}
END_TEST

START_TEST(test_live_holder_refuses_a_second_claim)
{
	struct blockdev *bd = new_dev();
	struct owner_claim *a, *b;
	char why[256];
	ck_assert_int_eq(owner_claim(bd, &plain, &a, why, sizeof(why)), 0);
	ck_assert_int_eq(owner_start(a), 0);
	ck_assert_int_eq(owner_claim(bd, &plain, &b, why, sizeof(why)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(why, "in use by test_owner"));
	/* The refusal wrote nothing: the holder still holds it. */
	struct ordfs_owner r;
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_eq(r.pid, (uint32_t)getpid());
	ck_assert_uint_eq(r.state, ORDFS_OWNER_HELD);
	owner_release(a);
	blockdev_destroy(bd);
}
END_TEST

START_TEST(test_dead_local_holder_is_stale_at_once)
{
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);

	struct blockdev *bd = new_dev();
	char host[ORDFS_OWNER_HOST_LEN + 1] = { 0 };
	ck_assert_int_eq(gethostname(host, ORDFS_OWNER_HOST_LEN), 0);
	struct ordfs_owner r = foreign((uint32_t)child, host);
	r.interval_ms = 60000; /* watching it would take two minutes */
	write_rec(bd, &r);
	struct owner_claim *c;
	char why[256];
	uint64_t t0 = now_ms();
	ck_assert_int_eq(owner_claim(bd, &plain, &c, why, sizeof(why)), 0);
	ck_assert_uint_lt(now_ms() - t0, 1000);
	owner_release(c);
	blockdev_destroy(bd);
}
END_TEST

START_TEST(test_silent_remote_holder_is_stale_after_the_wait)
{
	struct blockdev *bd = new_dev();
	struct ordfs_owner r = foreign(1, "another-host.example");
	write_rec(bd, &r);
	struct owner_claim *c;
	char why[256];
	uint64_t t0 = now_ms();
	ck_assert_int_eq(owner_claim(bd, &plain, &c, why, sizeof(why)), 0);
	uint64_t waited = now_ms() - t0;
	/* Twice its interval and a second. */
	ck_assert_uint_ge(waited, 2 * FAST_MS + 1000);
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_eq(r.pid, (uint32_t)getpid());
	owner_release(c);
	blockdev_destroy(bd);
}
END_TEST

static volatile int lost_calls;

static void on_lost(void *ctx)
{
	(void)ctx;
	__atomic_add_fetch(&lost_calls, 1, __ATOMIC_SEQ_CST);
}

START_TEST(test_heartbeat_notices_a_second_claimer)
{
	struct blockdev *bd = new_dev();
	struct owner_opts o = plain;
	o.lost = on_lost;
	lost_calls = 0;
	struct owner_claim *c;
	char why[256];
	ck_assert_int_eq(owner_claim(bd, &o, &c, why, sizeof(why)), 0);
	ck_assert_int_eq(owner_start(c), 0);
	/* Another machine takes the image over (it thought us dead). */
	struct ordfs_owner intruder = foreign(99, "another-host.example");
	intruder.nonce = 0xfeed;
	write_rec(bd, &intruder);
	for (int i = 0; i < 100 && !__atomic_load_n(&lost_calls, __ATOMIC_SEQ_CST); i++)
		usleep(20 * 1000);
	ck_assert_int_eq(lost_calls, 1);
	/* Neither the heartbeat nor the release overwrote the new holder. */
	owner_release(c);
	struct ordfs_owner r;
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_eq(r.nonce, 0xfeed);
	ck_assert_uint_eq(r.state, ORDFS_OWNER_HELD);
	ck_assert_int_eq(lost_calls, 1);
	blockdev_destroy(bd);
}
END_TEST

/* Plays a second claimer whose write lands while the first settles: it
 * waits until the first claim is on the device, then writes its own. */
static void *racer_main(void *arg)
{
	struct blockdev *bd = arg;
	struct ordfs_owner seen;
	for (int i = 0; i < 5000; i++) {
		if (read_rec(bd, &seen) && seen.pid == (uint32_t)getpid() &&
		    seen.state == ORDFS_OWNER_HELD)
			break;
		usleep(1000);
	}
	struct ordfs_owner r = foreign(77, "another-host.example");
	r.nonce = 0xbeef;
	write_rec(bd, &r);
	return NULL;
}

START_TEST(test_racing_claimer_loses_on_read_back)
{
	/* The claim is read back after settle_ms: a claimer whose write
	 * landed later owns the record, and we are refused. */
	struct blockdev *bd = new_dev();
	struct owner_claim *c;
	char why[256];
	struct owner_opts o = plain;
	o.settle_ms = 1000;
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, racer_main, bd), 0);
	ck_assert_int_eq(owner_claim(bd, &o, &c, why, sizeof(why)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(why, "claimed at the same time"));
	pthread_join(t, NULL);
	struct ordfs_owner r;
	ck_assert(read_rec(bd, &r));
	ck_assert_uint_eq(r.nonce, 0xbeef);
	blockdev_destroy(bd);
}
END_TEST

START_TEST(test_undo_restores_the_sector)
{
	struct blockdev *bd = new_dev();
	uint8_t junk[ORDFS_OWNER_SIZE], after[ORDFS_OWNER_SIZE];
	for (unsigned i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	uint64_t at = blockdev_size(bd) - sizeof(junk);
	ck_assert_int_eq(blockdev_write(bd, junk, sizeof(junk), at), 0);
	struct owner_claim *c;
	char why[256];
	ck_assert_int_eq(owner_claim(bd, &plain, &c, why, sizeof(why)), 0);
	owner_undo(c);
	ck_assert_int_eq(blockdev_read(bd, after, sizeof(after), at), 0);
	ck_assert_mem_eq(after, junk, sizeof(junk));
	blockdev_destroy(bd);
}
END_TEST

START_TEST(test_fence_stops_writes_through_wrappers)
{
	struct blockdev *bd = new_dev(), *guard;
	struct flush_guard_config cfg = { .policy = FLUSH_ERROR_REPORT, .retain = true,
					  .block_size = 4096 };
	ck_assert_int_eq(flush_guard_create(bd, &cfg, &guard), 0);
	uint8_t blk[4096] = { 1 };
	ck_assert_int_eq(blockdev_write(guard, blk, sizeof(blk), 0), 0);
	blockdev_fence(bd);
	blk[0] = 2;
	ck_assert_int_eq(blockdev_write(guard, blk, sizeof(blk), 0), -EROFS);
	ck_assert_int_eq(blockdev_write_fua(guard, blk, sizeof(blk), 0), -EROFS);
	ck_assert_int_eq(blockdev_flush(guard), -EROFS);
	ck_assert_int_eq(blockdev_read(guard, blk, sizeof(blk), 0), 0); /* reads work */
	ck_assert_uint_eq(blk[0], 1);
	blockdev_destroy(guard);
	blockdev_destroy(bd);
}
END_TEST

static Suite *owner_suite(void)
{
	Suite *s = suite_create("owner");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_format_round_trip_and_refusals);
	tcase_add_test(tc, test_record_fits_past_the_backup_superblock);
	tcase_add_test(tc, test_claim_free_then_release);
	tcase_add_test(tc, test_live_holder_refuses_a_second_claim);
	tcase_add_test(tc, test_dead_local_holder_is_stale_at_once);
	tcase_add_test(tc, test_silent_remote_holder_is_stale_after_the_wait);
	tcase_add_test(tc, test_heartbeat_notices_a_second_claimer);
	tcase_add_test(tc, test_racing_claimer_loses_on_read_back);
	tcase_add_test(tc, test_undo_restores_the_sector);
	tcase_add_test(tc, test_fence_stops_writes_through_wrappers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(owner_suite());
}
