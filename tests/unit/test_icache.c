/*
 * test_icache.c - the inode cache under threads that miss it together.
 *
 *  - Threads that look up an inode nobody holds, while another thread
 *    creates files in it (and so rewrites its slot), all get the one
 *    cached copy and never a torn read of the slot: one thread reads a
 *    slot, the others wait for it (ThreadSanitizer found two readers and
 *    a writer of the same slot in the mounted suite).
 *  - A walk of the cache (writeback_all) running beside creates never sees
 *    a new inode half set up.
 * Under ThreadSanitizer both are race detectors; in every build a torn
 * read fails the slot's checksum, which the lookups assert against.
 *  - The hash table grows past its first 4096 chains with every inode
 *    still found where it is: a lookup of a held inode returns that inode,
 *    never a second copy read from disk.
 */
#include "suite_main.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "writeback/writeback.h"

static const struct ordfs_cred root_cred = { 0, 0 };

#define CREATES 300
#define READERS 3

struct race {
	struct test_fs *t;
	uint32_t dir_ino;
	bool done;            /* atomic */
	int get_errors;       /* atomic: inode_get failures seen by readers */
	uint64_t gets;        /* atomic */
	int readers_in;       /* atomic: readers that have started */
};

/* Creates files in the directory, taking and dropping it each time so
 * that it leaves the cache between creates (nothing of it stays dirty). */
static void *creator(void *arg)
{
	struct race *r = arg;
	/* The race needs the readers running: on a loaded machine they may
	 * not have been scheduled yet (then no lookup would meet a create). */
	while (__atomic_load_n(&r->readers_in, __ATOMIC_ACQUIRE) < READERS)
		sched_yield();
	for (int i = 0; i < CREATES; i++) {
		struct inode *dir, *f;
		ck_assert_int_eq(inode_get(r->t->fs, r->dir_ino, &dir), 0);
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(ordfs_create(r->t->fs, dir, name, 0644, &root_cred, &f), 0);
		inode_put(r->t->fs, f);
		inode_put(r->t->fs, dir);
	}
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void *reader(void *arg)
{
	struct race *r = arg;
	__atomic_add_fetch(&r->readers_in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		struct inode *dir;
		int err = inode_get(r->t->fs, r->dir_ino, &dir);
		__atomic_add_fetch(&r->gets, 1, __ATOMIC_RELAXED);
		if (err) {
			__atomic_add_fetch(&r->get_errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		struct stat st;
		ordfs_getattr(r->t->fs, dir, &st);
		if (!S_ISDIR(st.st_mode))
			__atomic_add_fetch(&r->get_errors, 1, __ATOMIC_RELAXED);
		inode_put(r->t->fs, dir);
	}
	return NULL;
}

static void *walker(void *arg)
{
	struct race *r = arg;
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
		ck_assert_int_eq(writeback_all(r->t->fs, false), 0);
	return NULL;
}

static int count_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		       uint64_t next_cookie)
{
	(void)name; (void)len; (void)ino; (void)dtype; (void)next_cookie;
	(*(int *)ctx)++;
	return 0;
}

START_TEST(test_concurrent_misses_read_the_slot_once)
{
	struct test_fs t;
	tfs_setup(&t, 64ull << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *dir;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &root_cred, &dir), 0);
	struct race r = { .t = &t, .dir_ino = dir->ino };
	inode_put(t.fs, dir);

	pthread_t c, w, rd[READERS];
	ck_assert_int_eq(pthread_create(&c, NULL, creator, &r), 0);
	ck_assert_int_eq(pthread_create(&w, NULL, walker, &r), 0);
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&rd[i], NULL, reader, &r), 0);
	pthread_join(c, NULL);
	pthread_join(w, NULL);
	for (int i = 0; i < READERS; i++)
		pthread_join(rd[i], NULL);

	ck_assert_uint_gt(r.gets, 0);
	ck_assert_int_eq(r.get_errors, 0);
	ck_assert_int_eq(inode_get(t.fs, r.dir_ino, &dir), 0);
	int entries = 0;
	ck_assert_int_eq(ordfs_readdir(t.fs, dir, 0, count_entry, &entries), 0);
	ck_assert_int_eq(entries, CREATES);
	inode_put(t.fs, dir);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

#define HELD 12000 /* about three times the first table's chains */

START_TEST(test_table_grows_and_keeps_every_inode)
{
	struct test_fs t;
	tfs_setup(&t, 256ull << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode **held = calloc(HELD, sizeof(*held));
	ck_assert_ptr_nonnull(held);
	for (int i = 0; i < HELD; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(ordfs_create(t.fs, root, name, 0644, &root_cred, &held[i]), 0);
	}
	/* Looked up again by number, and by name, while all are held. */
	for (int i = 0; i < HELD; i++) {
		struct inode *again;
		ck_assert_int_eq(inode_get(t.fs, held[i]->ino, &again), 0);
		ck_assert_ptr_eq(again, held[i]);
		inode_put(t.fs, again);
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(ordfs_lookup(t.fs, root, name, &again), 0);
		ck_assert_ptr_eq(again, held[i]);
		inode_put(t.fs, again);
	}
	for (int i = 0; i < HELD; i++)
		inode_put(t.fs, held[i]);
	free(held);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *icache_suite(void)
{
	Suite *s = suite_create("icache");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_concurrent_misses_read_the_slot_once);
	tcase_add_test(tc, test_table_grows_and_keeps_every_inode);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(icache_suite());
}
