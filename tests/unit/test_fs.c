/*
 * test_fs.c - the filesystem operations end to end on an in-memory image:
 * persistence, crash recovery, fsync isolation (delayed allocation), a
 * latched flush that must not stop other inodes, orphans, rename, ENOSPC.
 * Every test ends with the checker.
 */
#include "suite_main.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "file/file.h"
#include "inode/pages.h"
#include "orphan/orphan.h"
#include "writeback/writeback.h"
#include "extent/extent.h"

static const struct ordfs_cred root_cred = { 0, 0 };

/* Under the inode's lock: the writeback thread may be removing pages. */
static int count_dirty(struct ordfs *fs, struct inode *inode, void *ctx)
{
	(void)fs;
	ordfs_rwlock_rdlock(&inode->lock);
	*(int *)ctx += pages_has_dirty(inode);
	ordfs_rwlock_unlock(&inode->lock);
	return 0;
}

static int pages_has_dirty_any(struct ordfs *fs)
{
	int n = 0;
	inode_cache_for_each(fs, count_dirty, &n);
	return n;
}

static struct inode *make_file(struct test_fs *t, struct inode *dir, const char *name)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_create(t->fs, dir, name, 0644, &root_cred, &f), 0);
	return f;
}

static void fill_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 31 + seed * 7) ^ (i >> 9));
}

static void write_all(struct test_fs *t, struct inode *f, const uint8_t *buf, size_t len,
		      uint64_t off)
{
	ck_assert_int_eq(ordfs_write(t->fs, f, buf, len, off), (ssize_t)len);
}

static void expect_content(struct test_fs *t, const char *name, const uint8_t *want, size_t len)
{
	struct inode *root = tfs_root(t), *f;
	ck_assert_int_eq(ordfs_lookup(t->fs, root, name, &f), 0);
	ck_assert_uint_eq(f->size, len);
	uint8_t *got = malloc(len + 1);
	ck_assert_int_eq(ordfs_read(t->fs, f, got, len + 1, 0), (ssize_t)len);
	ck_assert_mem_eq(got, want, len);
	free(got);
	inode_put(t->fs, f);
	inode_put(t->fs, root);
}

