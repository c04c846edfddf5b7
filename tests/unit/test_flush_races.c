/*
 * test_flush_races.c - races in the flush path, each with a device that
 * lets the test hold one operation while another proceeds:
 *  - the flush guard rewriting stale copies after a failed flush must
 *    never put old bytes over a newer write that completed meanwhile;
 *  - a flush that began while a write was in flight must not let the next
 *    flush be skipped (with and without retained copies);
 *  - fsync of data overwritten in place while the commit it waits for was
 *    already past its flushes must still flush: after a power cut (only
 *    flushed writes survive) the fsync'd bytes are there.
 * (Found by review; each test failed before its fix.)
 */
#include "suite_main.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "blockdev/blockdev.h"
#include "blockdev/guard.h"
#include "mkfs/mkfs.h"

#define BS 4096u
#define IMG (16ull << 20)

#define BS 4096u

/* An inner device: mem + a gate on writes of one block + flush fault + hook. */
struct gdev {
	struct blockdev bd;
	struct blockdev *mem;
	pthread_mutex_t m;
	pthread_cond_t c;
	uint64_t gate_block; bool gate_armed, gate_open, gate_waiting;
	int fail_flushes;   /* fail the next n flushes */
	int flushes;
	void (*hook)(struct gdev *, uint64_t block);
};

static int g_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	return blockdev_read(((struct gdev *)bd)->mem, buf, len, off);
}
static int g_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct gdev *d = (struct gdev *)bd;
	if (d->hook)
		d->hook(d, off / BS);
	pthread_mutex_lock(&d->m);
	if (d->gate_armed && off / BS == d->gate_block) {
		d->gate_armed = false;
		d->gate_waiting = true;
		pthread_cond_broadcast(&d->c);
		while (!d->gate_open)
			pthread_cond_wait(&d->c, &d->m);
		d->gate_waiting = false;
	}
	pthread_mutex_unlock(&d->m);
	return blockdev_write(d->mem, buf, len, off);
}
static int g_flush(struct blockdev *bd)
{
	struct gdev *d = (struct gdev *)bd;
	pthread_mutex_lock(&d->m);
	d->flushes++;
	int fail = d->fail_flushes > 0 ? (d->fail_flushes--, 1) : 0;
	pthread_mutex_unlock(&d->m);
	return fail ? -EIO : 0;
}
static void g_destroy(struct blockdev *bd) { (void)bd; }
static const struct blockdev_ops g_ops = { .read = g_read, .write = g_write, .flush = g_flush,
					   .destroy = g_destroy };

static void gdev_init(struct gdev *d, uint64_t blocks)
{
	memset(d, 0, sizeof(*d));
	ck_assert_int_eq(blockdev_mem_create(blocks * BS, &d->mem), 0);
	d->bd.ops = &g_ops;
	d->bd.size = blocks * BS;
	pthread_mutex_init(&d->m, NULL);
	pthread_cond_init(&d->c, NULL);
}
static void gate_arm(struct gdev *d, uint64_t b)
{
	pthread_mutex_lock(&d->m);
	d->gate_block = b; d->gate_armed = true; d->gate_open = false;
	pthread_mutex_unlock(&d->m);
}
static void gate_wait_blocked(struct gdev *d)
{
	pthread_mutex_lock(&d->m);
	while (!d->gate_waiting)
		pthread_cond_wait(&d->c, &d->m);
	pthread_mutex_unlock(&d->m);
}
static void gate_open(struct gdev *d)
{
	pthread_mutex_lock(&d->m);
	d->gate_open = true;
	pthread_cond_broadcast(&d->c);
	pthread_mutex_unlock(&d->m);
}

