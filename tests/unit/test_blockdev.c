/*
 * test_blockdev.c - the block device backends and the recording wrapper;
 * a device that grows while open (blockdev_refresh_size), alone and under
 * I/O from other threads (also run under ThreadSanitizer: the size is read
 * while another thread grows it).  The NBD backend's refresh is
 * tests/nbd/test_nbd_refresh.sh.
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
#include "blockdev/guard.h"

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
	ck_assert_uint_eq(blockdev_size(bd), 65536);
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

/* ---- growing while open (blockdev_refresh_size) ---------------------- */

#define GROW_BS 4096u

/* A fresh image file of size bytes; its path in path (a mkstemp
 * template). */
static void image_file(char *path, uint64_t size)
{
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static void set_file_size(const char *path, uint64_t size)
{
	ck_assert_int_eq(truncate(path, (off_t)size), 0);
}

/* The daemon's stack over an image file: a flush guard over a recording
 * device (logging writes) over the file. */
struct stack {
	struct blockdev *file, *rec, *guard;
};

static void stack_open(struct stack *st, const char *path)
{
	ck_assert_int_eq(blockdev_file_open(path, 0, &st->file), 0);
	ck_assert_int_eq(blockdev_record_create(st->file, true, &st->rec), 0);
	struct flush_guard_config gc = { .policy = FLUSH_ERROR_REPORT, .retain = true,
					 .block_size = GROW_BS };
	ck_assert_int_eq(flush_guard_create(st->rec, &gc, &st->guard), 0);
}

static void stack_close(struct stack *st)
{
	blockdev_destroy(st->guard);
	blockdev_destroy(st->rec);
	blockdev_destroy(st->file);
}

static void stack_sizes_are(struct stack *st, uint64_t size)
{
	ck_assert_uint_eq(blockdev_size(st->file), size);
	ck_assert_uint_eq(blockdev_size(st->rec), size);
	ck_assert_uint_eq(blockdev_size(st->guard), size);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131u + i * 7u + 1u);
}

/* An image file extended on the host is seen after a refresh through the
 * whole stack, and the added bytes are written (logged by the recording
 * device, on the file) and read back; before the refresh they are past
 * the end. */
START_TEST(test_refresh_file_grows_through_wrappers)
{
	char path[] = "/tmp/ordfs-bd-XXXXXX";
	image_file(path, 64 << 10);
	struct stack st;
	stack_open(&st, path);
	stack_sizes_are(&st, 64 << 10);

	uint8_t w[GROW_BS], r[GROW_BS];
	fill(w, sizeof(w), 1);
	uint64_t at = (192u << 10) - GROW_BS; /* the last block after the growth */
	set_file_size(path, 192 << 10);
	ck_assert_int_eq(blockdev_write(st.guard, w, sizeof(w), at), -EIO); /* not yet */

	uint64_t size = 0;
	ck_assert_int_eq(blockdev_refresh_size(st.guard, &size), 0);
	ck_assert_uint_eq(size, 192 << 10);
	stack_sizes_are(&st, 192 << 10);

	ck_assert_int_eq(blockdev_write(st.guard, w, sizeof(w), at), 0);
	ck_assert_int_eq(blockdev_flush(st.guard), 0);
	ck_assert_int_eq(blockdev_read(st.guard, r, sizeof(r), at), 0);
	ck_assert_mem_eq(w, r, sizeof(w));
	ck_assert_int_eq(blockdev_read(st.guard, r, sizeof(r), 192u << 10), -EIO);
	size_t n;
	const struct blockdev_event *ev = blockdev_record_events(st.rec, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ev[0].type, BD_EV_WRITE);
	ck_assert_uint_eq(ev[0].off, at);
	ck_assert_int_eq(ev[1].type, BD_EV_FLUSH);
	/* On the file itself. */
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, r, sizeof(r), (off_t)at), (ssize_t)sizeof(r));
	close(fd);
	ck_assert_mem_eq(w, r, sizeof(w));

	/* Nothing new: the same size, nothing changed. */
	ck_assert_int_eq(blockdev_refresh_size(st.guard, &size), 0);
	ck_assert_uint_eq(size, 192 << 10);
	/* A wrapper refreshed below the top: the top catches up at its own
	 * refresh (never past what it wraps). */
	set_file_size(path, 256 << 10);
	ck_assert_int_eq(blockdev_refresh_size(st.file, &size), 0);
	ck_assert_uint_eq(size, 256 << 10);
	ck_assert_uint_eq(blockdev_size(st.guard), 192 << 10);
	ck_assert_int_eq(blockdev_refresh_size(st.guard, &size), 0);
	stack_sizes_are(&st, 256 << 10);

	stack_close(&st);
	unlink(path);
}
END_TEST

