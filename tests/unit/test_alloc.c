/*
 * test_alloc.c - block and inode allocation on a real (in-memory) mkfs'd
 * filesystem: claims, marks, frees that become reusable only after their
 * transaction commits [J5], reservations, ENOSPC, inode allocation.
 */
#include "suite_main.h"
#include <stdlib.h>

#include "helpers.h"

START_TEST(test_alloc_mark_free_release)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct alloc *a = t.fs->alloc;
	struct alloc_counts before, c;
	alloc_get_counts(a, &before);

	struct handle *h = tfs_start(&t, 8);
	uint64_t start;
	uint32_t got;
	ck_assert_int_eq(alloc_blocks(a, h, 0, 10, 0, &start, &got), 0);
	ck_assert_uint_eq(got, 10);
	ck_assert(alloc_block_in_use(a, start));
	ck_assert(alloc_block_in_use(a, start + 9));
	ck_assert_uint_ge(start, t.fs->sb.data_start);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.free_blocks, before.free_blocks - 10);

	/* Freeing a block twice is refused and changes nothing. */
	ck_assert_int_eq(alloc_free_blocks(a, h, start, 10, 0), 0);
	ck_assert_int_eq(alloc_free_blocks(a, h, start, 1, 0), -EUCLEAN);
	ck_assert(!alloc_block_in_use(a, start));
	tfs_stop(h);

	/* Freed but not committed: not handed out again [J5]. */
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.pending_free, 10);
	uint64_t s2;
	uint32_t g2;
	ck_assert_int_eq(alloc_claim_blocks(a, start, 10, 0, &s2, &g2), 0);
	ck_assert(s2 >= start + 10 || s2 + g2 <= start);
	alloc_unclaim_blocks(a, s2, g2, 0);

	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.pending_free, 0);
	ck_assert_uint_eq(c.free_blocks, before.free_blocks);
	ck_assert_int_eq(alloc_claim_blocks(a, start, 10, 0, &s2, &g2), 0);
	ck_assert_uint_eq(s2, start); /* now reusable */
	alloc_unclaim_blocks(a, s2, g2, 0);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_alloc_refuses_metadata_area)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 4096, 0);
	struct handle *h = tfs_start(&t, 4);
	ck_assert_int_eq(alloc_free_blocks(t.fs->alloc, h, 1, 1, 0), -EUCLEAN);
	ck_assert_int_eq(alloc_free_blocks(t.fs->alloc, h, t.fs->sb.block_count - 1, 1, 0),
			 -EUCLEAN);
	ck_assert_int_eq(alloc_mark_blocks(t.fs->alloc, h, 0, 1), -EINVAL);
	tfs_stop(h);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_reservations_and_enospc)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 4096, 0);
	struct alloc *a = t.fs->alloc;
	struct alloc_counts c;
	alloc_get_counts(a, &c);
	uint64_t avail = c.data_blocks;
	uint64_t free_before = c.free_blocks;
	ck_assert_uint_lt(avail, c.free_blocks); /* the metadata reserve */

	/* Delayed data may take everything but the metadata reserve... */
	ck_assert_int_eq(alloc_reserve(a, avail), 0);
	ck_assert_int_eq(alloc_reserve(a, 1), -ENOSPC);
	/* ...which metadata (extent tree blocks at writeback) can still use. */
	uint64_t s;
	uint32_t g;
	uint64_t reserve = c.free_blocks - c.data_blocks;
	ck_assert_int_eq(alloc_claim_blocks(a, 0, (uint32_t)reserve, 0, &s, &g), 0);
	ck_assert_uint_eq(g, reserve);
	uint64_t s2;
	uint32_t g2;
	ck_assert_int_eq(alloc_claim_blocks(a, 0, 1, 0, &s2, &g2), -ENOSPC);
	alloc_unclaim_blocks(a, s, g, 0);
	/* Claims against the reservation still work. */
	ck_assert_int_eq(alloc_claim_blocks(a, 0, 4, ALLOC_FROM_RESERVATION, &s, &g), 0);
	ck_assert_uint_eq(g, 4);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.reserved_blocks, avail - 4);
	alloc_unclaim_blocks(a, s, g, ALLOC_FROM_RESERVATION);
	alloc_unreserve(a, avail);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.free_blocks, free_before);
	ck_assert_uint_eq(c.data_blocks, avail);
	ck_assert_uint_eq(c.reserved_blocks, 0);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_contiguous_runs_and_goal)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	struct alloc *a = t.fs->alloc;
	struct handle *h = tfs_start(&t, 16);
	uint64_t s1, s2;
	uint32_t g1, g2;
	ck_assert_int_eq(alloc_blocks(a, h, 0, 100, 0, &s1, &g1), 0);
	ck_assert_uint_eq(g1, 100);
	ck_assert_int_eq(alloc_blocks(a, h, s1 + 100, 50, 0, &s2, &g2), 0);
	ck_assert_uint_eq(s2, s1 + 100); /* goal honoured: files stay contiguous */
	ck_assert_int_eq(alloc_free_blocks(a, h, s1, 100, 0), 0);
	ck_assert_int_eq(alloc_free_blocks(a, h, s2, 50, 0), 0);
	tfs_stop(h);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_inode_alloc)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 1024, 0);
	struct alloc *a = t.fs->alloc;
	struct alloc_counts c0, c;
	alloc_get_counts(a, &c0);
	struct handle *h = tfs_start(&t, 8);
	uint32_t ino, ino2;
	ck_assert_int_eq(alloc_inode(a, h, 0, &ino), 0);
	ck_assert_uint_ge(ino, ORDFS_FIRST_INO);
	ck_assert(alloc_inode_in_use(a, ino));
	ck_assert_int_eq(alloc_inode(a, h, ino, &ino2), 0);
	ck_assert_uint_ne(ino, ino2);
	ck_assert_int_eq(alloc_free_inode(a, h, ino), 0);
	ck_assert_int_eq(alloc_free_inode(a, h, ino2), 0);
	ck_assert_int_eq(alloc_free_inode(a, h, ino2), -EUCLEAN);
	ck_assert_int_eq(alloc_free_inode(a, h, ORDFS_ROOT_INO), -EUCLEAN);
	tfs_stop(h);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.free_inodes, c0.free_inodes);

	/* Exhaust the inodes: ENOSPC, then everything comes back. */
	uint32_t n = c0.free_inodes;
	uint32_t *inos = malloc(n * sizeof(*inos));
	for (uint32_t i = 0; i < n; i++) {
		h = tfs_start(&t, 2);
		ck_assert_int_eq(alloc_inode(a, h, 0, &inos[i]), 0);
		tfs_stop(h);
	}
	h = tfs_start(&t, 2);
	ck_assert_int_eq(alloc_inode(a, h, 0, &ino), -ENOSPC);
	tfs_stop(h);
	for (uint32_t i = 0; i < n; i++) {
		h = tfs_start(&t, 2);
		ck_assert_int_eq(alloc_free_inode(a, h, inos[i]), 0);
		tfs_stop(h);
	}
	free(inos);
	tfs_unmount_and_check(&t);
}
END_TEST