struct wjob { struct blockdev *g; uint64_t block; uint8_t val; int rc; };
static void *wthread(void *arg)
{
	struct wjob *j = arg;
	uint8_t buf[BS];
	memset(buf, j->val, BS);
	j->rc = blockdev_write(j->g, buf, BS, j->block * BS);
	return NULL;
}
static void wblock(struct blockdev *g, uint64_t b, uint8_t v)
{
	uint8_t buf[BS];
	memset(buf, v, BS);
	ck_assert_int_eq(blockdev_write(g, buf, BS, b * BS), 0);
}

/* Non-retaining guard: a flush that starts while a write is in flight
 * must not make a later flush skip. */
static void nonretain_case(enum flush_error_policy pol)
{
	struct gdev d;
	gdev_init(&d, 64);
	struct blockdev *g;
	struct flush_guard_config gc = { .policy = pol, .retain = false, .block_size = BS };
	ck_assert_int_eq(flush_guard_create(&d.bd, &gc, &g), 0);

	wblock(g, 1, 0x11);
	ck_assert_int_eq(blockdev_flush(g), 0);
	int base = d.flushes;

	gate_arm(&d, 5);
	struct wjob j = { g, 5, 0x55, -1 };
	pthread_t t;
	pthread_create(&t, NULL, wthread, &j);
	gate_wait_blocked(&d);
	ck_assert_int_eq(blockdev_flush(g), 0); /* concurrent flush (commit thread) */
	int mid = d.flushes;
	gate_open(&d);
	pthread_join(t, NULL);
	ck_assert_int_eq(j.rc, 0);
	/* The write completed after the last flush began: this flush must reach the device. */
	ck_assert_int_eq(blockdev_flush(g), 0);
	ck_assert_msg(d.flushes == mid + 1, "flush after a completed write was skipped (flushes %d, want %d)",
		      d.flushes, mid + 1); (void)base;
	blockdev_destroy(g);
	blockdev_destroy(d.mem);
}
START_TEST(test_nonretain_skip_remount_ro) { nonretain_case(FLUSH_ERROR_REMOUNT_RO); }
END_TEST
START_TEST(test_retain_skip_report)
{
	struct gdev d;
	gdev_init(&d, 64);
	struct blockdev *g;
	struct flush_guard_config gc = { .policy = FLUSH_ERROR_REPORT, .retain = true, .block_size = BS };
	ck_assert_int_eq(flush_guard_create(&d.bd, &gc, &g), 0);
	wblock(g, 1, 0x11);
	ck_assert_int_eq(blockdev_flush(g), 0);
	int base = d.flushes;
	gate_arm(&d, 5);
	struct wjob j = { g, 5, 0x55, -1 };
	pthread_t t;
	pthread_create(&t, NULL, wthread, &j);
	gate_wait_blocked(&d);
	ck_assert_int_eq(blockdev_flush(g), 0);
	gate_open(&d);
	pthread_join(t, NULL);
	ck_assert_int_eq(blockdev_flush(g), 0);
	ck_assert_int_eq(d.flushes, base + 2);
	blockdev_destroy(g);
	blockdev_destroy(d.mem);
}
END_TEST

/* Retaining guard: reissue_stale writes its snapshot of a block whose
 * entry a newer (stale) write replaced meanwhile. */
static int hook_fired;
static void reissue_hook(struct gdev *d, uint64_t block)
{
	if (!hook_fired && block != d->gate_block && d->fail_flushes == 0 && d->flushes >= 2) {
		hook_fired = 1;
		gate_open(d); /* let the newer write of the gated block finish now */
		(void)block;
	}
}

static uint64_t bucket(uint64_t b) { return (b * 0x9e3779b97f4a7c15ull) % 1024; }