START_TEST(test_create_write_read_persist)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *d, *f;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "dir", 0755, &root_cred, &d), 0);
	f = make_file(&t, d, "file");
	size_t len = 300000; /* not block aligned */
	uint8_t *buf = malloc(len);
	fill_pattern(buf, len, 1);
	write_all(&t, f, buf, len, 0);
	/* Read back before writeback (from the page cache) */
	uint8_t *got = malloc(len);
	ck_assert_int_eq(ordfs_read(t.fs, f, got, len, 0), (ssize_t)len);
	ck_assert_mem_eq(got, buf, len);
	ck_assert_int_eq(ordfs_create(t.fs, d, "file", 0644, &root_cred, &f), -EEXIST);
	inode_put(t.fs, f);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount(&t);

	tfs_mount(&t);
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "dir", &d), 0);
	ck_assert(S_ISDIR(d->d.mode));
	ck_assert_uint_eq(root->d.links, 4); /* ., .., dir's .., lost+found's .. */
	ck_assert_int_eq(ordfs_lookup(t.fs, d, "file", &f), 0);
	ck_assert_uint_eq(f->size, len);
	ck_assert_uint_eq(f->d.blocks, (len + 4095) / 4096);
	memset(got, 0, len);
	ck_assert_int_eq(ordfs_read(t.fs, f, got, len, 0), (ssize_t)len);
	ck_assert_mem_eq(got, buf, len);
	inode_put(t.fs, f);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	free(buf);
	free(got);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_sparse_overwrite_truncate)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *f = make_file(&t, root, "sparse");
	uint8_t a[5000], b[100], got[5000];
	fill_pattern(a, sizeof(a), 2);
	fill_pattern(b, sizeof(b), 3);
	uint64_t far = 5ull << 32; /* > 4 GiB offset: a hole before it */
	write_all(&t, f, a, sizeof(a), far);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.size, far + sizeof(a));
	ck_assert_uint_eq(f->d.blocks, 2); /* 5000 bytes from an aligned offset */
	/* Holes read as zeros. */
	ck_assert_int_eq(ordfs_read(t.fs, f, got, 4096, 12345), 4096);
	for (int i = 0; i < 4096; i++)
		ck_assert_uint_eq(got[i], 0);
	/* Overwrite in place, then read. */
	write_all(&t, f, b, sizeof(b), far + 10);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);
	ck_assert_int_eq(ordfs_read(t.fs, f, got, sizeof(a), far), (ssize_t)sizeof(a));
	ck_assert_mem_eq(got + 10, b, sizeof(b));
	ck_assert_mem_eq(got + 110, a + 110, sizeof(a) - 110);
	/* Truncate into the middle of a block, then grow: old bytes never
	 * come back. */
	ck_assert_int_eq(ordfs_truncate(t.fs, f, far + 50), 0);
	ck_assert_uint_eq(f->d.blocks, 1);
	ck_assert_int_eq(ordfs_truncate(t.fs, f, far + 4096), 0);
	ck_assert_int_eq(ordfs_read(t.fs, f, got, 4096, far), 4096);
	ck_assert_mem_eq(got + 10, b, 40);
	for (int i = 50; i < 4096; i++)
		ck_assert_uint_eq(got[i], 0);
	ck_assert_int_eq(ordfs_truncate(t.fs, f, 0), 0);
	ck_assert_uint_eq(f->d.blocks, 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* fsync of a small file must not write another file's delayed data. */
/* Past the background threshold the writeback thread writes data back
 * early, without any fsync, down to half the threshold; and background
 * writeback makes its own new data durable before mapping it, so the
 * next commit someone waits for (another file's fsync) needs no F1. */
/* Asserts that the file's dirty pages are exactly the blocks
 * [first, first + n) * stride, and that each holds a reservation. */
static void assert_pages_are(struct inode *f, uint64_t first, uint64_t n, uint64_t stride)
{
	uint64_t *blocks, count;
	ck_assert_int_eq(pages_blocks(f, &blocks, &count), 0);
	ck_assert_uint_eq(count, n);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_uint_eq(blocks[i], (first + i) * stride);
	free(blocks);
	ck_assert_uint_eq(pages_delayed_blocks(f), n);
}

/* A slice writes the file's lowest pages, found by probing upward when
 * they are dense and by walking every page when they are not; the
 * periodic pass writes everything slice by slice; st_blocks' count of
 * delayed blocks follows. */
START_TEST(test_writeback_slices_lowest_first)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	tfs_unmount(&t);
	t.opts.commit_interval_ms = 3600 * 1000; /* the thread stays out */
	tfs_mount(&t);
	struct inode *root = tfs_root(&t);
	uint32_t bs = 4096;
	uint8_t *buf = malloc(1024 * (size_t)bs);
	fill_pattern(buf, 1024 * (size_t)bs, 5);

	/* Dense: 1024 pages, written highest half first. */
	struct inode *dense = make_file(&t, root, "dense");
	write_all(&t, dense, buf + 512 * (size_t)bs, 512 * (size_t)bs, 512 * (uint64_t)bs);
	write_all(&t, dense, buf, 512 * (size_t)bs, 0);
	assert_pages_are(dense, 0, 1024, 1);
	ck_assert_int_eq(writeback_slices(t.fs, 256), 0);
	assert_pages_are(dense, 256, 768, 1);
	/* A page below the written ones comes back as the lowest. */
	write_all(&t, dense, buf + 3 * (size_t)bs, bs, 3 * (uint64_t)bs);
	ck_assert_int_eq(writeback_slices(t.fs, 1), 0);
	assert_pages_are(dense, 256, 768, 1);

	/* Sparse: 300 pages 1000 blocks apart, beyond any probing. */
	struct inode *sparse = make_file(&t, root, "sparse");
	for (uint64_t i = 300; i-- > 0;)
		write_all(&t, sparse, buf + (i % 1024) * bs, bs, i * 1000 * bs);
	assert_pages_are(sparse, 0, 300, 1000);
	ck_assert_int_eq(writeback_slices(t.fs, 256), 0);
	assert_pages_are(sparse, 256, 44, 1000);
	assert_pages_are(dense, 512, 512, 1);

	/* The periodic pass leaves nothing dirty and the sizes on disk. */
	ck_assert_int_eq(writeback_periodic(t.fs), 0);
	assert_pages_are(dense, 0, 0, 1);
	assert_pages_are(sparse, 0, 0, 1);
	ck_assert_uint_eq(dense->d.size, 1024 * (uint64_t)bs);
	ck_assert_uint_eq(sparse->d.size, 299001 * (uint64_t)bs);
	uint8_t *back = malloc(1024 * (size_t)bs);
	ck_assert_int_eq(ordfs_read(t.fs, dense, back, 1024 * (size_t)bs, 0), 1024 * bs);
	ck_assert_mem_eq(back, buf, 1024 * (size_t)bs);
	ck_assert_int_eq(ordfs_read(t.fs, sparse, back, bs, 299000 * (uint64_t)bs), bs);
	ck_assert_mem_eq(back, buf + 299 * (size_t)bs, bs);
	free(back);
	free(buf);
	inode_put(t.fs, sparse);
	inode_put(t.fs, dense);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_early_background_writeback)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	tfs_unmount(&t);
	t.opts.commit_interval_ms = 3600 * 1000; /* the periodic pass: not now */
	t.opts.dirty_limit_bytes = 8 << 20;      /* background threshold 4 MiB */
	tfs_mount(&t);
	uint64_t threshold = writeback_background_pages(t.fs);
	ck_assert_uint_eq(threshold, (4u << 20) / 4096);
	struct inode *root = tfs_root(&t);
	struct inode *big = make_file(&t, root, "big");
	size_t len = 6 << 20;
	uint8_t *buf = malloc(len);
	fill_pattern(buf, len, 9);
	write_all(&t, big, buf, len, 0);
	uint64_t dirty = 0;
	for (int i = 0; i < 2000; i++) {
		dirty = __atomic_load_n(&t.fs->dirty_pages, __ATOMIC_RELAXED);
		if (dirty <= threshold / 2)
			break;
		usleep(1000);
	}
	ck_assert_msg(dirty <= threshold / 2, "%llu pages still dirty", (unsigned long long)dirty);
	ck_assert_uint_gt(dirty, 0); /* early writeback stops at half the threshold */

	/* The big file's new blocks are mapped by now; a small file's fsync
	 * commits that mapping too, and needs one flush (no F1). */
	struct inode *small = make_file(&t, root, "small");
	write_all(&t, small, buf, 4096, 0);
	struct blockdev_counts c0, c1;
	blockdev_record_counts(t.rec, &c0);
	ck_assert_int_eq(ordfs_fsync(t.fs, small, false), 0);
	blockdev_record_counts(t.rec, &c1);
	ck_assert_uint_eq(c1.flushes - c0.flushes, 1);

	ck_assert_int_eq(ordfs_fsync(t.fs, big, false), 0);
	inode_put(t.fs, small);
	inode_put(t.fs, big);
	inode_put(t.fs, root);
	tfs_crash(&t);
	tfs_mount(&t);
	expect_content(&t, "big", buf, len);
	free(buf);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_fsync_does_not_write_other_files)
{
	struct test_fs t;
	tfs_setup(&t, 128 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *big = make_file(&t, root, "big");
	struct inode *small = make_file(&t, root, "small");
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0);

	size_t blen = 16 << 20;
	uint8_t *buf = malloc(blen);
	fill_pattern(buf, blen, 4);
	write_all(&t, big, buf, blen, 0);
	write_all(&t, small, buf, 4096, 0);

	blockdev_record_reset_counts(t.rec);
	ck_assert_int_eq(ordfs_fsync(t.fs, small, false), 0);
	struct blockdev_counts c;
	blockdev_record_counts(t.rec, &c);
	fprintf(stderr, "fsync of a 4 KiB file beside 16 MiB of unrelated delayed data: "
			"%llu bytes written, %llu flushes\n",
		(unsigned long long)c.bytes_written, (unsigned long long)c.flushes);
	/* One data block plus a few journal blocks, not 16 MiB. */
	ck_assert_msg(c.bytes_written < 256 * 1024, "fsync wrote %llu bytes",
		      (unsigned long long)c.bytes_written);
	ck_assert_uint_le(c.flushes, 2);

	inode_put(t.fs, big);
	inode_put(t.fs, small);
	inode_put(t.fs, root);
	free(buf);
	tfs_unmount_and_check(&t);
}
END_TEST

