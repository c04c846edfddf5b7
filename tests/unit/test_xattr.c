/*
 * test_xattr.c - extended attributes (xattr/xattr.c, file/xattr.c) end to end on an in-memory
 * image: the five namespaces, Linux's errors for names, flags, sizes and
 * buffers, the one-block limit (-ENOSPC, nothing changed), a full
 * filesystem, order, persistence, crash recovery (and power cut at each
 * write of a commit), the block's allocation and free with its revoke,
 * damaged blocks (-EUCLEAN, nothing changed), the eviction helper,
 * concurrent use.
 *
 * Until the checker knows xattr blocks, a test removes every attribute
 * before tfs_unmount_and_check; the few that cannot (a damaged block that
 * stays) end with tfs_unmount + tfs_free.
 */
#include "suite_main.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "helpers.h"
#include "xattr/xattr.h"

static const struct ordfs_cred root_cred = { 0, 0 };

/* ---- helpers ------------------------------------------------------------ */

static struct inode *make_file(struct test_fs *t, struct inode *dir, const char *name)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_create(t->fs, dir, name, 0644, &root_cred, &f), 0);
	return f;
}

static struct inode *lookup(struct test_fs *t, const char *name)
{
	struct inode *root = tfs_root(t), *f;
	ck_assert_int_eq(ordfs_lookup(t->fs, root, name, &f), 0);
	inode_put(t->fs, root);
	return f;
}

static void set_str(struct test_fs *t, struct inode *f, const char *name, const char *value)
{
	ck_assert_int_eq(ordfs_setxattr(t->fs, f, name, value, strlen(value), 0), 0);
}

static void expect_str(struct test_fs *t, struct inode *f, const char *name, const char *value)
{
	char buf[512];
	ssize_t n = ordfs_getxattr(t->fs, f, name, buf, sizeof(buf));
	ck_assert_msg(n == (ssize_t)strlen(value), "%s: got %zd, want %zu", name, n,
		      strlen(value));
	ck_assert_mem_eq(buf, value, strlen(value));
}

/* The list, malloc'd (its length in *len). */
static char *list_all(struct test_fs *t, struct inode *f, size_t *len)
{
	ssize_t n = ordfs_listxattr(t->fs, f, NULL, 0);
	ck_assert_int_ge(n, 0);
	char *buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	if (n)
		ck_assert_int_eq(ordfs_listxattr(t->fs, f, buf, (size_t)n), n);
	*len = (size_t)n;
	return buf;
}

static void remove_all(struct test_fs *t, struct inode *f)
{
	size_t len;
	char *list = list_all(t, f, &len);
	for (size_t pos = 0; pos < len; pos += strlen(list + pos) + 1)
		ck_assert_int_eq(ordfs_removexattr(t->fs, f, list + pos), 0);
	free(list);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_int_eq(ordfs_listxattr(t->fs, f, NULL, 0), 0);
}

/* Header fields of the inode's block, read through the cache. */
static void block_fields(struct test_fs *t, struct inode *f, uint32_t *count, uint32_t *used)
{
	struct buf *b;
	ck_assert_uint_ne(f->d.xattr_block, 0);
	ck_assert_int_eq(bcache_read(t->fs->cache, f->d.xattr_block, &b), 0);
	*count = le_get16(b->data + 24);
	*used = le_get16(b->data + 26);
	bcache_put(t->fs->cache, b);
}

static uint64_t free_blocks(struct test_fs *t)
{
	struct alloc_counts c;
	alloc_get_counts(t->fs->alloc, &c);
	return c.free_blocks;
}

static uint8_t *image_block(struct test_fs *t, uint64_t blockno, uint32_t bs)
{
	return blockdev_mem_bytes(t->mem) + blockno * bs;
}

/* ---- the namespaces ------------------------------------------------------- */

static const char *const all_ns_names[] = {
	"user.foo", "trusted.bar", "security.selinux", "system.posix_acl_access",
	"system.posix_acl_default",
};
static const char all_ns_list[] = "user.foo\0trusted.bar\0security.selinux\0"
				  "system.posix_acl_access\0system.posix_acl_default";

/* The ACL names take valid ACLs only (acl.h; test_acl.c has the rest):
 * u::rw- u:7:r-- g::r-- m::r-- o::--- in Linux's xattr form, which reads
 * back byte for byte. */
