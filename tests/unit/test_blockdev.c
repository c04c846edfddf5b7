/*
 * test_blockdev.c - the block device backends and the recording wrapper.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "blockdev/blockdev.h"

START_TEST(test_mem_read_write_bounds)
{
	struct blockdev *bd;
	uint8_t buf[512];
	ck_assert_int_eq(blockdev_mem_create(4096, &bd), 0);
	memset(buf, 0xab, sizeof(buf));
	ck_assert_int_eq(blockdev_write(bd, buf, 512, 1024), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(blockdev_read(bd, buf, 512, 1024), 0);
	ck_assert_uint_eq(buf[511], 0xab);
	ck_assert_int_eq(blockdev_read(bd, buf, 512, 4000), -EIO);
	ck_assert_int_eq(blockdev_write(bd, buf, 512, UINT64_MAX - 10), -EIO);
	blockdev_destroy(bd);
}
END_TEST

START_TEST(test_file_backend)
{
	char path[] = "/tmp/ordfs-bd-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 65536), 0);
	close(fd);

	struct blockdev *bd;
	ck_assert_int_eq(blockdev_file_open(path, 0, &bd), 0);
	ck_assert_uint_eq(bd->size, 65536);
	uint8_t w[4096], r[4096];
	for (int i = 0; i < 4096; i++)
		w[i] = (uint8_t)i;
	ck_assert_int_eq(blockdev_write(bd, w, 4096, 8192), 0);
	ck_assert_int_eq(blockdev_flush(bd), 0);
	ck_assert_int_eq(blockdev_read(bd, r, 4096, 8192), 0);
	ck_assert_mem_eq(w, r, 4096);
	ck_assert_int_eq(blockdev_read(bd, r, 4096, 65536 - 100), -EIO);
	blockdev_destroy(bd);

	ck_assert_int_eq(blockdev_file_open(path, BLOCKDEV_READONLY, &bd), 0);
	ck_assert_int_ne(blockdev_write(bd, w, 4096, 0), 0);
	blockdev_destroy(bd);
	unlink(path);
	ck_assert_int_eq(blockdev_file_open(path, 0, &bd), -ENOENT);
	ck_assert_int_eq(blockdev_file_open("/tmp", 0, &bd), -EISDIR);
}
END_TEST

START_TEST(test_record_counts_log_and_faults)
{
	struct blockdev *mem, *rec;
	uint8_t buf[1024] = { 1 };
	ck_assert_int_eq(blockdev_mem_create(1 << 20, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, true, &rec), 0);
	ck_assert_int_eq(blockdev_write(rec, buf, 1024, 0), 0);
	ck_assert_int_eq(blockdev_flush(rec), 0);
	ck_assert_int_eq(blockdev_read(rec, buf, 1024, 0), 0);
	ck_assert_int_eq(blockdev_write(rec, buf, 512, 2048), 0);

	struct blockdev_counts c;
	blockdev_record_counts(rec, &c);
	ck_assert_uint_eq(c.writes, 2);
	ck_assert_uint_eq(c.flushes, 1);
	ck_assert_uint_eq(c.reads, 1);
	ck_assert_uint_eq(c.bytes_written, 1536);

	size_t n;
	const struct blockdev_event *ev = blockdev_record_events(rec, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(ev[0].type, BD_EV_WRITE);
	ck_assert_int_eq(ev[1].type, BD_EV_FLUSH);
	ck_assert_uint_eq(ev[2].off, 2048);
	ck_assert_uint_eq(ev[2].len, 512);

	blockdev_record_fail_write(rec, 2, -ENOSPC);
	ck_assert_int_eq(blockdev_write(rec, buf, 16, 0), 0);
	ck_assert_int_eq(blockdev_write(rec, buf, 16, 0), -ENOSPC);
	ck_assert_int_eq(blockdev_write(rec, buf, 16, 0), 0);
	blockdev_record_fail_flush(rec, 1, -EIO);
	ck_assert_int_eq(blockdev_flush(rec), -EIO);
	ck_assert_int_eq(blockdev_flush(rec), 0);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

static void *do_flush(void *arg)
{
	static int result;
	result = blockdev_flush(arg);
	return &result;
}

START_TEST(test_record_latch_holds_only_flushes)
{
	struct blockdev *mem, *rec;
	uint8_t buf[512] = { 0 };
	ck_assert_int_eq(blockdev_mem_create(1 << 16, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	blockdev_record_latch_arm(rec);
	pthread_t t;
	pthread_create(&t, NULL, do_flush, rec);
	ck_assert_int_eq(blockdev_record_latch_wait_blocked(rec, 1, 5000), 0);
	/* Reads and writes go on while the flush is held. */
	ck_assert_int_eq(blockdev_write(rec, buf, 512, 0), 0);
	ck_assert_int_eq(blockdev_read(rec, buf, 512, 0), 0);
	ck_assert_int_eq(blockdev_record_latch_wait_blocked(rec, 2, 50), -ETIMEDOUT);
	blockdev_record_latch_release(rec);
	void *res;
	pthread_join(t, &res);
	ck_assert_int_eq(*(int *)res, 0);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

START_TEST(test_overlay_never_writes_base)
{
	struct blockdev *mem, *ov;
	ck_assert_int_eq(blockdev_mem_create(16 * 1024, &mem), 0);
	uint8_t *bytes = blockdev_mem_bytes(mem);
	memset(bytes, 0x11, 16 * 1024);
	ck_assert_int_eq(blockdev_overlay_create(mem, 1024, &ov), 0);

	uint8_t buf[3000];
	memset(buf, 0x22, sizeof(buf));
	ck_assert_int_eq(blockdev_write(ov, buf, 100, 1000), 0);   /* straddles blocks 0-1 */
	ck_assert_int_eq(blockdev_write(ov, buf, 1024, 4096), 0);  /* block 4, whole */
	ck_assert_int_eq(blockdev_flush(ov), 0);
	ck_assert_uint_eq(blockdev_overlay_blocks(ov), 3);

	uint8_t out[6000];
	ck_assert_int_eq(blockdev_read(ov, out, sizeof(out), 0), 0);
	for (size_t i = 0; i < sizeof(out); i++) {
		bool written = (i >= 1000 && i < 1100) || (i >= 4096 && i < 5120);
		ck_assert_msg(out[i] == (written ? 0x22 : 0x11), "byte %zu is %#x", i, out[i]);
	}
	for (size_t i = 0; i < 16 * 1024; i++)
		ck_assert_msg(bytes[i] == 0x11, "base byte %zu changed", i);
	ck_assert_int_eq(blockdev_write(ov, buf, 2, 16 * 1024 - 1), -EIO); /* past the end */
	blockdev_destroy(ov);
	blockdev_destroy(mem);
}
END_TEST

static Suite *blockdev_suite(void)
{
	Suite *s = suite_create("blockdev");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_mem_read_write_bounds);
	tcase_add_test(tc, test_file_backend);
	tcase_add_test(tc, test_record_counts_log_and_faults);
	tcase_add_test(tc, test_record_latch_holds_only_flushes);
	tcase_add_test(tc, test_overlay_never_writes_base);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(blockdev_suite());
}
