/*
 * test_hostfull.c - a sparse image on a host filesystem that fills up
 * (design/allocation.md, "When the host fills up"), through the library on the
 * simulated host (blockdev_hostsim_create: a memory image whose host has
 * room for a given number of bytes):
 *  - freed blocks the host still backs are reused before holes;
 *  - a full host is ENOSPC of the operation that wanted the space, never a
 *    failed write of the image, a failed commit or EIO;
 *  - blocks freed while the host is full are punched, so deleting files
 *    lets work go on; while it has room they are not;
 *  - the log gets its host space at mount (a mount without room for it is
 *    refused, saying where to free space), and a replay that fails for want
 *    of host space says so.
 * Each test ends with the checker on the image.
 */
#include "suite_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "blockdev/blockdev.h"
#include "check/check.h"
#include "extent/extent.h"
#include "inode/inode.h"
#include "journal/journal.h"
#include "mkfs/mkfs.h"

#define BS 4096u
#define MiB (1024u * 1024u)

static const struct ordfs_cred root_cred = { 0, 0 };

struct host_fs {
	struct blockdev *mem, *rec, *host;
	struct ordfs *fs;
	struct ordfs_options opts;
	uint64_t capacity;
};

static void print_problem(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "checker: [%d] %s\n", (int)code, msg);
}

/* The simulated host over the image bytes t->mem holds now. */
static void host_over_mem(struct host_fs *t)
{
	ck_assert_int_eq(blockdev_record_create(t->mem, false, &t->rec), 0);
	ck_assert_int_eq(blockdev_hostsim_create(t->rec, t->capacity, &t->host), 0);
}

static int hfs_try_mount(struct host_fs *t, const char **why)
{
	*why = "";
	return ordfs_mount(t->host, &t->opts, &t->fs, why);
}

static void hfs_mount(struct host_fs *t)
{
	const char *why;
	int err = hfs_try_mount(t, &why);
	ck_assert_msg(err == 0, "mount: %s (%d)", why, err);
}

/* mkfs of size bytes on a host of capacity bytes, without mounting. */
static void hfs_mkfs(struct host_fs *t, uint64_t size, uint64_t capacity)
{
	memset(t, 0, sizeof(*t));
	t->capacity = capacity;
	ck_assert_int_eq(blockdev_mem_create(size, &t->mem), 0);
	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.block_size = BS;
	struct ordfs_super sb;
	const char *why = "";
	ck_assert_msg(ordfs_mkfs_plan(&p, size, &sb, &why) == 0, "mkfs plan: %s", why);
	ck_assert_msg(ordfs_mkfs_write(t->mem, &sb, &why) == 0, "mkfs: %s", why);
	host_over_mem(t);
	ordfs_options_default(&t->opts);
	t->opts.commit_interval_ms = 0; /* commits only when a test asks */
}

static void hfs_setup(struct host_fs *t, uint64_t size, uint64_t capacity)
{
	hfs_mkfs(t, size, capacity);
	hfs_mount(t);
}

static void hfs_free_devices(struct host_fs *t)
{
	blockdev_destroy(t->host);
	blockdev_destroy(t->rec);
	blockdev_destroy(t->mem);
	t->host = t->rec = t->mem = NULL;
}

static void hfs_unmount_and_check(struct host_fs *t)
{
	if (t->fs)
		ck_assert_int_eq(ordfs_unmount(t->fs), 0);
	t->fs = NULL;
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = print_problem;
	ck_assert_int_eq(ordfs_check(t->mem, &res), 0);
	ck_assert_msg(res.problems == 0, "checker found %u problems", res.problems);
	hfs_free_devices(t);
}

/* A power cut: the image keeps the bytes written so far, on a host that
 * backs only the pages holding data (what was allocated ahead of writes,
 * with nothing written yet, is a hole again). */
static void hfs_crash(struct host_fs *t)
{
	struct blockdev *snapshot;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(t->mem), t->mem->size, &snapshot),
			 0);
	if (t->fs)
		(void)ordfs_unmount(t->fs);
	t->fs = NULL;
	hfs_free_devices(t);
	t->mem = snapshot;
	host_over_mem(t);
}