static const uint8_t acl_value[] = {
	2, 0, 0, 0,
	0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
	0x02, 0, 4, 0, 7, 0, 0, 0,
	0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

/* Which of all_ns_names an inode of this mode can hold: no ACL on a
 * symlink, a default ACL only on a directory. */
static bool ns_applies(uint16_t mode, int i)
{
	if (i == 3)
		return !S_ISLNK(mode);
	if (i == 4)
		return S_ISDIR(mode);
	return true;
}

static void ns_value(int i, const void **value, size_t *len, char buf[32])
{
	if (i >= 3) {
		*value = acl_value;
		*len = sizeof(acl_value);
		return;
	}
	snprintf(buf, 32, "value-%d", i);
	*value = buf;
	*len = strlen(buf);
}

static void roundtrip_all_namespaces(struct test_fs *t, struct inode *f)
{
	uint64_t blocks0 = f->d.blocks;
	uint16_t mode = f->d.mode;
	f->d.ctime.sec = 1;
	/* Set in reverse so the block has to sort them. */
	for (int i = 4; i >= 0; i--) {
		char buf[32];
		const void *value;
		size_t vlen;
		ns_value(i, &value, &vlen, buf);
		int err = ordfs_setxattr(t->fs, f, all_ns_names[i], value, vlen, 0);
		int want = ns_applies(mode, i) ? 0 : S_ISLNK(mode) ? -EOPNOTSUPP : -EACCES;
		ck_assert_msg(err == want, "%s: %d, want %d", all_ns_names[i], err, want);
	}
	ck_assert_int_gt(f->d.ctime.sec, 1);
	ck_assert_uint_eq(f->d.blocks, blocks0 + 1);
	char expect_list[sizeof(all_ns_list)];
	size_t expect_len = 0;
	for (int i = 0; i < 5; i++) {
		if (!ns_applies(mode, i))
			continue;
		char buf[32], got[64];
		const void *value;
		size_t vlen;
		ns_value(i, &value, &vlen, buf);
		ck_assert_int_eq(ordfs_getxattr(t->fs, f, all_ns_names[i], got, sizeof(got)),
				 (ssize_t)vlen);
		ck_assert_mem_eq(got, value, vlen);
		memcpy(expect_list + expect_len, all_ns_names[i], strlen(all_ns_names[i]) + 1);
		expect_len += strlen(all_ns_names[i]) + 1;
	}
	size_t len;
	char *list = list_all(t, f, &len);
	ck_assert_uint_eq(len, expect_len);
	ck_assert_mem_eq(list, expect_list, len);
	free(list);

	for (int i = 0; i < 5; i++) {
		if (!ns_applies(mode, i))
			continue;
		f->d.ctime.sec = 1;
		ck_assert_int_eq(ordfs_removexattr(t->fs, f, all_ns_names[i]), 0);
		ck_assert_int_gt(f->d.ctime.sec, 1);
		ck_assert_int_eq(ordfs_getxattr(t->fs, f, all_ns_names[i], NULL, 0), -ENODATA);
		/* Removing an absent ACL succeeds, as on ext4. */
		ck_assert_int_eq(ordfs_removexattr(t->fs, f, all_ns_names[i]), i >= 3 ? 0 : -ENODATA);
	}
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(f->d.blocks, blocks0);
}

START_TEST(test_namespaces_on_every_inode_type)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f, *d, *fast, *slow, *dev;
	char longt[600];
	memset(longt, 'x', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = '\0';
	f = make_file(&t, root, "file");
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "dir", 0755, &root_cred, &d), 0);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "fast", "target", &root_cred, &fast), 0);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "slow", longt, &root_cred, &slow), 0);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "dev", S_IFCHR | 0600, 0x0103, &root_cred,
				     &dev), 0);
	struct inode *all[] = { f, d, fast, slow, dev, root };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		roundtrip_all_namespaces(&t, all[i]);
	char target[700];
	ck_assert_int_eq(ordfs_readlink(t.fs, slow, target, sizeof(target)),
			 (ssize_t)strlen(longt));
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		inode_put(t.fs, all[i]);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- names, flags, sizes, buffers ----------------------------------------- */

START_TEST(test_name_rules)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	char buf[8];

	static const struct {
		const char *name;
		int err;
	} bad[] = {
		{ "", -ERANGE },
		{ "user.", -EINVAL },
		{ "trusted.", -EINVAL },
		{ "security.", -EINVAL },
		{ "user", -EOPNOTSUPP },
		{ "User.x", -EOPNOTSUPP },
		{ "foo.bar", -EOPNOTSUPP },
		{ "system.foo", -EOPNOTSUPP },
		{ "system.", -EOPNOTSUPP },
		{ "system.posix_acl_acces", -EOPNOTSUPP },
		{ "system.posix_acl_accessx", -EOPNOTSUPP },
		{ "system.posix_acl_default.x", -EOPNOTSUPP },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(ordfs_setxattr(t.fs, f, bad[i].name, "v", 1, 0) == bad[i].err,
			      "set %s", bad[i].name);
		ck_assert_msg(ordfs_getxattr(t.fs, f, bad[i].name, buf, sizeof(buf)) ==
				      bad[i].err, "get %s", bad[i].name);
		ck_assert_msg(ordfs_removexattr(t.fs, f, bad[i].name) == bad[i].err, "remove %s",
			      bad[i].name);
	}

	/* XATTR_NAME_MAX is the whole name, prefix included. */
	char name[300];
	strcpy(name, "user.");
	memset(name + 5, 'n', 250);
	name[255] = '\0';
	set_str(&t, f, name, "max");
	expect_str(&t, f, name, "max");
	size_t len;
	char *list = list_all(&t, f, &len);
	ck_assert_uint_eq(len, 256);
	ck_assert_str_eq(list, name);
	free(list);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, name), 0);
	name[255] = 'n';
	name[256] = '\0';
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, name, "v", 1, 0), -ERANGE);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, name, buf, sizeof(buf)), -ERANGE);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, name), -ERANGE);
	strcpy(name, "security.");
	memset(name + 9, 's', 246);
	name[255] = '\0';
	set_str(&t, f, name, "max");
	expect_str(&t, f, name, "max");
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, name), 0);

	/* Names are bytes: anything but NUL, ordered unsigned. */
	set_str(&t, f, "user.\xff", "high");
	set_str(&t, f, "user.a b/c", "odd");
	list = list_all(&t, f, &len);
	ck_assert_uint_eq(len, sizeof("user.a b/c\0user.\xff"));
	ck_assert_mem_eq(list, "user.a b/c\0user.\xff", len);
	free(list);
	remove_all(&t, f);

	ck_assert_uint_eq(f->d.xattr_block, 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_create_and_replace_flags)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");

	/* Nothing there yet: REPLACE fails without allocating anything. */
	uint64_t before = free_blocks(&t);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "1", 1, XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "1", 1,
					XATTR_CREATE | XATTR_REPLACE), -ENODATA);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(free_blocks(&t), before);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "1", 1, 4), -EINVAL);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "1", 1, -1), -EINVAL);

	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "one", 3, XATTR_CREATE), 0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "two", 3, XATTR_CREATE), -EEXIST);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "two", 3,
					XATTR_CREATE | XATTR_REPLACE), -EEXIST);
	expect_str(&t, f, "user.a", "one");
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.b", "x", 1, XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.b", NULL, 0), -ENODATA);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "three", 5, XATTR_REPLACE), 0);
	expect_str(&t, f, "user.a", "three");
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "4", 1, 0), 0); /* 0: either */
	expect_str(&t, f, "user.a", "4");
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.b", "5", 1, 0), 0);
	expect_str(&t, f, "user.b", "5");
	uint32_t count, used;
	block_fields(&t, f, &count, &used);
	ck_assert_uint_eq(count, 2);
	ck_assert_uint_eq(used, 16);

	remove_all(&t, f);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_sizes_and_buffers)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	char buf[64];

	/* Nothing yet. */
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), 0);
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, buf, sizeof(buf)), 0);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.v", buf, sizeof(buf)), -ENODATA);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.v"), -ENODATA);

	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.v", "0123456789", 10, 0), 0);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.v", NULL, 0), 10);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.v", buf, 9), -ERANGE);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.v", buf, 10), 10);
	ck_assert_mem_eq(buf, "0123456789", 10);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.v", buf, sizeof(buf)), 10);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.w", buf, sizeof(buf)), -ENODATA);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.w"), -ENODATA);

	/* An empty value is a value. */
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.empty", NULL, 0, 0), 0);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.empty", NULL, 0), 0);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.empty", buf, sizeof(buf)), 0);

	const char want[] = "user.empty\0user.v";
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), (ssize_t)sizeof(want));
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, buf, sizeof(want) - 1), -ERANGE);
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, buf, 1), -ERANGE);
	memset(buf, 0x55, sizeof(buf));
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, buf, sizeof(want)), (ssize_t)sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_uint_eq((uint8_t)buf[sizeof(want)], 0x55); /* nothing written past it */

	/* XATTR_SIZE_MAX: E2BIG beyond it; 65536 itself cannot fit a block. */
	uint8_t *big = calloc(1, 65537);
	ck_assert_ptr_nonnull(big);
	uint32_t count0, used0;
	block_fields(&t, f, &count0, &used0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.big", big, 65537, 0), -E2BIG);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.big", big, 65536, 0), -ENOSPC);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.v", big, 65536, XATTR_REPLACE),
			 -ENOSPC);
	free(big);
	uint32_t count1, used1;
	block_fields(&t, f, &count1, &used1);
	ck_assert_uint_eq(count1, count0);
	ck_assert_uint_eq(used1, used0);
	expect_str(&t, f, "user.v", "0123456789");

	remove_all(&t, f);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- one block: ENOSPC, nothing changed ----------------------------------- */