struct fsync_arg {
	struct test_fs *t;
	struct inode *inode;
	int result;
};

static void *fsync_thread(void *p)
{
	struct fsync_arg *a = p;
	a->result = ordfs_fsync(a->t->fs, a->inode, false);
	return NULL;
}

/* While one fsync waits for the disk, operations on other inodes go on. */
START_TEST(test_latched_flush_does_not_stop_other_inodes)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *a = make_file(&t, root, "a");
	struct inode *other = make_file(&t, root, "other");
	uint8_t buf[8192];
	fill_pattern(buf, sizeof(buf), 5);
	write_all(&t, other, buf, sizeof(buf), 0);
	ck_assert_int_eq(ordfs_sync(t.fs), 0);
	write_all(&t, a, buf, 4096, 0);

	blockdev_record_latch_arm(t.rec);
	struct fsync_arg arg = { &t, a, -1 };
	pthread_t th;
	pthread_create(&th, NULL, fsync_thread, &arg);
	ck_assert_int_eq(blockdev_record_latch_wait_blocked(t.rec, 1, 10000), 0);

	/* getattr, read, create, write, mkdir, unlink on other inodes. */
	struct inode *x;
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "other", &x), 0);
	ck_assert_uint_eq(x->size, sizeof(buf));
	uint8_t got[8192];
	ck_assert_int_eq(ordfs_read(t.fs, x, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert_mem_eq(got, buf, sizeof(buf));
	write_all(&t, x, buf, 4096, 8192);
	inode_put(t.fs, x);
	struct inode *n = make_file(&t, root, "new-while-latched");
	write_all(&t, n, buf, 100, 0);
	inode_put(t.fs, n);
	struct inode *d;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "dir-while-latched", 0700, &root_cred, &d), 0);
	inode_put(t.fs, d);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "new-while-latched"), 0);
	/* The fsync is still waiting for the disk. */
	ck_assert_int_eq(arg.result, -1);

	blockdev_record_latch_release(t.rec);
	pthread_join(th, NULL);
	ck_assert_int_eq(arg.result, 0);
	inode_put(t.fs, a);
	inode_put(t.fs, other);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* After a crash, every fsync'd file is exact and the image is consistent;
 * a file never fsync'd is absent, empty or exact, never garbage. */