static struct blockdev_hostsim_counts host_counts(struct host_fs *t)
{
	struct blockdev_hostsim_counts c;
	blockdev_hostsim_counts(t->host, &c);
	return c;
}

static struct inode *root_of(struct host_fs *t)
{
	struct inode *root;
	ck_assert_int_eq(inode_get(t->fs, ORDFS_ROOT_INO, &root), 0);
	return root;
}

/* Writes len bytes of byte `fill` to a new file and fsyncs it: 0 or the
 * first error (of the create, a write or the fsync). */
static int write_file(struct host_fs *t, struct inode *dir, const char *name, size_t len,
		      uint8_t fill)
{
	struct inode *f;
	int err = ordfs_create(t->fs, dir, name, 0644, &root_cred, &f);
	if (err)
		return err;
	static uint8_t buf[64 * 1024];
	memset(buf, fill, sizeof(buf));
	for (size_t off = 0; off < len && !err;) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		ssize_t w = ordfs_write(t->fs, f, buf, n, off);
		if (w < 0)
			err = (int)w;
		else
			off += (size_t)w;
	}
	if (!err)
		err = ordfs_fsync(t->fs, f, false);
	inode_put(t->fs, f);
	return err;
}

static void expect_file(struct host_fs *t, struct inode *dir, const char *name, size_t len,
			uint8_t fill)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_lookup(t->fs, dir, name, &f), 0);
	ck_assert_uint_eq(f->size, len);
	static uint8_t buf[64 * 1024];
	for (size_t off = 0; off < len;) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		ck_assert_int_eq(ordfs_read(t->fs, f, buf, n, off), (ssize_t)n);
		/* Check's asserts cost a write each: one per mismatch only. */
		for (size_t i = 0; i < n; i++)
			if (buf[i] != fill)
				ck_abort_msg("%s: byte %zu is %u, not %u", name, off + i, buf[i],
					     fill);
		off += n;
	}
	inode_put(t->fs, f);
}

/* The physical block of a file's logical block 0. */
static uint64_t first_block(struct host_fs *t, struct inode *dir, const char *name)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_lookup(t->fs, dir, name, &f), 0);
	struct ordfs_extent e;
	ck_assert_int_eq(extent_lookup(t->fs, f, 0, &e), 1);
	inode_put(t->fs, f);
	return e.physical;
}

/* A file freed while the host has room stays backed (no punch without
 * -o discard), and the next file takes those blocks rather than holes:
 * the image takes no new host space for it.  Without the preference the
 * rotor moves on into the holes past the first file. */
static void expect_backed(struct host_fs *t, struct inode *dir, const char *name, uint64_t len)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_lookup(t->fs, dir, name, &f), 0);
	for (uint64_t l = 0; l < len / BS;) {
		struct ordfs_extent e;
		ck_assert_int_eq(extent_lookup(t->fs, f, l, &e), 1);
		for (uint64_t k = l - e.logical; k < e.len; k++)
			if (!blockdev_hostsim_backed(t->host, (e.physical + k) * BS))
				ck_abort_msg("%s: block %llu", name,
					     (unsigned long long)(e.physical + k));
		l = e.logical + e.len;
	}
	inode_put(t->fs, f);
}