static const uint32_t full_block_sizes[] = { 4096, 1024, 65536 };

#define FILL_VALUE 100u
#define FILL_ENTRY 108u /* 4 + "n000" + 100 bytes */

START_TEST(test_block_full_enospc)
{
	uint32_t bs = full_block_sizes[_i];
	uint32_t cap = bs - 32;
	struct test_fs t;
	tfs_setup(&t, bs == 65536 ? 64 << 20 : 16 << 20, bs, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	uint8_t *value = calloc(1, bs);
	ck_assert_ptr_nonnull(value);

	/* The largest single value: entry 4 + 1 + v bytes fills the area. */
	uint64_t blocks0 = f->d.blocks, free0 = free_blocks(&t);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", value, cap - 4, 0), -ENOSPC);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(f->d.blocks, blocks0);
	ck_assert_uint_eq(free_blocks(&t), free0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", value, cap - 5, 0), 0);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.a", NULL, 0), (ssize_t)(cap - 5));
	uint32_t count, used;
	block_fields(&t, f, &count, &used);
	ck_assert_uint_eq(used, cap);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.b", NULL, 0, 0), -ENOSPC);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.a"), 0);

	/* Fill with equal entries until the block is full. */
	uint32_t n = 0;
	char name[32];
	for (;; n++) {
		snprintf(name, sizeof(name), "user.%04u", n);
		memset(value, (int)n, FILL_VALUE);
		int err = ordfs_setxattr(t.fs, f, name, value, FILL_VALUE, 0);
		if (err) {
			ck_assert_int_eq(err, -ENOSPC);
			break;
		}
	}
	ck_assert_uint_eq(n, cap / FILL_ENTRY);
	uint32_t rem = cap - n * FILL_ENTRY;

	/* Nothing changed by the failure. */
	size_t len0;
	char *list0 = list_all(&t, f, &len0);
	block_fields(&t, f, &count, &used);
	ck_assert_uint_eq(count, n);
	ck_assert_uint_eq(used, n * FILL_ENTRY);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, name, NULL, 0), -ENODATA);
	uint64_t blocks1 = f->d.blocks;
	struct ordfs_timespec ctime1 = f->d.ctime;

	/* Growing an existing value past the room left fails and keeps the
	 * old value; growing it to exactly the room left works. */
	memset(value, 0x77, bs);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.0000", value, FILL_VALUE + rem + 4,
					XATTR_REPLACE), -ENOSPC);
	size_t len1;
	char *list1 = list_all(&t, f, &len1);
	ck_assert_uint_eq(len1, len0);
	ck_assert_mem_eq(list1, list0, len0);
	free(list1);
	ck_assert_uint_eq(f->d.blocks, blocks1);
	ck_assert_int_eq(f->d.ctime.sec, ctime1.sec);
	ck_assert_uint_eq(f->d.ctime.nsec, ctime1.nsec);
	uint8_t *got = malloc(bs);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.0000", got, bs), (ssize_t)FILL_VALUE);
	for (uint32_t i = 0; i < FILL_VALUE; i++)
		ck_assert_uint_eq(got[i], 0);

	if (rem) {
		ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.0000", value, FILL_VALUE + rem,
						XATTR_REPLACE), 0);
		block_fields(&t, f, &count, &used);
		ck_assert_uint_eq(used, cap);
		ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.zz", NULL, 0, 0), -ENOSPC);
	}
	/* Shrinking makes room again. */
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.0000", "s", 1, XATTR_REPLACE), 0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.zz", NULL, 0, 0), 0);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.0000", got, bs), 1);
	ck_assert_uint_eq(got[0], 's');

	free(got);
	free(list0);
	free(value);
	remove_all(&t, f);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* No room left for data: the first attribute of an inode cannot get its
 * block (-ENOSPC, nothing changed); an inode that has one still takes
 * more.  Neither delayed-allocation reservations nor the metadata reserve
 * writeback needs are taken from. */