START_TEST(test_crash_keeps_fsynced_files)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	enum { N = 20 };
	static uint8_t data[N][20000];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		struct inode *f = make_file(&t, root, name);
		size_t len = 1000 + (size_t)i * 900;
		fill_pattern(data[i], len, (uint32_t)i);
		write_all(&t, f, data[i], len, 0);
		if (i % 2 == 0)
			ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
		inode_put(t.fs, f);
	}
	/* fsync of the directory makes the names of the odd files durable too
	 * (their data may or may not be). */
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0);
	inode_put(t.fs, root);

	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert(t.fs->recovery.needed);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		size_t len = 1000 + (size_t)i * 900;
		if (i % 2 == 0) {
			expect_content(&t, name, data[i], len);
			continue;
		}
		root = tfs_root(&t);
		struct inode *f;
		ck_assert_int_eq(ordfs_lookup(t.fs, root, name, &f), 0);
		ck_assert(f->size == 0 || f->size == len);
		if (f->size == len) {
			uint8_t *got = malloc(len);
			ck_assert_int_eq(ordfs_read(t.fs, f, got, len, 0), (ssize_t)len);
			ck_assert_mem_eq(got, data[i], len);
			free(got);
		}
		inode_put(t.fs, f);
		inode_put(t.fs, root);
	}
	tfs_unmount_and_check(&t);
}
END_TEST

/* An unlinked file that is still open is freed at its last reference, or
 * by the next mount after a crash. */
START_TEST(test_orphans)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct alloc_counts c0, c;
	ck_assert_int_eq(ordfs_sync(t.fs), 0);
	alloc_get_counts(t.fs->alloc, &c0);

	struct inode *f = make_file(&t, root, "open-unlinked");
	uint8_t buf[65536];
	fill_pattern(buf, sizeof(buf), 9);
	write_all(&t, f, buf, sizeof(buf), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "open-unlinked"), 0);
	ck_assert_uint_eq(f->d.links, 0);
	ck_assert_uint_eq(t.fs->sb.orphan_head, f->ino);
	/* Still readable through the open reference. */
	uint8_t got[100];
	ck_assert_int_eq(ordfs_read(t.fs, f, got, 100, 0), 100);
	ck_assert_mem_eq(got, buf, 100);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);

	/* Crash with the file still open: the next mount frees it. */
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert_uint_eq(t.fs->sb.orphan_head, 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(t.fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	ck_assert_uint_eq(c.free_inodes, c0.free_inodes);

	/* Without a crash: the last put frees it. */
	root = tfs_root(&t);
	f = make_file(&t, root, "g");
	write_all(&t, f, buf, sizeof(buf), 0);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "g"), 0);
	inode_put(t.fs, f);
	ck_assert_uint_eq(t.fs->sb.orphan_head, 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(t.fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	ck_assert_uint_eq(c.free_inodes, c0.free_inodes);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_rename_and_rmdir)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *d1, *d2, *sub, *f;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d1", 0755, &root_cred, &d1), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d2", 0755, &root_cred, &d2), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, d1, "sub", 0755, &root_cred, &sub), 0);
	f = make_file(&t, d1, "f");
	inode_put(t.fs, f);
	f = make_file(&t, d2, "victim");
	inode_put(t.fs, f);

	ck_assert_int_eq(ordfs_rmdir(t.fs, root, "d1"), -ENOTEMPTY);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "d1"), -EISDIR);
	ck_assert_int_eq(ordfs_rmdir(t.fs, d1, "f"), -ENOTDIR);
	/* A directory cannot move into itself. */
	ck_assert_int_eq(ordfs_rename(t.fs, root, "d1", sub, "loop", 0), -EINVAL);
	/* Rename over an existing file replaces it. */
	ck_assert_int_eq(ordfs_rename(t.fs, d1, "f", d2, "victim", 0), 0);
	ck_assert_int_eq(ordfs_lookup(t.fs, d1, "f", &f), -ENOENT);
	/* Move a directory across parents: link counts and ".." follow. */
	ck_assert_int_eq(ordfs_rename(t.fs, d1, "sub", d2, "sub2", 0), 0);
	ck_assert_uint_eq(sub->d.parent, d2->ino);
	ck_assert_uint_eq(d1->d.links, 2);
	ck_assert_uint_eq(d2->d.links, 3);
	ck_assert_int_eq(ordfs_rmdir(t.fs, root, "d1"), 0);
	inode_put(t.fs, sub);
	inode_put(t.fs, d1);
	inode_put(t.fs, d2);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "d1", &d1), -ENOENT);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "d2", &d2), 0);
	ck_assert_int_eq(ordfs_lookup(t.fs, d2, "victim", &f), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, d2);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_enospc_reported_by_write)
{
	struct test_fs t;
	tfs_setup(&t, 4 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *f = make_file(&t, root, "fill");
	uint8_t buf[65536];
	fill_pattern(buf, sizeof(buf), 11);
	uint64_t off = 0;
	ssize_t n;
	while ((n = ordfs_write(t.fs, f, buf, sizeof(buf), off)) == (ssize_t)sizeof(buf))
		off += (uint64_t)n;
	ck_assert(n == -ENOSPC || (n > 0 && n < (ssize_t)sizeof(buf)));
	/* Everything accepted can be written back and made durable. */
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "fill"), 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	f = make_file(&t, root, "again");
	write_all(&t, f, buf, sizeof(buf), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Whether the image bytes hold `len` bytes of p at a block boundary in
 * [first, end) blocks. */
static bool image_has(struct test_fs *t, const uint8_t *p, size_t len, uint64_t first,
		      uint64_t end)
{
	const uint8_t *bytes = blockdev_mem_bytes(t->mem);
	uint32_t bs = t->fs->block_size;
	for (uint64_t b = first; b < end; b++)
		if (memcmp(bytes + b * bs, p, len) == 0)
			return true;
	return false;
}

/* data=journal: file data goes through the log, is read back from the
 * cache before it is home, survives a crash by replay, and reaches home
 * at checkpoint. */
START_TEST(test_data_journal_logs_file_data)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 4096, 0);
	tfs_unmount(&t);
	t.opts.data_mode = JOURNAL_DATA_JOURNAL;
	tfs_mount(&t);
	uint32_t bs = t.fs->block_size;
	const struct ordfs_super *sb = &t.fs->sb;
	uint8_t *one = malloc(bs), *two = malloc(bs), *back = malloc(bs);
	ck_assert(one && two && back);
	for (uint32_t i = 0; i < bs; i++) {
		one[i] = (uint8_t)(i * 13 + 1);
		two[i] = (uint8_t)(i * 29 + 7);
	}
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0644, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_write(t.fs, f, one, bs, 0), bs);
	ck_assert_int_eq(ordfs_write(t.fs, f, one, bs, bs), bs);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	struct ordfs_extent ext;
	ck_assert_int_eq(extent_lookup(t.fs, f, 1, &ext), 1);
	uint64_t home = ext.physical + (1 - ext.logical);
	uint64_t log_first = sb->journal_start, log_end = sb->journal_start + sb->journal_blocks;
	/* Logged, not yet home. */
	ck_assert(image_has(&t, one, bs, log_first, log_end));
	ck_assert(!image_has(&t, one, bs, home, home + 1));
	/* An overwrite in place goes through the log too, and reads see it. */
	ck_assert_int_eq(ordfs_write(t.fs, f, two, bs, bs), bs);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);
	ck_assert(image_has(&t, two, bs, log_first, log_end));
	ck_assert(!image_has(&t, two, bs, home, home + 1));
	ck_assert_int_eq(ordfs_read(t.fs, f, back, bs, bs), bs);
	ck_assert_mem_eq(back, two, bs);
	inode_put(t.fs, f);
	inode_put(t.fs, root);

	/* A crash now: replay puts both versions' last one home. */
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert(image_has(&t, two, bs, home, home + 1));
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "f", &f), 0);
	ck_assert_int_eq(ordfs_read(t.fs, f, back, bs, 0), bs);
	ck_assert_mem_eq(back, one, bs);
	ck_assert_int_eq(ordfs_read(t.fs, f, back, bs, bs), bs);
	ck_assert_mem_eq(back, two, bs);
	/* Freed logged blocks are revoked: truncate, reuse, crash, replay. */
	ck_assert_int_eq(ordfs_write(t.fs, f, one, bs, bs), bs);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_int_eq(ordfs_truncate(t.fs, f, 0), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "f", &f), 0);
	ck_assert_uint_eq(f->size, 0);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
	free(one);
	free(two);
	free(back);
}
END_TEST