/* A file cut under the device: -EUCLEAN, and the size stays (reads past
 * the cut fail as the host's short reads do: -EIO); it grows again once
 * the file is larger than the device. */
START_TEST(test_refresh_file_shrunk_is_refused)
{
	char path[] = "/tmp/ordfs-bd-XXXXXX";
	image_file(path, 128 << 10);
	struct stack st;
	stack_open(&st, path);

	set_file_size(path, 64 << 10);
	uint64_t size = 0;
	ck_assert_int_eq(blockdev_refresh_size(st.guard, &size), -EUCLEAN);
	ck_assert_uint_eq(size, 128 << 10);
	stack_sizes_are(&st, 128 << 10);
	ck_assert_int_eq(blockdev_refresh_size(st.file, &size), -EUCLEAN);
	ck_assert_uint_eq(size, 128 << 10);

	set_file_size(path, 160 << 10);
	ck_assert_int_eq(blockdev_refresh_size(st.guard, &size), 0);
	ck_assert_uint_eq(size, 160 << 10);
	stack_sizes_are(&st, 160 << 10);
	stack_close(&st);
	unlink(path);
}
END_TEST

/* Memory has a fixed size; a wrapper passes the answer on. */
START_TEST(test_refresh_mem_unsupported)
{
	struct blockdev *mem, *rec;
	ck_assert_int_eq(blockdev_mem_create(64 << 10, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	uint64_t size = 0;
	ck_assert_int_eq(blockdev_refresh_size(mem, &size), -EOPNOTSUPP);
	ck_assert_uint_eq(size, 64 << 10);
	size = 0;
	ck_assert_int_eq(blockdev_refresh_size(rec, &size), -EOPNOTSUPP);
	ck_assert_uint_eq(size, 64 << 10);
	ck_assert_uint_eq(blockdev_size(rec), 64 << 10);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

/* The overlay and the simulated host pass a refresh on: the added bytes
 * are writable through both, the host backs the pages written there. */
START_TEST(test_refresh_overlay_and_hostsim)
{
	char path[] = "/tmp/ordfs-bd-XXXXXX";
	image_file(path, 64 << 10);
	struct blockdev *file, *sim, *ov;
	ck_assert_int_eq(blockdev_file_open(path, 0, &file), 0);
	ck_assert_int_eq(blockdev_hostsim_create(file, 1 << 20, &sim), 0);
	ck_assert_int_eq(blockdev_overlay_create(sim, GROW_BS, &ov), 0);
	set_file_size(path, 128 << 10);
	uint64_t size = 0;
	ck_assert_int_eq(blockdev_refresh_size(ov, &size), 0);
	ck_assert_uint_eq(size, 128 << 10);
	ck_assert_uint_eq(blockdev_size(sim), 128 << 10);

	uint8_t w[GROW_BS], r[GROW_BS];
	fill(w, sizeof(w), 2);
	uint64_t at = (128u << 10) - GROW_BS;
	ck_assert_int_eq(blockdev_write(ov, w, sizeof(w), at), 0);
	ck_assert_int_eq(blockdev_read(ov, r, sizeof(r), at), 0);
	ck_assert_mem_eq(w, r, sizeof(w));
	ck_assert(!blockdev_hostsim_backed(sim, at)); /* the overlay kept it */
	ck_assert_int_eq(blockdev_write(sim, w, sizeof(w), at), 0);
	ck_assert(blockdev_hostsim_backed(sim, at));
	ck_assert_uint_eq(blockdev_next_data(sim, 64 << 10), at);
	blockdev_destroy(ov);
	blockdev_destroy(sim);
	blockdev_destroy(file);
	unlink(path);
}
END_TEST

/* Threads reading and writing the device while another grows it: at
 * least RACE_GROWTHS growths, more (up to RACE_GROWTHS_MAX) until
 * RACE_OVERLAPS calls overlapped a refresh (an fstat is quick: most calls
 * do not). */
#define RACE_THREADS 3
#define RACE_GROWTHS 40
#define RACE_GROWTHS_MAX 2000
#define RACE_OVERLAPS 20
#define RACE_STEP (64u << 10)

struct race {
	struct blockdev *top;
	bool stop;           /* atomic */
	uint64_t starts, ends; /* atomic: refreshes begun, ended */
	uint64_t overlaps;   /* atomic: calls that overlapped a refresh */
};

struct racer {
	struct race *race;
	unsigned id;
	uint64_t ops, failures, mismatches;
	uint64_t rng;
};

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Writes a block of its own (block number % RACE_THREADS == id), half
 * the time in the newest step of the device, and reads it back at once;
 * every call must succeed. */
static void *racer_main(void *arg)
{
	struct racer *me = arg;
	struct race *ra = me->race;
	uint8_t w[GROW_BS], r[GROW_BS];
	while (!__atomic_load_n(&ra->stop, __ATOMIC_ACQUIRE)) {
		uint64_t blocks = blockdev_size(ra->top) / GROW_BS;
		uint64_t first = next_rand(&me->rng) % 2 && blocks > RACE_STEP / GROW_BS
					 ? blocks - RACE_STEP / GROW_BS : 0;
		uint64_t b = first + next_rand(&me->rng) % (blocks - first);
		b -= b % RACE_THREADS;
		b += me->id;
		if (b >= blocks)
			continue;
		/* Overlapped: a refresh under way when it began, or one
		 * begun before it ended. */
		uint64_t ends = __atomic_load_n(&ra->ends, __ATOMIC_ACQUIRE);
		uint64_t starts = __atomic_load_n(&ra->starts, __ATOMIC_ACQUIRE);
		fill(w, sizeof(w), (unsigned)(me->ops * RACE_THREADS + me->id));
		int err = blockdev_write(ra->top, w, sizeof(w), b * GROW_BS);
		if (!err)
			err = blockdev_read(ra->top, r, sizeof(r), b * GROW_BS);
		if (starts != ends || __atomic_load_n(&ra->starts, __ATOMIC_ACQUIRE) != starts)
			__atomic_add_fetch(&ra->overlaps, 1, __ATOMIC_RELAXED);
		me->ops++;
		me->failures += err != 0;
		me->mismatches += !err && memcmp(w, r, sizeof(w)) != 0;
	}
	return NULL;
}

START_TEST(test_refresh_races_io)
{
	char path[] = "/tmp/ordfs-bd-XXXXXX";
	image_file(path, 256 << 10);
	struct stack st;
	stack_open(&st, path);
	blockdev_record_clear_events(st.rec);
	struct race ra = { .top = st.guard };
	struct racer racers[RACE_THREADS];
	pthread_t threads[RACE_THREADS];
	for (unsigned i = 0; i < RACE_THREADS; i++) {
		racers[i] = (struct racer){ .race = &ra, .id = i, .rng = 0x9e3779b97f4a7c15ull + i };
		ck_assert_int_eq(pthread_create(&threads[i], NULL, racer_main, &racers[i]), 0);
	}
	uint64_t size = 256 << 10;
	unsigned g;
	for (g = 0; g < RACE_GROWTHS_MAX; g++) {
		if (g >= RACE_GROWTHS &&
		    __atomic_load_n(&ra.overlaps, __ATOMIC_RELAXED) >= RACE_OVERLAPS)
			break;
		size += RACE_STEP;
		set_file_size(path, size);
		__atomic_add_fetch(&ra.starts, 1, __ATOMIC_ACQ_REL);
		uint64_t got = 0;
		int err = blockdev_refresh_size(st.guard, &got);
		__atomic_add_fetch(&ra.ends, 1, __ATOMIC_ACQ_REL);
		ck_assert_int_eq(err, 0);
		ck_assert_uint_eq(got, size);
		if (g % 8 == 7)
			ck_assert_int_eq(blockdev_flush(st.guard), 0);
		usleep(500); /* let the racers use the new step */
	}
	__atomic_store_n(&ra.stop, true, __ATOMIC_RELEASE);
	uint64_t ops = 0;
	for (unsigned i = 0; i < RACE_THREADS; i++) {
		pthread_join(threads[i], NULL);
		ck_assert_msg(racers[i].failures == 0, "racer %u: %llu of %llu calls failed", i,
			      (unsigned long long)racers[i].failures,
			      (unsigned long long)racers[i].ops);
		ck_assert_uint_eq(racers[i].mismatches, 0);
		ops += racers[i].ops;
	}
	ck_assert_msg(ra.overlaps >= RACE_OVERLAPS, "%llu of %llu calls overlapped %u refreshes",
		      (unsigned long long)ra.overlaps, (unsigned long long)ops, g);
	stack_sizes_are(&st, size);
	ck_assert_int_eq(blockdev_flush(st.guard), 0);
	stack_close(&st);
	unlink(path);
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
	tcase_add_test(tc, test_refresh_file_grows_through_wrappers);
	tcase_add_test(tc, test_refresh_file_shrunk_is_refused);
	tcase_add_test(tc, test_refresh_mem_unsupported);
	tcase_add_test(tc, test_refresh_overlay_and_hostsim);
	tcase_add_test(tc, test_refresh_races_io);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(blockdev_suite());
}
