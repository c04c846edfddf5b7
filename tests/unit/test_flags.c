/*
 * test_flags.c - file flags (chattr): the rules of inode/iflags.h as pure
 * functions (the type mask, inheritance, what each flag refuses, who may
 * change them and in which order, the FS_XFLAG_* mapping), the on-disk
 * word, and the rules through ops.h on a mounted filesystem: immutable
 * and append-only files and directories, the caller's rights, flags ordfs
 * does not keep, inheritance, persistence across a remount, S and D
 * durable before they return (a crash right after), A under strictatime,
 * j logging a file's data under data=ordered and writing dirty pages back
 * when it changes, and the checker finding a flag bit nobody defines.
 * Every mounted test ends with the checker.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "suite_main.h"
#include "helpers.h"
#include "format/endian_le.h"
#include "inode/iflags.h"
#include "inode/pages.h"
#include "check/check.h"

static const struct ordfs_cred cred = { 1000, 100 };

#define S ORDFS_FL_SYNC
#define I ORDFS_FL_IMMUTABLE
#define A_ ORDFS_FL_APPEND
#define d_ ORDFS_FL_NODUMP
#define A ORDFS_FL_NOATIME
#define J ORDFS_FL_JOURNAL_DATA
#define D ORDFS_FL_DIRSYNC

/* ---- the pure rules ------------------------------------------------------ */

START_TEST(test_values_are_linux_ones)
{
	ck_assert_uint_eq(S, FS_SYNC_FL);
	ck_assert_uint_eq(I, FS_IMMUTABLE_FL);
	ck_assert_uint_eq(A_, FS_APPEND_FL);
	ck_assert_uint_eq(d_, FS_NODUMP_FL);
	ck_assert_uint_eq(A, FS_NOATIME_FL);
	ck_assert_uint_eq(J, FS_JOURNAL_DATA_FL);
	ck_assert_uint_eq(D, FS_DIRSYNC_FL);
}
END_TEST

START_TEST(test_type_mask_and_inheritance)
{
	uint32_t all = S | I | A_ | d_ | A | J | D;
	ck_assert_uint_eq(iflags_allowed(S_IFDIR | 0755), all);
	ck_assert_uint_eq(iflags_allowed(S_IFREG | 0644), all & ~D);
	ck_assert_uint_eq(iflags_allowed(S_IFLNK | 0777), d_ | A);
	ck_assert_uint_eq(iflags_allowed(S_IFIFO | 0644), d_ | A);
	ck_assert_uint_eq(iflags_allowed(S_IFCHR | 0644), d_ | A);
	/* i and a are never inherited; D only by directories; j by files
	 * and directories (ext4 keeps it on directories for this). */
	ck_assert_uint_eq(iflags_inherited(all, S_IFDIR | 0755), S | d_ | A | J | D);
	ck_assert_uint_eq(iflags_inherited(all, S_IFREG | 0644), S | d_ | A | J);
	ck_assert_uint_eq(iflags_inherited(all, S_IFLNK | 0777), d_ | A);
	ck_assert_uint_eq(iflags_inherited(I | A_, S_IFREG | 0644), 0);
}
END_TEST

START_TEST(test_what_each_flag_refuses)
{
	/* [change] = { refused by i, refused by a } */
	static const struct {
		enum iflags_change what;
		bool by_i, by_a;
	} table[] = {
		{ IFLAGS_WRITE, true, true },        { IFLAGS_APPEND, true, false },
		{ IFLAGS_TRUNCATE, true, true },     { IFLAGS_PREALLOCATE, true, false },
		{ IFLAGS_PUNCH, true, true },        { IFLAGS_ATTR, true, true },
		{ IFLAGS_TOUCH, true, false },       { IFLAGS_XATTR, true, true },
		{ IFLAGS_UNLINK, true, true },       { IFLAGS_LINK, true, true },
		{ IFLAGS_DIR_ADD, true, false },     { IFLAGS_DIR_REMOVE, true, true },
	};
	for (unsigned k = 0; k < sizeof(table) / sizeof(table[0]); k++) {
		ck_assert_int_eq(iflags_refuses(I, table[k].what), table[k].by_i ? -EPERM : 0);
		ck_assert_int_eq(iflags_refuses(A_, table[k].what), table[k].by_a ? -EPERM : 0);
		/* the other flags refuse nothing */
		ck_assert_int_eq(iflags_refuses(S | d_ | A | J | D, table[k].what), 0);
	}
}
END_TEST