START_TEST(test_filesystem_full)
{
	struct test_fs t;
	tfs_setup(&t, 4 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *has = make_file(&t, root, "has"), *none = make_file(&t, root, "none");
	struct inode *fill = make_file(&t, root, "fill");
	set_str(&t, has, "user.a", "1");
	static uint8_t buf[65536];
	memset(buf, 0xab, sizeof(buf));
	uint64_t off = 0;
	for (size_t chunk = sizeof(buf); chunk >= 4096; chunk /= 16) {
		ssize_t n;
		while ((n = ordfs_write(t.fs, fill, buf, chunk, off)) > 0)
			off += (uint64_t)n;
		ck_assert_int_eq(n, -ENOSPC);
	}
	/* write() stops at the metadata reserve; a new xattr block may not
	 * take from it either. */
	struct alloc_counts c;
	alloc_get_counts(t.fs->alloc, &c);
	ck_assert_uint_eq(c.data_blocks, 0);
	ck_assert_uint_gt(c.free_blocks, 0);

	ck_assert_int_eq(ordfs_setxattr(t.fs, none, "user.b", "2", 1, 0), -ENOSPC);
	ck_assert_uint_eq(free_blocks(&t), c.free_blocks);
	ck_assert_uint_eq(none->d.xattr_block, 0);
	ck_assert_uint_eq(none->d.blocks, 0);
	set_str(&t, has, "user.b", "2");
	expect_str(&t, has, "user.b", "2");
	/* Everything accepted before can still be written back. */
	ck_assert_int_eq(ordfs_fsync(t.fs, fill, false), 0);
	ck_assert_uint_eq(fill->size, off);

	inode_put(t.fs, fill);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "fill"), 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	set_str(&t, none, "user.b", "2");
	remove_all(&t, none);
	remove_all(&t, has);
	inode_put(t.fs, has);
	inode_put(t.fs, none);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- order and persistence -------------------------------------------------- */

#define MANY 90

static int ns_rank(const char *name)
{
	if (!strncmp(name, "user.", 5))
		return 1;
	if (!strncmp(name, "trusted.", 8))
		return 2;
	if (!strncmp(name, "security.", 9))
		return 3;
	return strcmp(name, "system.posix_acl_access") == 0 ? 4 : 5;
}

static int name_suffix_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	int ra = ns_rank(a), rb = ns_rank(b);
	if (ra != rb)
		return ra - rb;
	return strcmp(strchr(a, '.') + 1, strchr(b, '.') + 1);
}

static void many_value(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%zu:%.*s", strlen(name), (int)(strlen(name) % 11), "0123456789");
}

static void expect_many(struct test_fs *t, struct inode *f, char **names, int n)
{
	char **sorted = malloc(sizeof(char *) * (size_t)n);
	memcpy(sorted, names, sizeof(char *) * (size_t)n);
	qsort(sorted, (size_t)n, sizeof(char *), name_suffix_cmp);
	size_t len;
	char *list = list_all(t, f, &len);
	size_t pos = 0;
	for (int i = 0; i < n; i++) {
		ck_assert_uint_lt(pos, len);
		ck_assert_str_eq(list + pos, sorted[i]);
		pos += strlen(sorted[i]) + 1;
		char value[128];
		many_value(value, sizeof(value), sorted[i]);
		expect_str(t, f, sorted[i], value);
	}
	ck_assert_uint_eq(pos, len);
	free(list);
	free(sorted);
}

START_TEST(test_many_sorted_and_persistent)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	static const char *const prefixes[] = { "user.", "trusted.", "security." };
	char *names[MANY + 2];
	int n = 0;

	/* Names of several lengths, some prefixes of others, in a scrambled
	 * order across three namespaces. */
	for (int k = 0; k < MANY; k++) {
		int i = (k * 37) % MANY;
		char buf[64];
		snprintf(buf, sizeof(buf), "%s%.*s%d", prefixes[i % 3], i % 4, "abcd", i / 3);
		names[n++] = strdup(buf);
	}
	/* (The ACL names take only valid ACLs: test_acl.c.) */
	for (int i = 0; i < n; i++) {
		char value[128];
		many_value(value, sizeof(value), names[i]);
		set_str(&t, f, names[i], value);
	}
	uint32_t count, used;
	block_fields(&t, f, &count, &used);
	ck_assert_uint_eq(count, (uint32_t)n);
	expect_many(&t, f, names, n);

	uint64_t blk = f->d.xattr_block, blocks = f->d.blocks;
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = lookup(&t, "f");
	ck_assert_uint_eq(f->d.xattr_block, blk);
	ck_assert_uint_eq(f->d.blocks, blocks);
	ck_assert_int_eq(xattr_verify(t.fs, f), 0);
	expect_many(&t, f, names, n);

	/* Remove every other one, then the rest. */
	for (int i = 0; i < n; i += 2)
		ck_assert_int_eq(ordfs_removexattr(t.fs, f, names[i]), 0);
	char *odd[MANY + 2];
	int m = 0;
	for (int i = 1; i < n; i += 2)
		odd[m++] = names[i];
	expect_many(&t, f, odd, m);
	remove_all(&t, f);
	for (int i = 0; i < n; i++)
		free(names[i]);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- the block's life ------------------------------------------------------- */