START_TEST(test_freed_backed_blocks_are_reused_first)
{
	struct host_fs t;
	hfs_setup(&t, 64 * MiB, 256 * MiB); /* a host with plenty of room */
	struct inode *root = root_of(&t);
	ck_assert(alloc_sparse(t.fs->alloc));
	ck_assert_int_eq(write_file(&t, root, "a", 1 * MiB, 0xa1), 0);
	uint64_t a_block = first_block(&t, root, "a");
	ck_assert_int_eq(write_file(&t, root, "keep", 64 * 1024, 0x6b), 0);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "a"), 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0); /* the free commits [J5] */
	struct blockdev_hostsim_counts before = host_counts(&t);
	ck_assert_uint_eq(before.punched_bytes, 0); /* the host has room: kept */
	ck_assert(blockdev_hostsim_backed(t.host, a_block * BS));

	ck_assert_int_eq(write_file(&t, root, "b", 1 * MiB, 0xb2), 0);
	struct blockdev_hostsim_counts after = host_counts(&t);
	uint64_t b_block = first_block(&t, root, "b");
	printf("reuse: a at %llu, b at %llu; host holds %llu KiB -> %llu KiB\n",
	       (unsigned long long)a_block, (unsigned long long)b_block,
	       (unsigned long long)(before.backed_bytes >> 10),
	       (unsigned long long)(after.backed_bytes >> 10));
	/* Nothing new on the host: "b" took a's blocks (and what was left of
	 * the window the host backed around "keep": backing.h). */
	ck_assert_uint_le(after.backed_bytes, before.backed_bytes);
	expect_backed(&t, root, "b", 1 * MiB);
	expect_file(&t, root, "b", 1 * MiB, 0xb2);
	expect_file(&t, root, "keep", 64 * 1024, 0x6b);
	inode_put(t.fs, root);
	hfs_unmount_and_check(&t);
}
END_TEST

/* The preference survives a remount: which blocks are holes comes from
 * the image itself (next_data / next_hole), not from memory.  Below a's
 * freed (backed) blocks lie free holes (p's blocks, trimmed), where the
 * rotor of a fresh mount would start. */
START_TEST(test_backed_blocks_known_after_remount)
{
	struct host_fs t;
	hfs_setup(&t, 64 * MiB, 256 * MiB);
	struct inode *root = root_of(&t);
	ck_assert_int_eq(write_file(&t, root, "p", 1 * MiB, 0x70), 0);
	ck_assert_int_eq(write_file(&t, root, "a", 512 * 1024, 0xa1), 0);
	uint64_t p_block = first_block(&t, root, "p"), a_block = first_block(&t, root, "a");
	ck_assert_uint_lt(p_block, a_block);
	ck_assert_int_eq(write_file(&t, root, "keep", 64 * 1024, 0x6b), 0);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "p"), 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	uint64_t trimmed;
	ck_assert_int_eq(ordfs_trim(t.fs, &trimmed), 0); /* p's blocks: holes */
	ck_assert(!blockdev_hostsim_backed(t.host, p_block * BS));
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "a"), 0);
	inode_put(t.fs, root);
	ck_assert_int_eq(ordfs_unmount(t.fs), 0); /* a's blocks: free, backed */
	ck_assert(blockdev_hostsim_backed(t.host, a_block * BS));
	hfs_mount(&t);
	root = root_of(&t);
	struct blockdev_hostsim_counts before = host_counts(&t);
	ck_assert_int_eq(write_file(&t, root, "b", 512 * 1024, 0xb2), 0);
	struct blockdev_hostsim_counts after = host_counts(&t);
	uint64_t b_block = first_block(&t, root, "b");
	printf("reuse after remount: p at %llu (trimmed), a at %llu, b at %llu; host holds "
	       "%llu KiB -> %llu KiB\n", (unsigned long long)p_block, (unsigned long long)a_block,
	       (unsigned long long)b_block, (unsigned long long)(before.backed_bytes >> 10),
	       (unsigned long long)(after.backed_bytes >> 10));
	ck_assert_uint_eq(b_block, a_block);
	ck_assert_uint_le(after.backed_bytes, before.backed_bytes);
	expect_backed(&t, root, "b", 512 * 1024);
	expect_file(&t, root, "b", 512 * 1024, 0xb2);
	expect_file(&t, root, "keep", 64 * 1024, 0x6b);
	inode_put(t.fs, root);
	hfs_unmount_and_check(&t);
}
END_TEST

/* Fills a host of 16 MiB under a 64 MiB image with 1 MiB files until one
 * fails: it must fail with ENOSPC, and the host must never have refused a
 * write of the image (every refusal is an allocate, before anything was
 * written or committed), no commit may have failed.  Returns the files
 * written ("f0".."f<n-1>", fill byte = index). */