START_TEST(test_who_may_change_and_in_which_order)
{
	const uint16_t file = S_IFREG | 0644, dir = S_IFDIR | 0755, link = S_IFLNK | 0777;
	struct iflags_who owner = { true, false, false }, stranger = { false, false, false };
	struct iflags_who fowner = { false, true, false }, root = { false, true, true };
	ck_assert_int_eq(iflags_may_set(file, 0, A | d_ | S | J, &owner), 0);
	ck_assert_int_eq(iflags_may_set(file, 0, A, &stranger), -EPERM);
	ck_assert_int_eq(iflags_may_set(file, 0, A, &fowner), 0);
	/* i and a need CAP_LINUX_IMMUTABLE, to set and to clear */
	ck_assert_int_eq(iflags_may_set(file, 0, I, &owner), -EPERM);
	ck_assert_int_eq(iflags_may_set(file, A_, 0, &owner), -EPERM);
	ck_assert_int_eq(iflags_may_set(file, 0, I | A_, &root), 0);
	/* a flag not kept, or not for the type: EOPNOTSUPP */
	ck_assert_int_eq(iflags_may_set(file, 0, FS_COMPR_FL, &owner), -EOPNOTSUPP);
	ck_assert_int_eq(iflags_may_set(file, 0, FS_EXTENT_FL, &owner), -EOPNOTSUPP);
	ck_assert_int_eq(iflags_may_set(file, 0, D, &owner), -EOPNOTSUPP);
	ck_assert_int_eq(iflags_may_set(dir, 0, D | J, &owner), 0);
	ck_assert_int_eq(iflags_may_set(link, 0, S, &owner), -EOPNOTSUPP);
	ck_assert_int_eq(iflags_may_set(link, 0, A | d_, &owner), 0);
	/* the kernel's order: owner, then the capability, then the flags */
	ck_assert_int_eq(iflags_may_set(file, 0, FS_COMPR_FL, &stranger), -EPERM);
	ck_assert_int_eq(iflags_may_set(file, 0, I | FS_COMPR_FL, &owner), -EPERM);
	/* an immutable inode that stays so changes nothing else */
	ck_assert_int_eq(iflags_may_set(file, I, I | A, &root), -EPERM);
	ck_assert_int_eq(iflags_may_set(file, I | A, A, &root), 0);
	ck_assert_int_eq(iflags_may_set(file, I, I, &root), 0);
}
END_TEST

START_TEST(test_xflags)
{
	ck_assert_uint_eq(iflags_to_xflags(S | I | A_ | d_ | A | J | D),
			  FS_XFLAG_SYNC | FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND | FS_XFLAG_NODUMP |
				  FS_XFLAG_NOATIME);
	uint32_t f = 99;
	ck_assert_int_eq(iflags_from_xflags(FS_XFLAG_IMMUTABLE | FS_XFLAG_NOATIME, &f), 0);
	ck_assert_uint_eq(f, I | A);
	ck_assert_int_eq(iflags_from_xflags(FS_XFLAG_HASATTR, &f), 0);
	ck_assert_uint_eq(f, 0);
	ck_assert_int_eq(iflags_from_xflags(FS_XFLAG_REALTIME, &f), -EOPNOTSUPP);
	ck_assert_int_eq(iflags_from_xflags(FS_XFLAG_EXTSIZE | FS_XFLAG_SYNC, &f), -EOPNOTSUPP);
	ck_assert_int_eq(iflags_from_xflags(FS_XFLAG_DAX, &f), -EOPNOTSUPP);
	ck_assert_uint_eq(IFLAGS_XFLAG_MASK, S | I | A_ | d_ | A);
	char buf[IFLAGS_LETTERS_LEN];
	iflags_letters(S | I | A_ | d_ | A | J | D, buf);
	ck_assert_str_eq(buf, "SDiadAj");
	iflags_letters(0, buf);
	ck_assert_str_eq(buf, "-");
}
END_TEST