START_TEST(test_last_remove_frees_block)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	uint64_t free0 = free_blocks(&t), blocks0 = f->d.blocks;
	struct ordfs_statfs st0, st;
	ordfs_statfs(t.fs, &st0);

	set_str(&t, f, "user.a", "1");
	uint64_t blk = f->d.xattr_block;
	ck_assert_uint_ge(blk, t.fs->sb.data_start);
	ck_assert_uint_eq(f->d.blocks, blocks0 + 1);
	ck_assert(alloc_block_in_use(t.fs->alloc, blk));
	ck_assert_uint_eq(free_blocks(&t), free0 - 1);
	struct stat sbuf;
	ordfs_getattr(t.fs, f, &sbuf);
	ck_assert_int_eq(sbuf.st_blocks, (blkcnt_t)(blocks0 + 1) * 8);

	set_str(&t, f, "trusted.b", "2");
	ck_assert_uint_eq(f->d.xattr_block, blk);
	ck_assert_uint_eq(f->d.blocks, blocks0 + 1);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.a"), 0);
	ck_assert_uint_eq(f->d.xattr_block, blk);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "trusted.b"), 0);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(f->d.blocks, blocks0);
	ck_assert(!alloc_block_in_use(t.fs->alloc, blk));

	/* Reusable once the free commits [J5]. */
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	ck_assert_uint_eq(free_blocks(&t), free0);
	ordfs_statfs(t.fs, &st);
	ck_assert_uint_eq(st.blocks_free, st0.blocks_free);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.a", NULL, 0), -ENODATA);
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_crash_keeps_committed)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	set_str(&t, f, "user.a", "alpha");
	set_str(&t, f, "user.b", "beta");
	set_str(&t, root, "trusted.r", "root");
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	/* Not committed: lost in the crash. */
	set_str(&t, f, "user.c", "gamma");
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.b"), 0);
	ck_assert_int_eq(ordfs_removexattr(t.fs, root, "trusted.r"), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);

	tfs_mount(&t);
	ck_assert(t.fs->recovery.needed);
	root = tfs_root(&t);
	f = lookup(&t, "f");
	expect_str(&t, f, "user.a", "alpha");
	expect_str(&t, f, "user.b", "beta");
	expect_str(&t, root, "trusted.r", "root");
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.c", NULL, 0), -ENODATA);
	ck_assert_int_eq(xattr_verify(t.fs, f), 0);

	/* Committed removals survive a crash too, and the free is replayed. */
	uint64_t blk = f->d.xattr_block;
	remove_all(&t, f);
	remove_all(&t, root);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	f = lookup(&t, "f");
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(root->d.xattr_block, 0);
	ck_assert(!alloc_block_in_use(t.fs->alloc, blk));
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Freeing a block whose copy is still in the log records a revoke, so
 * replay never writes the old attributes over the block's next owner [J6]. */
START_TEST(test_free_revokes_logged_copy)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	set_str(&t, f, "user.old", "old");
	uint64_t blk = f->d.xattr_block;
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0); /* the copy is logged */
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.old"), 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0); /* the free and its revoke */
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);

	tfs_mount(&t);
	ck_assert(t.fs->recovery.needed);
	ck_assert_uint_ge(t.fs->recovery.revoke_records, 1);
	ck_assert_uint_ge(t.fs->recovery.blocks_revoked, 1);
	f = lookup(&t, "f");
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert(!alloc_block_in_use(t.fs->alloc, blk));
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), 0);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Power lost at the nth write of the commit that adds (even _i) or removes
 * (odd _i) an inode's attributes: after recovery the inode has the old set
 * or the new one, never a mix, and a block exactly when it has attributes. */
START_TEST(test_commit_cut_at_nth_write)
{
	bool removing = _i % 2;
	uint64_t nth = (uint64_t)_i / 2 + 1;
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	if (removing) {
		set_str(&t, f, "user.a", "1");
		set_str(&t, f, "security.b", "2");
	}
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	uint64_t blocks0 = f->d.blocks - (removing ? 1 : 0);

	blockdev_record_fail_write(t.rec, nth, -EIO);
	if (removing) {
		ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.a"), 0);
		ck_assert_int_eq(ordfs_removexattr(t.fs, f, "security.b"), 0);
	} else {
		set_str(&t, f, "user.a", "1");
		set_str(&t, f, "security.b", "2");
	}
	int err = journal_force_commit(t.fs->journal);
	ck_assert(err == 0 || err == -EIO || err == -EROFS);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);

	tfs_mount(&t);
	f = lookup(&t, "f");
	ck_assert_int_eq(xattr_verify(t.fs, f), 0);
	ssize_t n = ordfs_listxattr(t.fs, f, NULL, 0);
	if (n == 0) {
		ck_assert_uint_eq(f->d.xattr_block, 0);
		ck_assert_uint_eq(f->d.blocks, blocks0);
	} else {
		ck_assert_int_eq(n, (ssize_t)sizeof("user.a\0security.b"));
		expect_str(&t, f, "user.a", "1");
		expect_str(&t, f, "security.b", "2");
		ck_assert_uint_eq(f->d.blocks, blocks0 + 1);
		ck_assert(alloc_block_in_use(t.fs->alloc, f->d.xattr_block));
		remove_all(&t, f);
	}
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- read-only mounts ---------------------------------------------------------- */