static unsigned fill_host(struct host_fs *t, struct inode *root, const char *prefix)
{
	unsigned n = 0;
	for (;; n++) {
		char name[32];
		snprintf(name, sizeof(name), "%s%u", prefix, n);
		int err = write_file(t, root, name, 1 * MiB, (uint8_t)n);
		if (err) {
			ck_assert_msg(err == -ENOSPC, "%s: %s, not ENOSPC", name, strerror(-err));
			/* The one that failed holds what it could not write. */
			ck_assert_int_eq(ordfs_unlink(t->fs, root, name), 0);
			break;
		}
		ck_assert_uint_lt(n, 60); /* the host (16 MiB) is full long before ordfs */
	}
	struct blockdev_hostsim_counts c = host_counts(t);
	struct journal_stats js;
	journal_get_stats(t->fs->journal, &js);
	printf("fill: %u files; host refused %llu requests, %llu of them writes; "
	       "%llu failed commits\n", n, (unsigned long long)c.enospc,
	       (unsigned long long)c.write_enospc, (unsigned long long)js.failed_commits);
	ck_assert_uint_eq(c.write_enospc, 0);
	ck_assert_uint_eq(js.failed_commits, 0);
	return n;
}

START_TEST(test_full_host_is_enospc_never_eio)
{
	struct host_fs t;
	hfs_setup(&t, 64 * MiB, 16 * MiB);
	struct inode *root = root_of(&t);
	unsigned n = fill_host(&t, root, "f");
	ck_assert_uint_ge(n, 4);
	/* Still full: every further try is ENOSPC (metadata too), nothing
	 * else. */
	ck_assert_int_eq(write_file(&t, root, "more", 1 * MiB, 1), -ENOSPC);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "more"), 0);
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		expect_file(&t, root, name, 1 * MiB, (uint8_t)i);
	}
	inode_put(t.fs, root);
	hfs_unmount_and_check(&t);
}
END_TEST

/* While the host is full, blocks freed are punched after their free
 * commits, so deleting files lets writes go on with no help from outside. */
START_TEST(test_blocks_freed_while_host_full_are_punched)
{
	struct host_fs t;
	hfs_setup(&t, 64 * MiB, 16 * MiB);
	struct inode *root = root_of(&t);
	unsigned n = fill_host(&t, root, "f");
	struct blockdev_hostsim_counts full = host_counts(&t);
	for (unsigned i = 0; i < n / 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		ck_assert_int_eq(ordfs_unlink(t.fs, root, name), 0);
	}
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	struct blockdev_hostsim_counts freed = host_counts(&t);
	printf("punch: %llu KiB punched, host holds %llu KiB -> %llu KiB\n",
	       (unsigned long long)((freed.punched_bytes - full.punched_bytes) >> 10),
	       (unsigned long long)(full.backed_bytes >> 10),
	       (unsigned long long)(freed.backed_bytes >> 10));
	ck_assert_uint_ge(freed.punched_bytes - full.punched_bytes, (uint64_t)(n / 2) * MiB);
	/* and the space is there for new files, with no host action */
	for (unsigned i = 0; i < n / 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "g%u", i);
		ck_assert_int_eq(write_file(&t, root, name, 1 * MiB, (uint8_t)(0x80 + i)), 0);
	}
	for (unsigned i = n / 2; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		expect_file(&t, root, name, 1 * MiB, (uint8_t)i);
	}
	for (unsigned i = 0; i < n / 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "g%u", i);
		expect_file(&t, root, name, 1 * MiB, (uint8_t)(0x80 + i));
	}
	inode_put(t.fs, root);
	hfs_unmount_and_check(&t);
}
END_TEST

/* The log is given its host space at mount; without room for it the mount
 * is refused (nothing written) and says where to free space. */