START_TEST(test_on_disk_word)
{
	struct ordfs_inode in, out;
	memset(&in, 0, sizeof(in));
	in.mode = S_IFREG | 0644;
	in.links = 1;
	in.attr_flags = I | A | J;
	ordfs_extent_root_init(in.data);
	uint8_t raw[ORDFS_INODE_SIZE];
	ordfs_inode_encode(&in, 12, 0x1234, raw);
	ck_assert_uint_eq(le_get32(raw + 108), I | A | J);
	ck_assert_int_eq(ordfs_inode_decode(raw, 12, 0x1234, &out), 0);
	ck_assert_uint_eq(out.attr_flags, I | A | J);
	/* a bit nobody defines: corrupt for everyone but the checker */
	le_put32(raw + 108, I | 0x100000);
	ordfs_inode_csum_set(raw, 12, 0x1234);
	ck_assert_int_eq(ordfs_inode_decode(raw, 12, 0x1234, &out), -EUCLEAN);
	uint32_t unknown;
	ck_assert_int_eq(ordfs_inode_decode_check(raw, 12, 0x1234, &out, &unknown), 0);
	ck_assert_uint_eq(unknown, 0x100000);
	ck_assert_uint_eq(out.attr_flags, I);
}
END_TEST

/* ---- through ops.h --------------------------------------------------------- */

static struct inode *make_file(struct test_fs *t, struct inode *dir, const char *name,
			       const char *text)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_create(t->fs, dir, name, 0644, &cred, &f), 0);
	if (text)
		ck_assert_int_eq(ordfs_write(t->fs, f, text, strlen(text), 0), (ssize_t)strlen(text));
	return f;
}

static struct inode *lookup(struct test_fs *t, struct inode *dir, const char *name)
{
	struct inode *i;
	ck_assert_int_eq(ordfs_lookup(t->fs, dir, name, &i), 0);
	return i;
}

static void set_flags(struct test_fs *t, struct inode *i, uint32_t flags)
{
	ck_assert_int_eq(ordfs_set_flags(t->fs, i, flags, ~0u, NULL), 0);
	ck_assert_uint_eq(ordfs_get_flags(t->fs, i), flags);
}

