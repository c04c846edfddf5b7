/*
 * nbd_refresh.c - blockdev_refresh_size on an NBD export, for
 * test_nbd_refresh.sh: the device a daemon has (a flush guard over the NBD
 * backend) on an export whose image file the test extends.
 *
 * Checks, one line each ("ok" or "FAIL"), exit 1 if any failed:
 *  - a refresh with nothing changed keeps the size and the connection;
 *  - the image is extended GROWTHS times, each refreshed through the
 *    guard, while three threads write and read back blocks of their own on
 *    the NBD device itself (half the time in its newest part: a block
 *    there the moment its size says so): every refresh sees the new size,
 *    no call fails or reads back other bytes, and calls were in flight
 *    during refreshes (the connection is swapped under them);
 *  - a block written at the new end is read back through the device and
 *    is in the image file (the server wrote it);
 *  - an image cut below the device is -EUCLEAN, the size unchanged;
 *  - the server restarted on the image at another size than the refreshed
 *    one is not reconnected to; restarted at the refreshed size it is,
 *    and the block at the end reads back;
 *  - a growth after that reconnect works as the first ones.
 *
 * Usage: nbd_refresh URI IMAGE RESTART
 *   IMAGE is the file the server serves; RESTART a command that, given a
 *   size in bytes, stops the server, sets IMAGE to that size and starts the
 *   server again on the same socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blockdev/blockdev.h"
#include "blockdev/guard.h"

#define BS 4096u
#define STEP (1u << 20)  /* each growth */
#define GROWTHS 12
#define THREADS 3
#define TIMEOUT_MS 20000u

static int failures;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", ok ? "ok   " : "FAIL ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	failures += !ok;
}

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131u + i * 7u + 1u);
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ---- the racers ----------------------------------------------------------- */

struct race {
	struct blockdev *bd;
	bool stop;             /* atomic */
	uint64_t starts, ends; /* atomic: refreshes begun, ended */
	uint64_t overlaps;     /* atomic: calls in flight during a refresh */
};

struct racer {
	struct race *race;
	unsigned id;
	uint64_t rng, ops, failures, mismatches;
	int first_err;
};

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Blocks of its own (number % THREADS == id), half the time in the newest
 * STEP of the device: written, read back at once. */
static void *racer_main(void *arg)
{
	struct racer *me = arg;
	struct race *ra = me->race;
	uint8_t *w = malloc(BS), *r = malloc(BS);
	while (w && r && !__atomic_load_n(&ra->stop, __ATOMIC_ACQUIRE)) {
		uint64_t blocks = blockdev_size(ra->bd) / BS;
		uint64_t first = next_rand(&me->rng) % 2 ? blocks - STEP / BS : 0;
		uint64_t b = first + next_rand(&me->rng) % (blocks - first);
		b = b - b % THREADS + me->id;
		if (b >= blocks)
			continue;
		uint64_t ends = __atomic_load_n(&ra->ends, __ATOMIC_ACQUIRE);
		uint64_t starts = __atomic_load_n(&ra->starts, __ATOMIC_ACQUIRE);
		fill(w, BS, me->ops * THREADS + me->id);
		int err = blockdev_write(ra->bd, w, BS, b * BS);
		if (!err)
			err = blockdev_read(ra->bd, r, BS, b * BS);
		if (starts != ends || __atomic_load_n(&ra->starts, __ATOMIC_ACQUIRE) != starts)
			__atomic_add_fetch(&ra->overlaps, 1, __ATOMIC_RELAXED);
		me->ops++;
		if (err && !me->failures)
			me->first_err = err;
		me->failures += err != 0;
		me->mismatches += !err && memcmp(w, r, BS) != 0;
	}
	free(w);
	free(r);
	return NULL;
}

/* ---- the checks ------------------------------------------------------------- */

/* Writes one block at the device's end, flushes, reads it back through
 * the device and from the image file. */
static void write_at_end(struct blockdev *bd, const char *image, uint64_t seed, const char *what)
{
	uint8_t w[BS], r[BS];
	uint64_t at = blockdev_size(bd) - BS;
	fill(w, BS, seed);
	int err = blockdev_write(bd, w, BS, at);
	if (!err)
		err = blockdev_flush(bd);
	if (!err)
		err = blockdev_read(bd, r, BS, at);
	check(!err && memcmp(w, r, BS) == 0,
	      "%s: a block written at the end (%" PRIu64 ") reads back (%d)", what, at, err);
	int fd = open(image, O_RDONLY);
	bool same = fd >= 0 && pread(fd, r, BS, (off_t)at) == (ssize_t)BS && memcmp(w, r, BS) == 0;
	if (fd >= 0)
		close(fd);
	check(same, "%s: ... and is in the image file", what);
}