/* The bitmaps are in memory a bitmap block at a time: with room for two
 * chunks of each map, a filesystem of many chunks is filled, thinned and
 * filled again through all the paths (claims, frees that wait for their
 * commit, inodes), and every count stays what the checker finds. */
START_TEST(test_map_chunks_dropped_and_loaded_again)
{
	struct test_fs t;
	/* 1 KiB blocks: 8000 blocks per bitmap block, 40 MiB = 5+ chunks */
	tfs_setup(&t, 40 << 20, 1024, 0);
	struct alloc *a = t.fs->alloc;
	alloc_set_map_limit(a, 2);
	struct alloc_counts c0, c;
	alloc_get_counts(a, &c0);

	enum { RUNS = 60 };
	uint64_t starts[RUNS];
	uint32_t lens[RUNS];
	for (int i = 0; i < RUNS; i++) {
		struct handle *h = tfs_start(&t, 16);
		/* goals spread over the whole image, so every chunk is used */
		uint64_t goal = t.fs->sb.data_start + (uint64_t)i * 7919 % (40u << 10);
		ck_assert_int_eq(alloc_blocks(a, h, goal, 300, 0, &starts[i], &lens[i]), 0);
		tfs_stop(h);
	}
	struct alloc_map_use use;
	alloc_get_map_use(a, &use);
	ck_assert_uint_le(use.block_chunks_loaded, 2);
	/* Free every other run: those blocks stay unavailable until the
	 * commit, even when their chunk was dropped and loaded again. */
	for (int i = 0; i < RUNS; i += 2) {
		struct handle *h = tfs_start(&t, 16);
		ck_assert_int_eq(alloc_free_blocks(a, h, starts[i], lens[i], 0), 0);
		tfs_stop(h);
	}
	for (int i = 1; i < RUNS; i += 2) /* load other chunks meanwhile */
		ck_assert(alloc_block_in_use(a, starts[i]));
	uint64_t s2;
	uint32_t g2;
	for (int i = 0; i < RUNS; i += 2) {
		ck_assert_int_eq(alloc_claim_blocks(a, starts[i], 1, 0, &s2, &g2), 0);
		for (int k = 0; k < RUNS; k += 2)
			ck_assert(s2 < starts[k] || s2 >= starts[k] + lens[k]); /* [J5] */
		alloc_unclaim_blocks(a, s2, g2, 0);
	}
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.pending_free, 0);
	uint64_t used = 0;
	for (int i = 1; i < RUNS; i += 2)
		used += lens[i];
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks - used);
	/* The freed runs are reusable now, wherever their chunks went. */
	struct handle *h = tfs_start(&t, 16);
	ck_assert_int_eq(alloc_blocks(a, h, starts[0], lens[0], 0, &s2, &g2), 0);
	ck_assert_uint_eq(s2, starts[0]);
	ck_assert_int_eq(alloc_free_blocks(a, h, s2, g2, 0), 0);
	tfs_stop(h);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	/* While frees waited for their commit their chunks could not go;
	 * committed, every one can. */
	alloc_set_map_limit(a, 2);
	alloc_get_map_use(a, &use);
	ck_assert_uint_le(use.block_chunks_loaded, 2);
	for (int i = 1; i < RUNS; i += 2) { /* no file owns them: give them back */
		h = tfs_start(&t, 16);
		ck_assert_int_eq(alloc_free_blocks(a, h, starts[i], lens[i], 0), 0);
		tfs_stop(h);
	}
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	tfs_unmount_and_check(&t);
}
END_TEST