/* data=ordered logs the little new data an fsync waits for, and keeps
 * such blocks coherent: a later overwrite goes through the log too (a
 * checkpoint never puts the older logged copy over it), reads see the
 * newest bytes before they are home, a freed logged block reused by
 * another file's in-place write shows that file's bytes, and a crash
 * replays none of the freed block's old copies over them. */
START_TEST(test_ordered_logs_small_fsynced_data)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 4096, 0);
	uint32_t bs = t.fs->block_size;
	const struct ordfs_super *sb = &t.fs->sb;
	uint64_t log_first = sb->journal_start, log_end = sb->journal_start + sb->journal_blocks;
	uint8_t *one = malloc(bs), *two = malloc(bs), *back = malloc(bs);
	size_t big_len = 256 * (size_t)bs;
	uint8_t *big = malloc(big_len), *big_back = malloc(big_len);
	ck_assert(one && two && back && big && big_back);
	fill_pattern(one, bs, 1);
	fill_pattern(two, bs, 2);
	fill_pattern(big, big_len, 3);

	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0644, &root_cred, &f), 0);
	write_all(&t, f, one, bs, 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	struct ordfs_extent ext;
	ck_assert_int_eq(extent_lookup(t.fs, f, 0, &ext), 1);
	uint64_t home = ext.physical;
	ck_assert(image_has(&t, one, bs, log_first, log_end)); /* logged */
	ck_assert(!image_has(&t, one, bs, home, home + 1));     /* not home yet */

	/* Small writes into fallocate'd (unwritten) space are logged too:
	 * one flush per fsync (no F1), and a crash keeps them. */
	struct inode *pre;
	ck_assert_int_eq(ordfs_create(t.fs, root, "pre", 0644, &root_cred, &pre), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, pre, 0, 0, 64 * (uint64_t)bs), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, pre, false), 0);
	for (uint32_t i = 0; i < 4; i++) {
		write_all(&t, pre, i % 2 ? two : one, bs, (uint64_t)i * bs);
		struct blockdev_counts c0, c1;
		blockdev_record_counts(t.rec, &c0);
		ck_assert_int_eq(ordfs_fsync(t.fs, pre, i % 2), 0);
		blockdev_record_counts(t.rec, &c1);
		ck_assert_uint_eq(c1.flushes - c0.flushes, 1);
	}
	inode_put(t.fs, pre);

	/* A background overwrite of the logged block goes through the log. */
	write_all(&t, f, two, bs, 0);
	ck_assert_int_eq(writeback_all(t.fs, false), 0);
	ck_assert_int_eq(journal_flush_all(t.fs->journal), 0); /* commit + checkpoint */
	ck_assert(image_has(&t, two, bs, home, home + 1));
	ck_assert_int_eq(ordfs_read(t.fs, f, back, bs, 0), bs);
	ck_assert_mem_eq(back, two, bs);

	/* Free it (still cached), then let big in-place writes reuse it:
	 * a filler first moves the allocator's rotor past every other free
	 * block, so the next claims wrap round to the lowest free ones. */
	write_all(&t, f, one, bs, 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0); /* logged again */
	struct inode *filler;
	ck_assert_int_eq(ordfs_create(t.fs, root, "filler", 0644, &root_cred, &filler), 0);
	for (size_t off = 0;; off += big_len) {
		ssize_t n = ordfs_write(t.fs, filler, big, big_len, off);
		if (n <= 0)
			break;
		ck_assert_int_eq(ordfs_fsync(t.fs, filler, false), 0);
	}
	inode_put(t.fs, filler);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "filler"), 0);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "f"), 0);
	inode_put(t.fs, f);
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0);
	struct inode *g;
	ck_assert_int_eq(ordfs_create(t.fs, root, "g", 0644, &root_cred, &g), 0);
	size_t g_len = 0;
	for (;;) {
		ssize_t n = ordfs_write(t.fs, g, big, big_len, g_len);
		if (n <= 0) {
			ck_assert_int_eq(n, -ENOSPC);
			break;
		}
		g_len += (size_t)n;
		ck_assert_int_eq(ordfs_fsync(t.fs, g, false), 0); /* in place: large */
	}
	bool reused = false;
	for (uint64_t l = 0; l < g_len / bs; l++) {
		ck_assert_int_eq(extent_lookup(t.fs, g, l, &ext), 1);
		reused |= ext.physical + (l - ext.logical) == home;
	}
	ck_assert_msg(reused, "the freed block was not reused; the test proves nothing");
	for (size_t off = 0; off < g_len; off += big_len) {
		size_t want = g_len - off < big_len ? g_len - off : big_len;
		ck_assert_int_eq(ordfs_read(t.fs, g, big_back, big_len, off), (ssize_t)want);
		ck_assert_mem_eq(big_back, big, want);
	}
	inode_put(t.fs, g);
	inode_put(t.fs, root);

	/* The log still holds f's copies; replay must not bring them back. */
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "pre", &pre), 0);
	for (uint32_t i = 0; i < 4; i++) {
		ck_assert_int_eq(ordfs_read(t.fs, pre, back, bs, (uint64_t)i * bs), bs);
		ck_assert_mem_eq(back, i % 2 ? two : one, bs);
	}
	inode_put(t.fs, pre);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "g", &g), 0);
	ck_assert_uint_eq(g->size, g_len);
	for (size_t off = 0; off < g_len; off += big_len) {
		size_t want = g_len - off < big_len ? g_len - off : big_len;
		ck_assert_int_eq(ordfs_read(t.fs, g, big_back, big_len, off), (ssize_t)want);
		ck_assert_mem_eq(big_back, big, want);
	}
	inode_put(t.fs, g);
	tfs_unmount_and_check(&t);
	free(one);
	free(two);
	free(back);
	free(big);
	free(big_back);
}
END_TEST