START_TEST(test_immutable_file_refuses_every_change)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *d, *f = make_file(&t, root, "f", "frozen");
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &cred, &d), 0);
	set_flags(&t, f, I);
	struct ordfs *fs = t.fs;
	ck_assert_int_eq(ordfs_write(fs, f, "x", 1, 0), -EPERM);
	ck_assert_int_eq(ordfs_write_by(fs, f, "x", 1, 6, ORDFS_WRITE_APPEND), -EPERM);
	ck_assert_int_eq(ordfs_truncate(fs, f, 0), -EPERM);
	ck_assert_int_eq(ordfs_fallocate(fs, f, 0, 0, 4096), -EPERM);
	ck_assert_int_eq(ordfs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1),
			 -EPERM);
	struct ordfs_setattr sa = { .valid = ORDFS_SET_MODE, .mode = 0600 };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), -EPERM);
	sa = (struct ordfs_setattr){ .valid = ORDFS_SET_UID, .uid = 7 };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), -EPERM);
	sa = (struct ordfs_setattr){ .valid = ORDFS_SET_MTIME, .mtime = { 5, 0 } };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), -EPERM);
	sa = (struct ordfs_setattr){ .valid = ORDFS_SET_MTIME | ORDFS_SET_MTIME_NOW };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), -EPERM);
	ck_assert_int_eq(ordfs_setxattr(fs, f, "user.a", "1", 1, 0), -EPERM);
	ck_assert_int_eq(ordfs_removexattr(fs, f, "user.a"), -EPERM);
	ck_assert_int_eq(ordfs_unlink(fs, root, "f"), -EPERM);
	ck_assert_int_eq(ordfs_rename(fs, root, "f", d, "g", 0), -EPERM);
	ck_assert_int_eq(ordfs_link(fs, f, d, "g"), -EPERM);
	struct inode *other = make_file(&t, root, "other", "o");
	ck_assert_int_eq(ordfs_rename(fs, root, "other", root, "f", 0), -EPERM); /* replaced */
	ck_assert_int_eq(ordfs_rename(fs, root, "other", root, "f", RENAME_EXCHANGE), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_WRONLY), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_RDWR | O_APPEND), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_RDONLY | O_TRUNC), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_RDONLY), 0);
	char buf[16];
	ck_assert_int_eq(ordfs_read(fs, f, buf, sizeof(buf), 0), 6);
	ck_assert_mem_eq(buf, "frozen", 6);
	/* Nothing else may change while it stays immutable; clearing works. */
	ck_assert_int_eq(ordfs_set_flags(fs, f, I | A, ~0u, NULL), -EPERM);
	set_flags(&t, f, 0);
	ck_assert_int_eq(ordfs_write(fs, f, "F", 1, 0), 1);
	ck_assert_int_eq(ordfs_unlink(fs, root, "f"), 0);
	inode_put(fs, other);
	inode_put(fs, f);
	inode_put(fs, d);
	inode_put(fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_append_only_file_takes_appends_only)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "log", "one\n");
	struct ordfs *fs = t.fs;
	set_flags(&t, f, A_);
	ck_assert_int_eq(ordfs_write(fs, f, "X", 1, 0), -EPERM);
	ck_assert_int_eq(ordfs_write(fs, f, "two\n", 4, 4), -EPERM); /* at EOF, not O_APPEND */
	/* An O_APPEND write lands at the end, whatever offset it names. */
	ck_assert_int_eq(ordfs_write_by(fs, f, "two\n", 4, 0, ORDFS_WRITE_APPEND), 4);
	char buf[16];
	ck_assert_int_eq(ordfs_read(fs, f, buf, sizeof(buf), 0), 8);
	ck_assert_mem_eq(buf, "one\ntwo\n", 8);
	ck_assert_int_eq(ordfs_truncate(fs, f, 0), -EPERM);
	struct ordfs_setattr sa = { .valid = ORDFS_SET_SIZE, .size = 100 };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), -EPERM);
	sa = (struct ordfs_setattr){ .valid = ORDFS_SET_MODE, .mode = 0600 };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), -EPERM);
	sa = (struct ordfs_setattr){ .valid = ORDFS_SET_ATIME | ORDFS_SET_ATIME_NOW |
						ORDFS_SET_MTIME | ORDFS_SET_MTIME_NOW };
	ck_assert_int_eq(ordfs_setattr(fs, f, &sa), 0); /* touch: allowed */
	ck_assert_int_eq(ordfs_fallocate(fs, f, FALLOC_FL_KEEP_SIZE, 0, 65536), 0);
	ck_assert_int_eq(ordfs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4),
			 -EPERM);
	ck_assert_int_eq(ordfs_setxattr(fs, f, "user.a", "1", 1, 0), -EPERM);
	ck_assert_int_eq(ordfs_unlink(fs, root, "log"), -EPERM);
	ck_assert_int_eq(ordfs_rename(fs, root, "log", root, "log2", 0), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_WRONLY), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_WRONLY | O_APPEND | O_TRUNC), -EPERM);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_WRONLY | O_APPEND), 0);
	ck_assert_int_eq(ordfs_open_check(fs, f, O_RDONLY), 0);
	set_flags(&t, f, 0);
	ck_assert_int_eq(ordfs_unlink(fs, root, "log"), 0);
	inode_put(fs, f);
	inode_put(fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_immutable_and_append_only_directories)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct ordfs *fs = t.fs;
	struct inode *root = tfs_root(&t), *di, *da, *x, *n;
	ck_assert_int_eq(ordfs_mkdir(fs, root, "di", 0755, &cred, &di), 0);
	ck_assert_int_eq(ordfs_mkdir(fs, root, "da", 0755, &cred, &da), 0);
	struct inode *in_i = make_file(&t, di, "in", "i");
	struct inode *in_a = make_file(&t, da, "in", "a");
	set_flags(&t, di, I);
	set_flags(&t, da, A_);
	/* immutable: no name comes or goes; the files inside still change */
	ck_assert_int_eq(ordfs_create(fs, di, "new", 0644, &cred, &x), -EPERM);
	ck_assert_int_eq(ordfs_mkdir(fs, di, "sub", 0755, &cred, &x), -EPERM);
	ck_assert_int_eq(ordfs_symlink(fs, di, "l", "in", &cred, &x), -EPERM);
	ck_assert_int_eq(ordfs_unlink(fs, di, "in"), -EPERM);
	ck_assert_int_eq(ordfs_link(fs, in_a, di, "h"), -EPERM);
	ck_assert_int_eq(ordfs_rename(fs, di, "in", root, "out", 0), -EPERM);
	ck_assert_int_eq(ordfs_rename(fs, root, "da", di, "moved", 0), -EPERM);
	ck_assert_int_eq(ordfs_write(fs, in_i, "I", 1, 1), 1);
	/* append-only: names come, none goes */
	ck_assert_int_eq(ordfs_create(fs, da, "new", 0644, &cred, &n), 0);
	ck_assert_int_eq(ordfs_unlink(fs, da, "new"), -EPERM);
	ck_assert_int_eq(ordfs_rename(fs, da, "new", root, "out", 0), -EPERM);
	ck_assert_int_eq(ordfs_rename(fs, root, "f", da, "in", 0), -ENOENT);
	struct inode *f = make_file(&t, root, "f", "f");
	ck_assert_int_eq(ordfs_rename(fs, root, "f", da, "in", 0), -EPERM); /* replaces */
	ck_assert_int_eq(ordfs_rename(fs, root, "f", da, "f", 0), 0);       /* a new name */
	ck_assert_int_eq(ordfs_link(fs, f, da, "f2"), 0);
	set_flags(&t, di, 0);
	set_flags(&t, da, 0);
	ck_assert_int_eq(ordfs_unlink(fs, da, "new"), 0);
	inode_put(fs, f);
	inode_put(fs, n);
	inode_put(fs, in_i);
	inode_put(fs, in_a);
	inode_put(fs, di);
	inode_put(fs, da);
	inode_put(fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_who_may_change_flags_through_ops)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct ordfs *fs = t.fs;
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f", "x"), *l;
	ck_assert_int_eq(ordfs_symlink(fs, root, "l", "f", &cred, &l), 0);
	struct ordfs_flags_caller owner = { cred.uid, false, false, false };
	struct ordfs_flags_caller stranger = { 4242, false, false, false };
	struct ordfs_flags_caller fowner = { 4242, true, false, true };
	ck_assert_int_eq(ordfs_set_flags(fs, f, A | d_, ~0u, &stranger), -EPERM);
	ck_assert_int_eq(ordfs_set_flags(fs, f, I, ~0u, &owner), -EPERM);
	ck_assert_int_eq(ordfs_set_flags(fs, f, A_, ~0u, &fowner), -EPERM);
	ck_assert_uint_eq(ordfs_get_flags(fs, f), 0);
	/* j needs CAP_SYS_RESOURCE (ext4), even for the owner */
	ck_assert_int_eq(ordfs_set_flags(fs, f, J, ~0u, &owner), -EPERM);
	ck_assert_uint_eq(ordfs_get_flags(fs, f), 0);
	struct ordfs_flags_caller resource = { cred.uid, false, false, true };
	ck_assert_int_eq(ordfs_set_flags(fs, f, A | d_ | J | S, ~0u, &resource), 0);
	ck_assert_int_eq(ordfs_set_flags(fs, f, A | d_ | S, ~0u, &owner), -EPERM);
	ck_assert_int_eq(ordfs_set_flags(fs, f, A | d_ | J | S, ~0u, &owner), 0);
	ck_assert_int_eq(ordfs_set_flags(fs, f, A, ~0u, &fowner), 0);
	ck_assert_uint_eq(ordfs_get_flags(fs, f), A);
	/* not kept, or not for the type: nothing changes */
	ck_assert_int_eq(ordfs_set_flags(fs, f, A | FS_COMPR_FL, ~0u, &owner), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_set_flags(fs, f, D, ~0u, NULL), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_set_flags(fs, l, S, ~0u, NULL), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_set_flags(fs, l, A, ~0u, NULL), 0);
	ck_assert_uint_eq(ordfs_get_flags(fs, f), A);
	/* FSSETXATTR's mask: the flags without an xflag stay */
	set_flags(&t, f, J | A);
	ck_assert_int_eq(ordfs_set_flags(fs, f, d_, IFLAGS_XFLAG_MASK, NULL), 0);
	ck_assert_uint_eq(ordfs_get_flags(fs, f), J | d_);
	/* a change moves ctime */
	struct ordfs_timespec before = f->d.ctime;
	set_flags(&t, f, 0);
	ck_assert_int_ge(ordfs_timespec_cmp(f->d.ctime, before), 0);
	inode_put(fs, l);
	inode_put(fs, f);
	inode_put(fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_inheritance_and_persistence)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *d, *x;
	ck_assert_int_eq(t.fs->sb.feature_ro_compat, 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &cred, &d), 0);
	set_flags(&t, d, S | D | A | d_ | J | A_);
	ck_assert_uint_eq(t.fs->sb.feature_ro_compat, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS);
	x = make_file(&t, d, "file", NULL);
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), S | A | d_ | J);
	inode_put(t.fs, x);
	ck_assert_int_eq(ordfs_mkdir(t.fs, d, "sub", 0755, &cred, &x), 0);
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), S | D | A | d_ | J);
	inode_put(t.fs, x);
	ck_assert_int_eq(ordfs_symlink(t.fs, d, "link", "file", &cred, &x), 0);
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), A | d_);
	inode_put(t.fs, x);
	x = make_file(&t, root, "plain", NULL);
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), 0);
	inode_put(t.fs, x);
	inode_put(t.fs, d);
	inode_put(t.fs, root);

	tfs_unmount(&t);
	tfs_mount(&t);
	ck_assert_uint_eq(t.fs->sb.feature_ro_compat, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS);
	root = tfs_root(&t);
	d = lookup(&t, root, "d");
	ck_assert_uint_eq(ordfs_get_flags(t.fs, d), S | D | A | d_ | J | A_);
	x = lookup(&t, d, "file");
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), S | A | d_ | J);
	inode_put(t.fs, x);
	x = lookup(&t, d, "sub");
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), S | D | A | d_ | J);
	inode_put(t.fs, x);
	set_flags(&t, d, 0);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* S: a write, and a setattr, are on the image when they return. */