START_TEST(test_readonly_mount)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	set_str(&t, f, "user.a", "kept");
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);

	t.opts.readonly = true;
	tfs_mount(&t);
	f = lookup(&t, "f");
	expect_str(&t, f, "user.a", "kept");
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), 7);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.b", "x", 1, 0), -EROFS);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, "user.a"), -EROFS);
	ck_assert_int_eq(xattr_verify(t.fs, f), 0);
	inode_put(t.fs, f);
	tfs_unmount(&t);

	t.opts.readonly = false;
	tfs_mount(&t);
	f = lookup(&t, "f");
	remove_all(&t, f);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- damaged blocks ---------------------------------------------------------- */

/* Every call that reads the block refuses it and changes nothing. */
static void expect_all_euclean(struct test_fs *t, struct inode *f)
{
	char buf[64];
	ck_assert_int_eq(ordfs_getxattr(t->fs, f, "user.a", buf, sizeof(buf)), -EUCLEAN);
	ck_assert_int_eq(ordfs_getxattr(t->fs, f, "user.zzz", NULL, 0), -EUCLEAN);
	ck_assert_int_eq(ordfs_listxattr(t->fs, f, buf, sizeof(buf)), -EUCLEAN);
	ck_assert_int_eq(ordfs_listxattr(t->fs, f, NULL, 0), -EUCLEAN);
	ck_assert_int_eq(ordfs_setxattr(t->fs, f, "user.c", "3", 1, 0), -EUCLEAN);
	ck_assert_int_eq(ordfs_setxattr(t->fs, f, "user.a", "3", 1, XATTR_REPLACE), -EUCLEAN);
	ck_assert_int_eq(ordfs_removexattr(t->fs, f, "user.a"), -EUCLEAN);
	ck_assert_int_eq(xattr_verify(t->fs, f), -EUCLEAN);
}

struct damaged {
	struct test_fs t;
	uint32_t bs, ino, seed;
	uint64_t blk, blocks;
	uint8_t *saved; /* the damaged block as written into the image */
};

/* A file "f" with user.a = "1" and user.b = "2" (entries at area offsets 0
 * and 8), unmounted: the block is in the image. */
static void damaged_setup(struct damaged *x)
{
	x->bs = 4096;
	tfs_setup(&x->t, 16 << 20, x->bs, 0);
	struct inode *root = tfs_root(&x->t), *f = make_file(&x->t, root, "f");
	set_str(&x->t, f, "user.a", "1");
	set_str(&x->t, f, "user.b", "2");
	x->ino = f->ino;
	x->blk = f->d.xattr_block;
	x->blocks = f->d.blocks;
	x->seed = x->t.fs->csum_seed;
	inode_put(x->t.fs, f);
	inode_put(x->t.fs, root);
	tfs_unmount(&x->t);
	const uint8_t *blk = image_block(&x->t, x->blk, x->bs);
	ck_assert_uint_eq(le_get16(blk + 24), 2);
	ck_assert_uint_eq(le_get16(blk + 26), 16);
	ck_assert_mem_eq(blk + 32, "\x01\x01\x01\x00" "a1\0\0" "\x01\x01\x01\x00" "b2\0\0", 16);
}

/* Remounts with the block as damaged and checks the refusals, and that
 * they changed nothing. */
static struct inode *damaged_mount(struct damaged *x)
{
	x->saved = malloc(x->bs);
	memcpy(x->saved, image_block(&x->t, x->blk, x->bs), x->bs);
	tfs_mount(&x->t);
	struct inode *f = lookup(&x->t, "f");
	struct journal_stats before, after;
	ck_assert_int_eq(journal_force_commit(x->t.fs->journal), 0);
	journal_get_stats(x->t.fs->journal, &before);
	expect_all_euclean(&x->t, f);
	ck_assert_uint_eq(f->d.xattr_block, x->blk);
	ck_assert_uint_eq(f->d.blocks, x->blocks);
	/* Nothing joined a transaction. */
	ck_assert_int_eq(journal_force_commit(x->t.fs->journal), 0);
	journal_get_stats(x->t.fs->journal, &after);
	ck_assert_uint_eq(after.commits, before.commits);
	ck_assert_uint_eq(after.blocks_logged, before.blocks_logged);
	return f;
}

/* Eviction's helper frees a block whose header is ours (contents damaged
 * or not) and refuses one whose header is not. */
static int free_with_helper(struct test_fs *t, struct inode *f)
{
	ordfs_rwlock_wrlock(&f->lock); /* the lock order: inode lock, then handle */
	struct handle *h = tfs_start(t, xattr_credits(t->fs));
	int err = xattr_free_block_locked(t->fs, h, f);
	tfs_stop(h);
	ordfs_rwlock_unlock(&f->lock);
	return err;
}

static void damaged_finish(struct damaged *x, struct inode *f, bool header_ok)
{
	if (header_ok) {
		ck_assert_int_eq(free_with_helper(&x->t, f), 0);
		ck_assert_uint_eq(f->d.xattr_block, 0);
		ck_assert_uint_eq(f->d.blocks, x->blocks - 1);
		inode_put(x->t.fs, f);
		free(x->saved);
		tfs_unmount_and_check(&x->t);
		return;
	}
	ck_assert_int_eq(free_with_helper(&x->t, f), -EUCLEAN);
	ck_assert_uint_eq(f->d.xattr_block, x->blk);
	inode_put(x->t.fs, f);
	tfs_unmount(&x->t);
	ck_assert_mem_eq(image_block(&x->t, x->blk, x->bs), x->saved, x->bs);
	free(x->saved);
	tfs_free(&x->t); /* the damaged block stays: the checker would (rightly) object */
}