START_TEST(test_refused_mounts_leave_image_untouched)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 4096, 0);
	tfs_unmount(&t);
	uint8_t *bytes = blockdev_mem_bytes(t.mem);
	size_t size = (size_t)t.mem->size;
	uint8_t *before = malloc(size);

	struct ordfs *fs;
	const char *why = NULL;
	/* Bad superblock checksum in both copies. */
	bytes[200] ^= 1;
	bytes[ORDFS_SB_COPY_SIZE + 200] ^= 1;
	memcpy(before, bytes, size);
	ck_assert_int_eq(ordfs_mount(t.mem, &t.opts, &fs, &why), -EUCLEAN);
	ck_assert_str_eq(why, "bad superblock checksum");
	ck_assert_mem_eq(before, bytes, size);
	bytes[200] ^= 1;
	bytes[ORDFS_SB_COPY_SIZE + 200] ^= 1;
	/* A too-new incompat feature. */
	struct ordfs_super sb;
	ck_assert_int_eq(ordfs_read_super(t.mem, false, &sb, &why), 0);
	sb.feature_incompat |= 0x40;
	ordfs_super_encode(&sb, bytes);
	memcpy(before, bytes, size);
	ck_assert_int_eq(ordfs_mount(t.mem, &t.opts, &fs, &why), -EOPNOTSUPP);
	ck_assert_mem_eq(before, bytes, size);
	/* Not an ordfs image at all. */
	memset(bytes, 0, 4096);
	memcpy(before, bytes, size);
	ck_assert_int_eq(ordfs_mount(t.mem, &t.opts, &fs, &why), -EUCLEAN);
	ck_assert_str_eq(why, "not an ordfs image (bad magic)");
	ck_assert_mem_eq(before, bytes, size);
	/* The backup superblock still has the filesystem. */
	ck_assert_int_eq(ordfs_read_super(t.mem, true, &sb, &why), 0);
	free(before);
	tfs_free(&t);
}
END_TEST