START_TEST(test_sync_flag_is_durable_before_return)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t);
	struct inode *s = make_file(&t, root, "s", NULL), *p = make_file(&t, root, "p", NULL);
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0); /* both names durable */
	set_flags(&t, s, S);
	ck_assert_int_eq(ordfs_write(t.fs, s, "synced", 6, 0), 6);
	ck_assert_int_eq(ordfs_write(t.fs, p, "plain!", 6, 0), 6);
	inode_put(t.fs, s);
	inode_put(t.fs, p);
	inode_put(t.fs, root);
	tfs_crash(&t); /* nothing committed since, no commit interval */
	tfs_mount(&t);
	root = tfs_root(&t);
	s = lookup(&t, root, "s");
	p = lookup(&t, root, "p");
	char buf[8];
	ck_assert_int_eq(ordfs_read(t.fs, s, buf, sizeof(buf), 0), 6);
	ck_assert_mem_eq(buf, "synced", 6);
	ck_assert_uint_eq(ordfs_get_flags(t.fs, s), S);
	/* the control: without S the write waited for a commit that never came */
	ck_assert_int_eq(ordfs_read(t.fs, p, buf, sizeof(buf), 0), 0);
	inode_put(t.fs, s);
	inode_put(t.fs, p);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* D: a name made or removed in the directory is on the image when the
 * call returns; in a plain directory it waits for a commit. */