/* A flipped bit anywhere: the checksum catches it. */
static const uint32_t flip_offsets[] = { 0, 4, 9, 12, 17, 24, 26, 28, 32, 33, 36, 41, 47, 4095 };

START_TEST(test_flipped_byte)
{
	struct damaged x;
	damaged_setup(&x);
	uint32_t off = flip_offsets[_i];
	image_block(&x.t, x.blk, x.bs)[off] ^= 0x10;
	struct inode *f = damaged_mount(&x);
	/* The header bytes the eviction helper looks at: magic, type, owner,
	 * block number. */
	bool header_ok = !(off < 6 || (off >= 12 && off < 24));
	damaged_finish(&x, f, header_ok);
}
END_TEST

/* Structural damage under a valid checksum: the entry checks catch it. */
enum mutation {
	MUT_COUNT_HIGH, MUT_COUNT_LOW, MUT_COUNT_ZERO, MUT_USED_ODD, MUT_USED_SHORT,
	MUT_USED_HUGE, MUT_USED_PAST_AREA, MUT_NS_UNKNOWN, MUT_NS_ZERO, MUT_NAMELEN_ZERO,
	MUT_ACL_WITH_NAME, MUT_DUPLICATE, MUT_UNSORTED, MUT_NS_UNSORTED, MUT_VALUE_PAST_END,
	MUT_NAME_NUL, MUT_RESERVED, MUT_OWNER, MUT_BLOCKNO, MUT_TYPE, MUT_NUMBER
};

static bool mutate(uint8_t *blk, uint32_t bs, enum mutation m)
{
	uint8_t *e0 = blk + 32, *e1 = blk + 40;
	switch (m) {
	case MUT_COUNT_HIGH: le_put16(blk + 24, 3); break;
	case MUT_COUNT_LOW: le_put16(blk + 24, 1); break;
	case MUT_COUNT_ZERO: le_put16(blk + 24, 0); le_put16(blk + 26, 0); break;
	case MUT_USED_ODD: le_put16(blk + 26, 18); break;
	case MUT_USED_SHORT: le_put16(blk + 26, 12); break;
	case MUT_USED_HUGE: le_put16(blk + 26, 0xfffc); break;
	case MUT_USED_PAST_AREA: le_put16(blk + 26, (uint16_t)(bs - 28)); break;
	case MUT_NS_UNKNOWN: e0[0] = 9; break;
	case MUT_NS_ZERO: e1[0] = 0; break;
	case MUT_NAMELEN_ZERO: e1[1] = 0; break;
	case MUT_ACL_WITH_NAME: e0[0] = ORDFS_XATTR_NS_POSIX_ACL_ACCESS; break;
	case MUT_DUPLICATE: e1[4] = 'a'; break;
	case MUT_UNSORTED: e0[4] = 'c'; break;
	case MUT_NS_UNSORTED: e0[0] = ORDFS_XATTR_NS_TRUSTED; break;
	case MUT_VALUE_PAST_END: le_put16(e1 + 2, 200); break;
	case MUT_NAME_NUL: e0[4] = '\0'; break;
	case MUT_RESERVED: le_put32(blk + 28, 1); break;
	case MUT_OWNER: le_put32(blk + 12, le_get32(blk + 12) + 1); return false;
	case MUT_BLOCKNO: le_put64(blk + 16, le_get64(blk + 16) + 1); return false;
	case MUT_TYPE: le_put16(blk + 4, ORDFS_BT_DIR_LEAF); return false;
	case MUT_NUMBER: break;
	}
	return true; /* the header is still ours */
}

START_TEST(test_structural_damage)
{
	struct damaged x;
	damaged_setup(&x);
	uint8_t *blk = image_block(&x.t, x.blk, x.bs);
	bool header_ok = mutate(blk, x.bs, (enum mutation)_i);
	ordfs_block_csum_set(blk, x.bs, x.seed);
	ck_assert_int_eq(ordfs_block_verify(blk, x.bs, x.seed, ORDFS_BT_XATTR, x.blk),
			 (_i == MUT_BLOCKNO || _i == MUT_TYPE) ? -EUCLEAN : 0);
	struct inode *f = damaged_mount(&x);
	damaged_finish(&x, f, header_ok);
}
END_TEST

/* An inode pointing outside the data area, or at a block it does not own,
 * or a block charged to no one (blocks == 0). */
START_TEST(test_bad_pointer)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *a = make_file(&t, root, "a"), *b = make_file(&t, root, "b");
	set_str(&t, a, "user.a", "1");
	uint64_t blk = a->d.xattr_block;

	/* In memory only, restored before anything is written. */
	b->d.xattr_block = blk; /* a's block */
	b->d.blocks = 1;
	expect_all_euclean(&t, b);
	ck_assert_int_eq(free_with_helper(&t, b), -EUCLEAN);
	b->d.xattr_block = 1; /* the journal */
	expect_all_euclean(&t, b);
	ck_assert_int_eq(free_with_helper(&t, b), -EUCLEAN);
	b->d.xattr_block = t.fs->sb.block_count - 1; /* the backup superblock */
	expect_all_euclean(&t, b);
	b->d.xattr_block = 0;
	b->d.blocks = 0;
	ck_assert_int_eq(free_with_helper(&t, b), 0); /* nothing to free */
	uint64_t blocks = a->d.blocks;
	a->d.blocks = 0;
	expect_all_euclean(&t, a);
	a->d.blocks = blocks;
	expect_str(&t, a, "user.a", "1");

	remove_all(&t, a);
	inode_put(t.fs, a);
	inode_put(t.fs, b);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- eviction's helper ------------------------------------------------------- */