/* A minimum-size journal under a long operation sequence: the log wraps,
 * checkpoints and revokes many times, and every operation still fits. */
START_TEST(test_minimum_journal_long_sequence)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 1024, ORDFS_MIN_JOURNAL_BLOCKS);
	struct inode *root = tfs_root(&t), *d;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &root_cred, &d), 0);
	uint8_t buf[40000];
	char name[32];
	for (int round = 0; round < 300; round++) {
		snprintf(name, sizeof(name), "f%d", round % 37);
		struct inode *f;
		int err = ordfs_create(t.fs, d, name, 0644, &root_cred, &f);
		if (err == -EEXIST) {
			ck_assert_int_eq(ordfs_unlink(t.fs, d, name), 0);
			continue;
		}
		ck_assert_int_eq(err, 0);
		size_t len = 500 + (size_t)(round * 977) % sizeof(buf);
		fill_pattern(buf, len, (uint32_t)round);
		write_all(&t, f, buf, len, (uint64_t)(round % 5) * 3000);
		if (round % 3 == 0)
			ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
		if (round % 7 == 0)
			ck_assert_int_eq(ordfs_truncate(t.fs, f, len / 3), 0);
		inode_put(t.fs, f);
		if (round % 10 == 0) {
			/* A directory block journaled, then freed: a revoke. */
			struct inode *sub, *g;
			ck_assert_int_eq(ordfs_mkdir(t.fs, d, "sub", 0755, &root_cred, &sub), 0);
			ck_assert_int_eq(ordfs_create(t.fs, sub, "g", 0644, &root_cred, &g), 0);
			inode_put(t.fs, g);
			ck_assert_int_eq(ordfs_fsync(t.fs, sub, false), 0); /* block in the log */
			ck_assert_int_eq(ordfs_unlink(t.fs, sub, "g"), 0);
			inode_put(t.fs, sub);
			ck_assert_int_eq(ordfs_rmdir(t.fs, d, "sub"), 0);
		}
	}
	struct journal_stats st;
	ck_assert_int_eq(ordfs_sync(t.fs), 0);
	journal_get_stats(t.fs->journal, &st);
	ck_assert_uint_ge(st.checkpoints, 5);
	ck_assert_uint_gt(st.revokes_logged, 0);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	/* A crash now, then recovery, then the checker. */
	tfs_crash(&t);
	tfs_mount(&t);
	tfs_unmount_and_check(&t);
}
END_TEST

/* "Write a new file, rename it over the old one" without fsync: after a
 * crash the name holds the old or the new content in full, never an empty
 * file (ext4's auto_da_alloc). */
START_TEST(test_replace_via_rename_without_fsync)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	uint8_t oldc[10000], newc[12345];
	fill_pattern(oldc, sizeof(oldc), 21);
	fill_pattern(newc, sizeof(newc), 22);
	struct inode *f = make_file(&t, root, "config");
	write_all(&t, f, oldc, sizeof(oldc), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);

	f = make_file(&t, root, "config.tmp");
	write_all(&t, f, newc, sizeof(newc), 0);
	inode_put(t.fs, f);
	ck_assert_int_eq(ordfs_rename(t.fs, root, "config.tmp", root, "config", 0), 0);
	/* The periodic commit happens; nobody called fsync. */
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	inode_put(t.fs, root);

	tfs_crash(&t);
	tfs_mount(&t);
	expect_content(&t, "config", newc, sizeof(newc));
	tfs_unmount_and_check(&t);
}
END_TEST

/* Data written without fsync reaches the image with the periodic
 * writeback, within a couple of commit intervals. */
START_TEST(test_periodic_writeback_without_fsync)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	tfs_unmount(&t);
	t.opts.commit_interval_ms = 50;
	tfs_mount(&t);
	struct inode *root = tfs_root(&t);
	uint8_t data[30000];
	fill_pattern(data, sizeof(data), 23);
	struct inode *f = make_file(&t, root, "unsynced");
	write_all(&t, f, data, sizeof(data), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	/* Wait for writeback + a commit, bounded. */
	for (int i = 0; i < 200; i++) {
		struct journal_stats st;
		journal_get_stats(t.fs->journal, &st);
		if (pages_has_dirty_any(t.fs) == 0 && st.commits >= 2)
			break;
		usleep(20000);
	}
	usleep(200000);
	tfs_crash(&t);
	t.opts.commit_interval_ms = 0;
	tfs_mount(&t);
	expect_content(&t, "unsynced", data, sizeof(data));
	tfs_unmount_and_check(&t);
}
END_TEST

/* Sparse one-byte writes until ENOSPC (every write a new extent): all that
 * write() accepted must be storable, extent-tree blocks included, so the
 * fsync succeeds and every byte is there after a remount. */