static bool restart(const char *cmd, uint64_t size)
{
	char line[4096];
	snprintf(line, sizeof(line), "%s %" PRIu64, cmd, size);
	return system(line) == 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s URI IMAGE RESTART\n", argv[0]);
		return 2;
	}
	const char *uri = argv[1], *image = argv[2], *restart_cmd = argv[3];
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct blockdev *nbd, *bd;
	char why[256] = "";
	int err = blockdev_nbd_open(uri, 0, TIMEOUT_MS, &nbd, why, sizeof(why));
	if (err) {
		check(false, "the export opens: %s", why);
		return 1;
	}
	struct flush_guard_config gc = { .policy = FLUSH_ERROR_REPORT, .retain = true,
					 .block_size = BS };
	if (flush_guard_create(nbd, &gc, &bd) != 0) {
		check(false, "a flush guard over it");
		return 1;
	}
	uint64_t size = blockdev_size(bd), got = 0;
	check(size == file_size(image), "the device has the image's size (%" PRIu64 ")", size);

	err = blockdev_refresh_size(bd, &got);
	struct blockdev_nbd_info info;
	blockdev_nbd_info(nbd, &info);
	check(err == 0 && got == size && info.connected && info.reconnects == 0,
	      "a refresh with nothing changed keeps the size and the connection (%d)", err);

	/* Growths under I/O. */
	struct race ra = { .bd = nbd };
	struct racer racers[THREADS];
	pthread_t threads[THREADS];
	for (unsigned i = 0; i < THREADS; i++) {
		racers[i] = (struct racer){ .race = &ra, .id = i, .rng = 0x2545f4914f6cdd1dull + i };
		pthread_create(&threads[i], NULL, racer_main, &racers[i]);
	}
	bool all_seen = true;
	for (unsigned g = 0; g < GROWTHS; g++) {
		sleep_ms(30);
		size += STEP;
		if (truncate(image, (off_t)size) != 0) {
			check(false, "truncate %s: %s", image, strerror(errno));
			break;
		}
		__atomic_add_fetch(&ra.starts, 1, __ATOMIC_ACQ_REL);
		err = blockdev_refresh_size(bd, &got);
		__atomic_add_fetch(&ra.ends, 1, __ATOMIC_ACQ_REL);
		if (err || got != size || blockdev_size(nbd) != size) {
			check(false, "growth %u: refresh %d, size %" PRIu64 ", %" PRIu64 " wanted",
			      g + 1, err, got, size);
			all_seen = false;
		}
		if (g == GROWTHS / 2)
			check(blockdev_flush(bd) == 0, "a flush between growths");
	}
	sleep_ms(30);
	__atomic_store_n(&ra.stop, true, __ATOMIC_RELEASE);
	uint64_t ops = 0, failed = 0, mismatched = 0;
	int first_err = 0;
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		ops += racers[i].ops;
		failed += racers[i].failures;
		mismatched += racers[i].mismatches;
		if (!first_err)
			first_err = racers[i].first_err;
	}
	check(all_seen, "%u growths of %u MiB, each seen by its refresh", GROWTHS, STEP >> 20);
	check(failed == 0 && mismatched == 0,
	      "%" PRIu64 " writes read back by %u threads meanwhile: %" PRIu64 " failed (first %d), "
	      "%" PRIu64 " read other bytes", ops, THREADS, failed, first_err, mismatched);
	check(ra.overlaps > 0, "... %" PRIu64 " of them in flight during a refresh", ra.overlaps);
	check(blockdev_flush(bd) == 0, "the flush after them works");
	blockdev_nbd_info(nbd, &info);
	check(info.connected && info.reconnects == 0, "no reconnect was needed (%" PRIu64 ")",
	      info.reconnects);
	write_at_end(bd, image, 1, "after the growths");

	/* Cut below the device. */
	if (truncate(image, (off_t)(size - STEP)) == 0) {
		err = blockdev_refresh_size(bd, &got);
		check(err == -EUCLEAN && got == size && blockdev_size(bd) == size &&
		      blockdev_size(nbd) == size,
		      "an image cut below the device is -EUCLEAN, the size kept (%d)", err);
		check(truncate(image, (off_t)size) == 0, "the image given its size back");
	}
	write_at_end(bd, image, 2, "after the cut");

	/* The reconnect takes the refreshed size only. */
	check(restart(restart_cmd, size + STEP), "the server restarted on the image %u MiB larger",
	      STEP >> 20);
	sleep_ms(1500);
	blockdev_nbd_info(nbd, &info);
	check(!info.connected && info.reconnects == 0,
	      "... is not reconnected to (connected %d, reconnects %" PRIu64 ")", info.connected,
	      info.reconnects);
	check(restart(restart_cmd, size), "the server restarted on the image at the refreshed size");
	uint8_t w[BS], r[BS];
	fill(w, BS, 2);
	err = blockdev_read(bd, r, BS, size - BS);
	blockdev_nbd_info(nbd, &info);
	check(!err && memcmp(w, r, BS) == 0 && info.connected && info.reconnects == 1,
	      "... is reconnected to, and the block at the end reads back (%d, reconnects %" PRIu64
	      ")", err, info.reconnects);

	/* And grows again. */
	size += STEP;
	check(truncate(image, (off_t)size) == 0, "the image extended after the reconnect");
	err = blockdev_refresh_size(bd, &got);
	check(err == 0 && got == size, "... is seen by a refresh (%d, %" PRIu64 ")", err, got);
	write_at_end(bd, image, 3, "after the reconnect");

	blockdev_destroy(bd);
	blockdev_destroy(nbd);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