START_TEST(test_log_gets_host_space_at_mount)
{
	struct host_fs t;
	hfs_mkfs(&t, 64 * MiB, 256 * MiB);
	uint64_t used = host_counts(&t).backed_bytes;
	blockdev_hostsim_set_capacity(t.host, used + 64 * 1024); /* not the log's room */
	const char *why;
	int err = hfs_try_mount(&t, &why);
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_msg(strstr(why, "no space left on the filesystem holding") &&
		      strstr(why, "free space there and mount again"), "why: %s", why);
	ck_assert_uint_eq(host_counts(&t).write_enospc, 0); /* nothing was written */
	blockdev_hostsim_set_capacity(t.host, 256 * MiB);
	hfs_mount(&t);
	struct ordfs_super sb = t.fs->sb;
	for (uint64_t b = sb.journal_start; b < sb.journal_start + sb.journal_blocks; b++)
		if (!blockdev_hostsim_backed(t.host, b * BS))
			ck_abort_msg("log block %llu", (unsigned long long)b);
	hfs_unmount_and_check(&t);
}
END_TEST

/* A replay that must write home blocks the host has no room for fails
 * with ENOSPC and a reason saying so; with room it replays. */
START_TEST(test_replay_without_host_space_says_so)
{
	struct host_fs t;
	hfs_setup(&t, 64 * MiB, 256 * MiB);
	struct inode *root = root_of(&t);
	for (unsigned i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "s%u", i);
		ck_assert_int_eq(write_file(&t, root, name, 1000, (uint8_t)i), 0);
	}
	inode_put(t.fs, root);
	/* Crash: the log holds the new inode-table block and directory
	 * block, their homes hold nothing yet (holes once the host forgets
	 * what was allocated ahead: hfs_crash). */
	hfs_crash(&t);
	blockdev_hostsim_set_capacity(t.host, host_counts(&t).backed_bytes);
	const char *why;
	int err = hfs_try_mount(&t, &why);
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_msg(strstr(why, "no space left on the filesystem holding") &&
		      strstr(why, "free space there and mount again"), "why: %s", why);
	blockdev_hostsim_set_capacity(t.host, 256 * MiB);
	hfs_mount(&t);
	root = root_of(&t);
	for (unsigned i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "s%u", i);
		expect_file(&t, root, name, 1000, (uint8_t)i);
	}
	inode_put(t.fs, root);
	hfs_unmount_and_check(&t);
}
END_TEST

/* A new inode's table block is given host space with the inode: the
 * checkpoint that writes it home may come when the host is full. */
START_TEST(test_new_inode_table_block_is_backed)
{
	struct host_fs t;
	hfs_setup(&t, 64 * MiB, 256 * MiB);
	struct inode *root = root_of(&t);
	struct inode *f;
	/* far from the root's table block: another one */
	for (unsigned i = 0; i < 40; i++) {
		char name[32];
		snprintf(name, sizeof(name), "i%u", i);
		ck_assert_int_eq(ordfs_create(t.fs, root, name, 0644, &root_cred, &f), 0);
		uint64_t blk;
		uint32_t off;
		ordfs_inode_location(&t.fs->sb, f->ino, &blk, &off);
		ck_assert_msg(blockdev_hostsim_backed(t.host, blk * BS), "table block %llu of %u",
			      (unsigned long long)blk, f->ino);
		inode_put(t.fs, f);
	}
	inode_put(t.fs, root);
	hfs_unmount_and_check(&t);
}
END_TEST

static Suite *hostfull_suite(void)
{
	Suite *s = suite_create("hostfull");
	TCase *tc = tcase_create("hostfull");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_freed_backed_blocks_are_reused_first);
	tcase_add_test(tc, test_backed_blocks_known_after_remount);
	tcase_add_test(tc, test_full_host_is_enospc_never_eio);
	tcase_add_test(tc, test_blocks_freed_while_host_full_are_punched);
	tcase_add_test(tc, test_log_gets_host_space_at_mount);
	tcase_add_test(tc, test_replay_without_host_space_says_so);
	tcase_add_test(tc, test_new_inode_table_block_is_backed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(hostfull_suite());
}