/* 1 KiB blocks: 8000 blocks a group.  A 4 MiB filesystem (one bitmap
 * block in its area) grown by hand to three groups past the area, the
 * last one 500 blocks long (tfs_add_groups). */
#define GROUPS_OLD_SIZE (4u << 20)
#define GROUPS_PER 8000u
#define GROUPS_COUNT (3u * GROUPS_PER + 500u)

/* Every free block allocated, a run at a time, up to the last data block;
 * no run holds a group bitmap block; then all freed again.  With
 * map_limit, the chunks are dropped and loaded again on the way. */
static void fill_and_free_groups(size_t map_limit)
{
	struct test_fs t;
	tfs_setup_groups(&t, GROUPS_OLD_SIZE, 1024, GROUPS_COUNT);
	tfs_unmount(&t);
	ck_assert_int_eq(tfs_check_image(&t), 0); /* the checker agrees first */
	tfs_mount(&t);
	struct alloc *a = t.fs->alloc;
	const struct ordfs_super *sb = &t.fs->sb;
	ck_assert(sb->feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS);
	ck_assert_uint_eq(sb->block_count, GROUPS_COUNT);
	ck_assert_uint_eq(ordfs_block_groups(sb), 4);
	if (map_limit)
		alloc_set_map_limit(a, map_limit);
	struct alloc_counts c0, c;
	alloc_get_counts(a, &c0);
	ck_assert_uint_eq(c0.free_blocks, sb->free_blocks);
	for (uint64_t g = 1; g < 4; g++)
		ck_assert(alloc_block_in_use(a, g * GROUPS_PER));

	enum { MAX_RUNS = 64 };
	uint64_t starts[MAX_RUNS], total = 0, in_group[4] = { 0 };
	uint32_t lens[MAX_RUNS];
	int runs = 0;
	for (;;) {
		ck_assert_int_lt(runs, MAX_RUNS);
		struct handle *h = tfs_start(&t, alloc_credits(a, 4096));
		int err = alloc_blocks(a, h, 0, 4096, 0, &starts[runs], &lens[runs]);
		tfs_stop(h);
		if (err == -ENOSPC)
			break;
		ck_assert_int_eq(err, 0);
		uint64_t s0 = starts[runs], n = lens[runs];
		ck_assert_uint_ge(s0, sb->data_start);
		ck_assert_uint_le(s0 + n, sb->block_count - 1);
		ck_assert_msg(!ordfs_range_has_group_bitmap(sb, s0, n),
			      "run %llu+%llu holds a group bitmap block", (unsigned long long)s0,
			      (unsigned long long)n);
		for (uint64_t b = s0; b < s0 + n; b++)
			in_group[b / GROUPS_PER]++;
		total += n;
		runs++;
	}
	/* Everything: every group past the area to its last data block. */
	ck_assert_uint_eq(total, c0.free_blocks);
	ck_assert_uint_eq(in_group[1], GROUPS_PER - 1);
	ck_assert_uint_eq(in_group[2], GROUPS_PER - 1);
	ck_assert_uint_eq(in_group[3], 500 - 2); /* less its bitmap block and the backup */
	ck_assert(alloc_block_in_use(a, GROUPS_COUNT - 2));
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.free_blocks, 0);

	/* A group bitmap block is never a data block to free or mark. */
	struct handle *h = tfs_start(&t, 4);
	ck_assert_int_eq(alloc_free_blocks(a, h, 2 * GROUPS_PER, 1, 0), -EUCLEAN);
	ck_assert_int_eq(alloc_free_blocks(a, h, 2 * GROUPS_PER - 1, 2, 0), -EUCLEAN);
	ck_assert_int_eq(alloc_mark_blocks(a, h, 2 * GROUPS_PER, 1), -EINVAL);
	tfs_stop(h);
	ck_assert(alloc_block_in_use(a, 2 * GROUPS_PER - 1)); /* nothing changed */

	for (int i = 0; i < runs; i++) {
		h = tfs_start(&t, alloc_credits(a, lens[i]));
		ck_assert_int_eq(alloc_free_blocks(a, h, starts[i], lens[i], 0), 0);
		tfs_stop(h);
	}
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(a, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	for (uint64_t g = 1; g < 4; g++)
		ck_assert(alloc_block_in_use(a, g * GROUPS_PER));
	ck_assert(!alloc_block_in_use(a, GROUPS_COUNT - 2));
	tfs_unmount_and_check(&t);
}

START_TEST(test_groups_filled_to_the_last_block_and_freed)
{
	fill_and_free_groups(0);
}
END_TEST

START_TEST(test_groups_with_chunks_dropped_and_loaded_again)
{
	fill_and_free_groups(1);
}
END_TEST

static Suite *alloc_suite(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_alloc_mark_free_release);
	tcase_add_test(tc, test_alloc_refuses_metadata_area);
	tcase_add_test(tc, test_reservations_and_enospc);
	tcase_add_test(tc, test_contiguous_runs_and_goal);
	tcase_add_test(tc, test_inode_alloc);
	tcase_add_test(tc, test_map_chunks_dropped_and_loaded_again);
	tcase_add_test(tc, test_groups_filled_to_the_last_block_and_freed);
	tcase_add_test(tc, test_groups_with_chunks_dropped_and_loaded_again);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(alloc_suite());
}