START_TEST(test_enospc_sparse_writes_keep_accepted_data)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 1024, 0);
	struct inode *root = tfs_root(&t);
	struct inode *f = make_file(&t, root, "sparse");
	uint64_t n = 0;
	for (;; n++) {
		uint8_t b = (uint8_t)(n * 7 + 1);
		ssize_t r = ordfs_write(t.fs, f, &b, 1, n * 8192);
		if (r == -ENOSPC)
			break;
		ck_assert_int_eq(r, 1);
	}
	ck_assert_uint_gt(n, 1000);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "sparse", &f), 0);
	ck_assert_uint_eq(f->size, (n - 1) * 8192 + 1);
	for (uint64_t i = 0; i < n; i += 97) {
		uint8_t b = 0;
		ck_assert_int_eq(ordfs_read(t.fs, f, &b, 1, i * 8192), 1);
		ck_assert_uint_eq(b, (uint8_t)(i * 7 + 1));
	}
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* A truncate interrupted after it lowered the size but before it freed the
 * blocks is finished by the next mount: the inode is on the orphan list
 * from the first handle on. */
START_TEST(test_interrupted_truncate_finished_at_mount)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *f = make_file(&t, root, "big");
	static uint8_t data[400000];
	fill_pattern(data, sizeof(data), 31);
	write_all(&t, f, data, sizeof(data), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	uint64_t blocks = f->d.blocks;
	ck_assert_uint_gt(blocks, 90);

	/* The first step of truncate(f, 1000), alone, then a crash. */
	ordfs_rwlock_wrlock(&f->lock);
	f->size = f->d.size = 1000;
	struct handle *h = tfs_start(&t, 4);
	ck_assert_int_eq(orphan_truncate_begin(t.fs, h, f), 0);
	tfs_stop(h);
	ordfs_rwlock_unlock(&f->lock);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	ck_assert_uint_eq(t.fs->sb.orphan_head, f->ino);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);

	tfs_mount(&t);
	ck_assert_uint_eq(t.fs->sb.orphan_head, 0);
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "big", &f), 0);
	ck_assert_uint_eq(f->size, 1000);
	ck_assert_uint_eq(f->d.blocks, 1);
	uint8_t got[1000];
	ck_assert_int_eq(ordfs_read(t.fs, f, got, sizeof(got), 0), 1000);
	ck_assert_mem_eq(got, data, 1000);
	ck_assert(!(f->d.flags & ORDFS_INODE_ORPHAN));
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* An inode whose newest size lives only in memory (a truncate up while a
 * page was dirty, then the page punched away) stays cached when its last
 * reference goes, until writeback writes it: the next lookup must not
 * read the older inode from disk (fsx -c found the size going back after
 * the kernel forgot the file). */
START_TEST(test_forgotten_inode_keeps_unwritten_size)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 4096, 0);
	tfs_unmount(&t);
	t.opts.commit_interval_ms = 3600 * 1000; /* no periodic writeback now */
	tfs_mount(&t);
	struct inode *root = tfs_root(&t);
	struct inode *f = make_file(&t, root, "f");
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 3);
	write_all(&t, f, buf, sizeof(buf), 0); /* a dirty page: d.size stays 0 */
	ck_assert_int_eq(ordfs_truncate(t.fs, f, 40000), 0); /* d.size follows at writeback */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
					 4096), 0);
	ck_assert(!pages_has_dirty(f));
	ck_assert_uint_ne(f->d.size, f->size);
	uint32_t ino = f->ino;
	inode_put(t.fs, f); /* the last reference: the kernel forgot the file */
	ck_assert_int_eq(inode_get(t.fs, ino, &f), 0);
	ck_assert_uint_eq(f->size, 40000);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	ck_assert_int_eq(tfs_check_image(&t), 0);
	tfs_mount(&t); /* and on disk after the unmount wrote it */
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "f", &f), 0);
	ck_assert_uint_eq(f->size, 40000);
	ck_assert_uint_eq(f->d.size, 40000);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *fs_suite(void)
{
	Suite *s = suite_create("fs");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_create_write_read_persist);
	tcase_add_test(tc, test_sparse_overwrite_truncate);
	tcase_add_test(tc, test_fsync_does_not_write_other_files);
	tcase_add_test(tc, test_latched_flush_does_not_stop_other_inodes);
	tcase_add_test(tc, test_crash_keeps_fsynced_files);
	tcase_add_test(tc, test_orphans);
	tcase_add_test(tc, test_rename_and_rmdir);
	tcase_add_test(tc, test_enospc_reported_by_write);
	tcase_add_test(tc, test_refused_mounts_leave_image_untouched);
	tcase_add_test(tc, test_minimum_journal_long_sequence);
	tcase_add_test(tc, test_replace_via_rename_without_fsync);
	tcase_add_test(tc, test_periodic_writeback_without_fsync);
	tcase_add_test(tc, test_enospc_sparse_writes_keep_accepted_data);
	tcase_add_test(tc, test_interrupted_truncate_finished_at_mount);
	tcase_add_test(tc, test_data_journal_logs_file_data);
	tcase_add_test(tc, test_ordered_logs_small_fsynced_data);
	tcase_add_test(tc, test_early_background_writeback);
	tcase_add_test(tc, test_forgotten_inode_keeps_unwritten_size);
	tcase_add_test(tc, test_writeback_slices_lowest_first);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(fs_suite());
}