START_TEST(test_dirsync_flag_is_durable_before_return)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *ds, *dp, *x;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "ds", 0755, &cred, &ds), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "dp", 0755, &cred, &dp), 0);
	set_flags(&t, ds, D);
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0);
	x = make_file(&t, ds, "made", NULL);
	inode_put(t.fs, x);
	ck_assert_int_eq(ordfs_mkdir(t.fs, ds, "sub", 0755, &cred, &x), 0);
	inode_put(t.fs, x);
	x = make_file(&t, dp, "made", NULL);
	inode_put(t.fs, x);
	inode_put(t.fs, ds);
	inode_put(t.fs, dp);
	inode_put(t.fs, root);
	tfs_crash(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	ds = lookup(&t, root, "ds");
	dp = lookup(&t, root, "dp");
	x = lookup(&t, ds, "made");
	inode_put(t.fs, x);
	x = lookup(&t, ds, "sub");
	ck_assert_uint_eq(ordfs_get_flags(t.fs, x), D);
	inode_put(t.fs, x);
	ck_assert_int_eq(ordfs_lookup(t.fs, dp, "made", &x), -ENOENT); /* the control */
	/* and a removal */
	ck_assert_int_eq(ordfs_unlink(t.fs, ds, "made"), 0);
	inode_put(t.fs, ds);
	inode_put(t.fs, dp);
	inode_put(t.fs, root);
	tfs_crash(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	ds = lookup(&t, root, "ds");
	ck_assert_int_eq(ordfs_lookup(t.fs, ds, "made", &x), -ENOENT);
	inode_put(t.fs, ds);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* A under strictatime: a read leaves atime, and the kernel may keep the
 * file's pages across opens. */
START_TEST(test_noatime_flag_under_strictatime)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	tfs_unmount(&t);
	t.opts.atime.mode = ATIME_STRICT;
	tfs_mount(&t);
	struct inode *root = tfs_root(&t);
	struct inode *a = make_file(&t, root, "a", "data"), *p = make_file(&t, root, "p", "data");
	set_flags(&t, a, A);
	struct ordfs_setattr old = { .valid = ORDFS_SET_ATIME, .atime = { 1000, 0 } };
	ck_assert_int_eq(ordfs_setattr(t.fs, a, &old), 0);
	ck_assert_int_eq(ordfs_setattr(t.fs, p, &old), 0);
	ck_assert(ordfs_open_keeps_cache(t.fs, a));
	ck_assert(!ordfs_open_keeps_cache(t.fs, p));
	char buf[8];
	ck_assert_int_eq(ordfs_read(t.fs, a, buf, sizeof(buf), 0), 4);
	ck_assert_int_eq(ordfs_read(t.fs, p, buf, sizeof(buf), 0), 4);
	ck_assert_int_eq(a->d.atime.sec, 1000);
	ck_assert_int_gt(p->d.atime.sec, 1000);
	inode_put(t.fs, a);
	inode_put(t.fs, p);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* j under data=ordered: an fsync'd 256 KiB goes through the log (in
 * place without j: more than LOG_SMALL_BYTES); dirty pages are written
 * back before j changes. */
START_TEST(test_journal_data_flag)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 1024);
	ck_assert_int_eq(t.fs->opts.data_mode, JOURNAL_DATA_ORDERED);
	struct inode *root = tfs_root(&t);
	struct inode *j = make_file(&t, root, "j", NULL), *p = make_file(&t, root, "p", NULL);
	set_flags(&t, j, J);
	static char buf[256 << 10];
	memset(buf, 'j', sizeof(buf));
	struct journal_stats before, mid, after;
	journal_get_stats(t.fs->journal, &before);
	ck_assert_int_eq(ordfs_write(t.fs, p, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert_int_eq(ordfs_fsync(t.fs, p, false), 0);
	journal_get_stats(t.fs->journal, &mid);
	ck_assert_int_eq(ordfs_write(t.fs, j, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert_int_eq(ordfs_fsync(t.fs, j, false), 0);
	journal_get_stats(t.fs->journal, &after);
	uint64_t plain = mid.blocks_logged - before.blocks_logged;
	uint64_t journaled = after.blocks_logged - mid.blocks_logged;
	ck_assert_msg(plain < 16 && journaled >= 64,
		      "blocks logged: %llu without j, %llu with j", (unsigned long long)plain,
		      (unsigned long long)journaled);

	/* Dirty pages go out before j changes, by their mode's route. */
	ck_assert_int_eq(ordfs_write(t.fs, p, "dirty", 5, 0), 5);
	ck_assert(pages_has_dirty(p));
	set_flags(&t, p, J);
	ck_assert(!pages_has_dirty(p));
	ck_assert_int_eq(ordfs_write(t.fs, j, "dirty", 5, 0), 5);
	set_flags(&t, j, 0);
	ck_assert(!pages_has_dirty(j));
	inode_put(t.fs, j);
	inode_put(t.fs, p);
	inode_put(t.fs, root);

	/* After a crash the fsync'd data, home only at a checkpoint that has
	 * not run, replays from the log; the written-back "dirty" was never
	 * committed. */
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert(t.fs->recovery.blocks_replayed >= 64);
	root = tfs_root(&t);
	j = lookup(&t, root, "j");
	char got[8];
	ck_assert_int_eq(ordfs_read(t.fs, j, got, 5, 0), 5);
	ck_assert_mem_eq(got, "jjjjj", 5);
	ck_assert_int_eq(ordfs_read(t.fs, j, got, 1, sizeof(buf) - 1), 1);
	ck_assert_int_eq(got[0], 'j');
	inode_put(t.fs, j);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* The checker: a flag bit no ordfs defines, D on a file, and flags on an
 * image whose superblock lacks the feature are problems; the repair fixes
 * them without losing the file. */
START_TEST(test_checker_finds_bad_flags)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f", "keep me");
	uint32_t ino = f->ino;
	set_flags(&t, f, d_);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	ck_assert_int_eq(tfs_check_image(&t), 0);

	struct ordfs_super sb;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(t.mem, false, &sb, &why), 0);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&sb, ino, &blk, &off);
	uint8_t b[4096];
	ck_assert_int_eq(blockdev_read(t.mem, b, sizeof(b), blk * 4096), 0);
	le_put32(b + off + 108, d_ | 0x20000000u); /* a bit nobody defines */
	ordfs_inode_csum_set(b + off, ino, sb.csum_seed);
	ck_assert_int_eq(blockdev_write(t.mem, b, sizeof(b), blk * 4096), 0);
	ck_assert_int_eq(tfs_check_image(&t), 1);
	le_put32(b + off + 108, d_ | D); /* D is for directories */
	ordfs_inode_csum_set(b + off, ino, sb.csum_seed);
	ck_assert_int_eq(blockdev_write(t.mem, b, sizeof(b), blk * 4096), 0);
	ck_assert_int_eq(tfs_check_image(&t), 1);
	sb.feature_ro_compat = 0; /* and the feature gone */
	ck_assert_int_eq(ordfs_write_super(t.mem, &sb, false), 0);
	ck_assert_int_eq(tfs_check_image(&t), 2);

	struct repair_result rep;
	ck_assert_int_eq(ordfs_repair(t.mem, 0, NULL, NULL, &rep), 0);
	ck_assert_uint_eq(rep.problems, 0);
	tfs_mount(&t);
	root = tfs_root(&t);
	f = lookup(&t, root, "f");
	ck_assert_uint_eq(ordfs_get_flags(t.fs, f), d_);
	char buf[8];
	ck_assert_int_eq(ordfs_read(t.fs, f, buf, sizeof(buf), 0), 7);
	ck_assert_uint_eq(t.fs->sb.feature_ro_compat, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *flags_suite(void)
{
	Suite *s = suite_create("flags");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, test_values_are_linux_ones);
	tcase_add_test(tc, test_type_mask_and_inheritance);
	tcase_add_test(tc, test_what_each_flag_refuses);
	tcase_add_test(tc, test_who_may_change_and_in_which_order);
	tcase_add_test(tc, test_xflags);
	tcase_add_test(tc, test_on_disk_word);
	suite_add_tcase(s, tc);
	tc = tcase_create("ops");
	tcase_add_test(tc, test_immutable_file_refuses_every_change);
	tcase_add_test(tc, test_append_only_file_takes_appends_only);
	tcase_add_test(tc, test_immutable_and_append_only_directories);
	tcase_add_test(tc, test_who_may_change_flags_through_ops);
	tcase_add_test(tc, test_inheritance_and_persistence);
	tcase_add_test(tc, test_sync_flag_is_durable_before_return);
	tcase_add_test(tc, test_dirsync_flag_is_durable_before_return);
	tcase_add_test(tc, test_noatime_flag_under_strictatime);
	tcase_add_test(tc, test_journal_data_flag);
	tcase_add_test(tc, test_checker_finds_bad_flags);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(flags_suite());
}