START_TEST(test_reissue_overwrites_newer_write)
{
	struct gdev d;
	gdev_init(&d, 4096);
	struct blockdev *g;
	struct flush_guard_config gc = { .policy = FLUSH_ERROR_REPORT, .retain = true, .block_size = BS };
	ck_assert_int_eq(flush_guard_create(&d.bd, &gc, &g), 0);
	ck_assert_int_eq(blockdev_flush(g), 0);

	/* Choose the target block: the one with the highest bucket among 1..1000,
	 * so the reissue loop reaches it last. */
	uint64_t target = 1;
	for (uint64_t b = 1; b <= 1000; b++)
		if (bucket(b) > bucket(target))
			target = b;
	for (uint64_t b = 1; b <= 1000; b++)
		wblock(g, b, b == target ? 0xA1 : 0x33); /* W1 */

	gate_arm(&d, target);
	struct wjob j = { g, target, 0xB2, -1 }; /* W2, newer */
	pthread_t t;
	pthread_create(&t, NULL, wthread, &j);
	gate_wait_blocked(&d);

	d.fail_flushes = 1;
	ck_assert_int_eq(blockdev_flush(g), -EIO); /* F1 fails: all stale */
	d.flushes = 2;
	d.hook = reissue_hook;
	/* F2: reissues; during it W2 completes (and is retained stale). */
	ck_assert_int_eq(blockdev_flush(g), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(j.rc, 0);
	d.hook = NULL;
	ck_assert_int_eq(blockdev_flush(g), 0);
	ck_assert_int_eq(blockdev_flush(g), 0);
	uint8_t got = blockdev_mem_bytes(d.mem)[target * BS];
	ck_assert_msg(got == 0xB2, "block %llu holds 0x%02x after the newer write 0xB2 succeeded",
		      (unsigned long long)target, got);
	blockdev_destroy(g);
	blockdev_destroy(d.mem);
}
END_TEST

/* A device whose flush makes durable exactly the writes completed before
 * the flush was issued; the nth flush blocks (after taking its snapshot)
 * until released. */
struct sdev {
	struct blockdev bd;
	struct blockdev *mem;
	uint8_t *durable, *snap;
	pthread_mutex_t m; pthread_cond_t c;
	int flushes, block_nth, blocked, released;
};
static int s_read(struct blockdev *bd, void *b, size_t l, uint64_t o)
{ return blockdev_read(((struct sdev *)bd)->mem, b, l, o); }
static int s_write(struct blockdev *bd, const void *b, size_t l, uint64_t o)
{ return blockdev_write(((struct sdev *)bd)->mem, b, l, o); }
static int s_flush(struct blockdev *bd)
{
	struct sdev *d = (struct sdev *)bd;
	pthread_mutex_lock(&d->m);
	memcpy(d->snap, blockdev_mem_bytes(d->mem), blockdev_size(&d->bd));
	int n = ++d->flushes;
	if (n == d->block_nth) {
		d->blocked = 1;
		pthread_cond_broadcast(&d->c);
		while (!d->released)
			pthread_cond_wait(&d->c, &d->m);
	}
	memcpy(d->durable, d->snap, blockdev_size(&d->bd));
	pthread_mutex_unlock(&d->m);
	return 0;
}
static void s_destroy(struct blockdev *bd) { (void)bd; }
static const struct blockdev_ops s_ops = { .read = s_read, .write = s_write, .flush = s_flush,
					   .destroy = s_destroy };

struct fsyncer { struct ordfs *fs; struct inode *ino; int rc; };
static void *do_fsync(void *a) { struct fsyncer *f = a; f->rc = ordfs_fsync(f->fs, f->ino, false); return NULL; }
static void *do_commit(void *a) { struct fsyncer *f = a; f->rc = journal_force_commit(f->fs->journal); return NULL; }

START_TEST(test_fsync_overwrite_during_commit)
{
	static const struct ordfs_cred cred = { 0, 0 };
	struct sdev d;
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(blockdev_mem_create(IMG, &d.mem), 0);
	d.bd.ops = &s_ops; d.bd.size = IMG;
	d.durable = calloc(1, IMG); d.snap = calloc(1, IMG);
	pthread_mutex_init(&d.m, NULL); pthread_cond_init(&d.c, NULL);

	struct mkfs_params p; memset(&p, 0, sizeof(p)); p.block_size = BS;
	struct ordfs_super sb; const char *why = "";
	ck_assert_int_eq(ordfs_mkfs_plan(&p, IMG, &sb, &why), 0);
	ck_assert_int_eq(ordfs_mkfs_write(&d.bd, &sb, &why), 0);
	ck_assert_int_eq(blockdev_flush(&d.bd), 0);
	struct ordfs_options o; ordfs_options_default(&o); o.commit_interval_ms = 0;
	struct ordfs *fs;
	ck_assert_int_eq(ordfs_mount(&d.bd, &o, &fs, &why), 0);

	struct inode *root, *f;
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	ck_assert_int_eq(ordfs_create(fs, root, "f", 0100644, &cred, &f), 0);
	uint8_t buf[BS];
	memset(buf, 'A', BS);
	ck_assert_int_eq(ordfs_write(fs, f, buf, BS, 0), BS);
	ck_assert_int_eq(ordfs_fsync(fs, f, false), 0);   /* A allocated and durable */
	usleep(10000);
	memset(buf, 'B', BS);
	ck_assert_int_eq(ordfs_write(fs, f, buf, BS, 0), BS); /* overwrite, page dirty */
	usleep(10000);
	ck_assert_int_eq(ordfs_read(fs, f, buf, 16, 0), 16);  /* relatime: atime written in T */
	{ struct journal_stats st; journal_get_stats(fs->journal, &st); ck_assert_uint_gt(f->sync_tid, st.committed_tid); }

	/* The commit of T: block its F2, its only flush (T holds the atime
	 * change alone, no new data to order, so no F1). */
	pthread_mutex_lock(&d.m); d.block_nth = d.flushes + 1; pthread_mutex_unlock(&d.m);
	struct fsyncer c = { fs, f, 1 }, s = { fs, f, 1 };
	pthread_t tc, ts;
	pthread_create(&tc, NULL, do_commit, &c);
	pthread_mutex_lock(&d.m); while (!d.blocked) pthread_cond_wait(&d.c, &d.m); pthread_mutex_unlock(&d.m);
	pthread_create(&ts, NULL, do_fsync, &s);
	usleep(100000); /* fsync wrote B in place and waits for T */
	pthread_mutex_lock(&d.m); d.released = 1; pthread_cond_broadcast(&d.c); pthread_mutex_unlock(&d.m);
	pthread_join(tc, NULL); pthread_join(ts, NULL);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_int_eq(s.rc, 0); /* fsync acknowledged B */

	/* Power cut: only what flushes covered. */
	pthread_mutex_lock(&d.m);
	struct blockdev *cut;
	ck_assert_int_eq(blockdev_mem_from(d.durable, IMG, &cut), 0);
	pthread_mutex_unlock(&d.m);
	inode_put(fs, f); inode_put(fs, root);
	(void)ordfs_unmount(fs);

	ck_assert_int_eq(ordfs_mount(cut, &o, &fs, &why), 0);
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	ck_assert_int_eq(ordfs_lookup(fs, root, "f", &f), 0);
	memset(buf, 0, BS);
	ck_assert_int_eq(ordfs_read(fs, f, buf, BS, 0), BS);
	ck_assert_msg(buf[0] == 'B', "fsync returned 0 but after a power cut the file holds '%c'", buf[0]);
	inode_put(fs, f); inode_put(fs, root);
	ordfs_unmount(fs);
	blockdev_destroy(cut);
	blockdev_destroy(d.mem);
	free(d.durable);
	free(d.snap);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flush races");
	TCase *tc = tcase_create("races");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_nonretain_skip_remount_ro);
	tcase_add_test(tc, test_retain_skip_report);
	tcase_add_loop_test(tc, test_reissue_overwrites_newer_write, 0, 20);
	tcase_add_test(tc, test_fsync_overwrite_during_commit);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