START_TEST(test_free_block_helper)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 1024, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	uint64_t free0 = free_blocks(&t), blocks0 = f->d.blocks;
	set_str(&t, f, "user.a", "1");
	set_str(&t, f, "security.b", "2");
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	uint64_t blk = f->d.xattr_block;

	ck_assert_int_eq(free_with_helper(&t, f), 0);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(f->d.blocks, blocks0);
	ck_assert(!alloc_block_in_use(t.fs->alloc, blk));
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.a", NULL, 0), -ENODATA);
	ck_assert_int_eq(free_with_helper(&t, f), 0); /* again: nothing to do */
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	ck_assert_uint_eq(free_blocks(&t), free0);

	/* And the inode is usable again. */
	set_str(&t, f, "user.c", "3");
	expect_str(&t, f, "user.c", "3");
	remove_all(&t, f);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- concurrent use ------------------------------------------------------------ */

#define WORKERS 4
#define ROUNDS 150

struct worker {
	struct test_fs *t;
	struct inode *f;
	int id;
	int failures;
	const char *what;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[32], value[32], got[32];
	for (int k = 0; k < ROUNDS && !w->failures; k++) {
		snprintf(name, sizeof(name), "user.w%d.%d", w->id, k % 7);
		int len = snprintf(value, sizeof(value), "%d/%d", w->id, k);
		if (ordfs_setxattr(w->t->fs, w->f, name, value, (size_t)len, 0)) {
			w->failures++;
			w->what = "set";
		} else if (ordfs_getxattr(w->t->fs, w->f, name, got, sizeof(got)) != len ||
			   memcmp(got, value, (size_t)len)) {
			w->failures++;
			w->what = "get";
		} else if (k % 3 == 0 && ordfs_removexattr(w->t->fs, w->f, name)) {
			w->failures++;
			w->what = "remove";
		}
	}
	for (int k = 0; k < 7; k++) {
		snprintf(name, sizeof(name), "user.w%d.%d", w->id, k);
		int err = ordfs_removexattr(w->t->fs, w->f, name);
		if (err && err != -ENODATA) {
			w->failures++;
			w->what = "final remove";
		}
	}
	return NULL;
}

struct lister {
	struct test_fs *t;
	struct inode *f;
	int stop; /* atomic */
	int failures;
};

static void *lister_main(void *arg)
{
	struct lister *l = arg;
	char buf[4096];
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		ssize_t n = ordfs_listxattr(l->t->fs, l->f, buf, sizeof(buf));
		if (n < 0) {
			l->failures++;
			break;
		}
		for (ssize_t pos = 0; pos < n; pos += (ssize_t)strlen(buf + pos) + 1)
			if (strncmp(buf + pos, "user.w", 6) != 0)
				l->failures++;
	}
	return NULL;
}

START_TEST(test_concurrent_set_get_remove)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	struct worker w[WORKERS];
	pthread_t th[WORKERS], lt;
	struct lister l = { &t, f, 0, 0 };
	ck_assert_int_eq(pthread_create(&lt, NULL, lister_main, &l), 0);
	for (int i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){ &t, f, i, 0, NULL };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(w[i].failures == 0, "worker %d: %s failed", i, w[i].what);
	}
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	pthread_join(lt, NULL);
	ck_assert_int_eq(l.failures, 0);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_int_eq(ordfs_listxattr(t.fs, f, NULL, 0), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* An unlinked inode's xattr block is freed with it: at its last reference,
 * and by the orphan cleanup after a crash.  The checker claims xattr
 * blocks, so a leak or a double use fails it. */
START_TEST(test_xattr_block_freed_with_inode)
{
	static const struct ordfs_cred owner = { 0, 0 };
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f, *g;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0644, &owner, &f), 0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "1", 1, 0), 0);
	ck_assert_int_eq(ordfs_create(t.fs, root, "g", 0644, &owner, &g), 0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, g, "user.b", "22", 2, 0), 0);
	ck_assert_uint_eq(f->d.blocks, 1);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "f"), 0);
	inode_put(t.fs, f); /* last reference: inode and xattr block freed */
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "g"), 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	inode_put(t.fs, root);
	tfs_crash(&t); /* g is still referenced: an orphan with an xattr block */
	tfs_mount(&t);
	ck_assert_uint_eq(t.fs->sb.orphan_head, 0);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *xattr_suite(void)
{
	Suite *s = suite_create("xattr");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_namespaces_on_every_inode_type);
	tcase_add_test(tc, test_name_rules);
	tcase_add_test(tc, test_create_and_replace_flags);
	tcase_add_test(tc, test_sizes_and_buffers);
	tcase_add_loop_test(tc, test_block_full_enospc, 0,
			    (int)(sizeof(full_block_sizes) / sizeof(full_block_sizes[0])));
	tcase_add_test(tc, test_filesystem_full);
	tcase_add_test(tc, test_many_sorted_and_persistent);
	tcase_add_test(tc, test_last_remove_frees_block);
	tcase_add_test(tc, test_crash_keeps_committed);
	tcase_add_test(tc, test_free_revokes_logged_copy);
	tcase_add_loop_test(tc, test_commit_cut_at_nth_write, 0, 8);
	tcase_add_test(tc, test_readonly_mount);
	tcase_add_loop_test(tc, test_flipped_byte, 0,
			    (int)(sizeof(flip_offsets) / sizeof(flip_offsets[0])));
	tcase_add_loop_test(tc, test_structural_damage, 0, MUT_NUMBER);
	tcase_add_test(tc, test_bad_pointer);
	tcase_add_test(tc, test_free_block_helper);
	tcase_add_test(tc, test_concurrent_set_get_remove);
	tcase_add_test(tc, test_xattr_block_freed_with_inode);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(xattr_suite());
}
