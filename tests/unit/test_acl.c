/*
 * test_acl.c - POSIX ACLs (xattr/acl.c and acl_inode.c, and their use in
 * file/xattr.c, namei/create.c, file/attr.c and the checker): the Linux xattr form and its validation, the
 * compact on-disk form and its checks, the mode <-> ACL rules (setting,
 * chmod, the equivalent ACL stored as nothing), inheritance at create
 * (files, directories, device nodes and FIFOs, not symlinks; the umask
 * only without a default ACL), permission evaluation (owner, named user,
 * owning and named groups with the mask, supplementary groups, other,
 * uid 0), persistence, eviction, the one-block limit, and the checker on
 * valid and malformed stored ACLs.
 *
 * ACLs are written in a short notation: "u::6 u:1000:7 g::4 m::6 o::0"
 * (tag, id, octal perm), turned into the Linux xattr form in the order
 * given, so malformed orders can be written too.
 */
#include "suite_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "helpers.h"
#include "xattr/acl.h"
#include "xattr/xattr.h"
#include "check/check.h"

#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"

static const struct ordfs_cred root_cred = { 0, 0 };

/* ---- the notation ---------------------------------------------------------- */

/* A Linux xattr value built from spec (see the top), version 2. */
struct xv {
	uint8_t b[4096];
	size_t len;
};

static void xv_build_version(struct xv *v, const char *spec, uint32_t version)
{
	le_put32(v->b, version);
	v->len = ACL_XATTR_HDR;
	char copy[4096];
	ck_assert_uint_lt(strlen(spec), sizeof(copy));
	snprintf(copy, sizeof(copy), "%s", spec);
	char *save = NULL;
	for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char kind = tok[0];
		char *idpart = strchr(tok, ':') + 1;
		char *permpart = strchr(idpart, ':') + 1;
		bool named = idpart[0] != ':';
		uint32_t id = named ? (uint32_t)strtoul(idpart, NULL, 10) : ACL_UNDEFINED_ID;
		uint16_t tag = 0;
		switch (kind) {
		case 'u': tag = named ? ACL_TAG_USER : ACL_TAG_USER_OBJ; break;
		case 'g': tag = named ? ACL_TAG_GROUP : ACL_TAG_GROUP_OBJ; break;
		case 'm': tag = ACL_TAG_MASK; break;
		case 'o': tag = ACL_TAG_OTHER; break;
		case 'x': tag = 0x40; break; /* not a tag */
		}
		ck_assert_uint_lt(v->len + 8, sizeof(v->b));
		le_put16(v->b + v->len, tag);
		le_put16(v->b + v->len + 2, (uint16_t)strtoul(permpart, NULL, 8));
		le_put32(v->b + v->len + 4, id);
		v->len += ACL_XATTR_ENTRY;
	}
}

static void xv_build(struct xv *v, const char *spec)
{
	xv_build_version(v, spec, ACL_XATTR_VERSION);
}

static struct acl *parse(const char *spec)
{
	struct xv v;
	struct acl *acl;
	xv_build(&v, spec);
	int err = acl_from_xattr(v.b, v.len, &acl);
	ck_assert_msg(err == 0 && acl, "%s: %d", spec, err);
	return acl;
}

/* ---- the Linux form ---------------------------------------------------------- */

START_TEST(test_xattr_form_roundtrip)
{
	static const char spec[] = "u::6 u:1000:4 u:1001:6 g::4 g:50:5 m::7 o::0";
	struct acl *acl = parse(spec);
	ck_assert_uint_eq(acl->user_obj, 6);
	ck_assert_uint_eq(acl->group_obj, 4);
	ck_assert(acl->has_mask);
	ck_assert_uint_eq(acl->mask, 7);
	ck_assert_uint_eq(acl->other, 0);
	ck_assert_uint_eq(acl->nusers, 2);
	ck_assert_uint_eq(acl->ngroups, 1);
	ck_assert_uint_eq(acl->named[0].id, 1000);
	ck_assert_uint_eq(acl->named[1].id, 1001);
	ck_assert_uint_eq(acl->named[1].perm, 6);
	ck_assert_uint_eq(acl->named[2].id, 50);
	ck_assert_uint_eq(acl->named[2].perm, 5);

	struct xv v;
	xv_build(&v, spec);
	uint8_t out[256];
	ck_assert_int_eq(acl_to_xattr(acl, NULL, 0), (ssize_t)v.len);
	ck_assert_int_eq(acl_to_xattr(acl, out, v.len - 1), -ERANGE);
	ck_assert_int_eq(acl_to_xattr(acl, out, sizeof(out)), (ssize_t)v.len);
	ck_assert_mem_eq(out, v.b, v.len);

	/* The compact form: 10 + 5 per named entry, and back. */
	size_t dlen = acl_disk_size(acl);
	ck_assert_uint_eq(dlen, 10 + 5 * 3);
	uint8_t disk[64];
	acl_to_disk(acl, disk);
	ck_assert_uint_eq(disk[0], ACL_DISK_VERSION);
	ck_assert_uint_eq(disk[1], 7);
	ck_assert_uint_eq(le_get16(disk + 6), 2);
	ck_assert_uint_eq(le_get16(disk + 8), 1);
	ck_assert_uint_eq(le_get32(disk + 10 + 5), 1001);
	ck_assert_ptr_null(acl_disk_problem(ORDFS_XATTR_NS_POSIX_ACL_ACCESS, S_IFREG, disk, dlen));
	struct acl *back;
	ck_assert_int_eq(acl_from_disk(disk, dlen, &back), 0);
	ck_assert_int_eq(acl_disk_to_xattr(disk, dlen, out, sizeof(out)), (ssize_t)v.len);
	ck_assert_mem_eq(out, v.b, v.len);
	ck_assert_uint_eq(back->nusers, 2);
	ck_assert_uint_eq(back->named[2].id, 50);
	acl_free(back);
	acl_free(acl);
}
END_TEST

START_TEST(test_xattr_form_validation)
{
	static const struct {
		const char *spec;
		int err;
	} cases[] = {
		{ "u::6 g::4 o::4", 0 },
		{ "u::7 g::5 m::5 o::5", 0 },          /* a mask without named entries */
		{ "u::7 u:0:7 g::5 m::7 o::0", 0 },    /* uid 0 is a valid id */
		{ "u::6 g::4", -EINVAL },              /* no OTHER */
		{ "g::4 u::6 o::4", -EINVAL },         /* out of order */
		{ "u::6 u::6 g::4 o::4", -EINVAL },    /* two USER_OBJ */
		{ "u::6 g::4 g::4 o::4", -EINVAL },    /* two GROUP_OBJ */
		{ "u::6 g::4 o::4 o::4", -EINVAL },    /* two OTHER */
		{ "u::6 g::4 m::4 m::4 o::4", -EINVAL },
		{ "u::6 u:1000:4 g::4 o::4", -EINVAL },/* named entry, no mask */
		{ "u::6 g::4 g:5:4 o::4", -EINVAL },
		{ "u::6 g::4 u:1000:4 m::6 o::4", -EINVAL }, /* user after GROUP_OBJ */
		{ "u::6 u:1001:4 u:1000:4 g::4 m::6 o::4", -EINVAL }, /* unsorted */
		{ "u::6 u:1000:4 u:1000:6 g::4 m::6 o::4", -EINVAL }, /* duplicate */
		{ "u::6 g::4 g:9:4 g:8:4 m::6 o::4", -EINVAL },
		{ "u::6 u:4294967295:4 g::4 m::6 o::4", -EINVAL },    /* invalid id */
		{ "u::6 g::4 g:4294967295:4 m::6 o::4", -EINVAL },
		{ "u::10 g::4 o::4", -EINVAL },        /* perm 8 */
		{ "u::6 g::4 x::4 o::4", -EINVAL },    /* unknown tag */
		{ "u::6 g::4 m::4", -EINVAL },
		{ "o::4", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xv v;
		struct acl *acl = NULL;
		xv_build(&v, cases[i].spec);
		int err = acl_from_xattr(v.b, v.len, &acl);
		ck_assert_msg(err == cases[i].err, "%s: got %d want %d", cases[i].spec, err,
			      cases[i].err);
		ck_assert(!err == (acl != NULL));
		acl_free(acl);
	}
	struct xv v;
	struct acl *acl = (struct acl *)1;
	xv_build_version(&v, "u::6 g::4 o::4", 1);
	ck_assert_int_eq(acl_from_xattr(v.b, v.len, &acl), -EOPNOTSUPP);
	xv_build(&v, "u::6 g::4 o::4");
	ck_assert_int_eq(acl_from_xattr(v.b, v.len - 1, &acl), -EINVAL); /* torn entry */
	ck_assert_int_eq(acl_from_xattr(v.b, 3, &acl), -EINVAL);          /* torn header */
	/* No entries, or nothing at all: "no ACL". */
	ck_assert_int_eq(acl_from_xattr(v.b, ACL_XATTR_HDR, &acl), 0);
	ck_assert_ptr_null(acl);
	acl = (struct acl *)1;
	ck_assert_int_eq(acl_from_xattr(NULL, 0, &acl), 0);
	ck_assert_ptr_null(acl);
}
END_TEST

/* ---- the compact form's checks ------------------------------------------------ */

/* A valid access ACL: u::6 u:7:4 u:9:6 g::4 g:3:5 m::6 o::0 (users 7, 9;
 * group 3: a group id below a user id is fine, the lists are separate). */
static size_t valid_disk(uint8_t *d)
{
	struct acl *acl = parse("u::6 u:7:4 u:9:6 g::4 g:3:5 m::6 o::0");
	size_t len = acl_disk_size(acl);
	acl_to_disk(acl, d);
	acl_free(acl);
	return len;
}

START_TEST(test_disk_form_checks)
{
	uint8_t d[64];
	const uint8_t access = ORDFS_XATTR_NS_POSIX_ACL_ACCESS, def = ORDFS_XATTR_NS_POSIX_ACL_DEFAULT;
	size_t len = valid_disk(d);
	ck_assert_uint_eq(len, 25);
	ck_assert_ptr_null(acl_disk_problem(access, S_IFREG | 0644, d, len));
	ck_assert_ptr_null(acl_disk_problem(def, S_IFDIR | 0755, d, len));
	ck_assert_ptr_null(acl_disk_problem(access, S_IFIFO, d, len));
	ck_assert_ptr_nonnull(acl_disk_problem(def, S_IFREG, d, len));
	ck_assert_ptr_nonnull(acl_disk_problem(access, S_IFLNK, d, len));

	/* One change each, all caught. */
	for (int m = 0; m < 12; m++) {
		len = valid_disk(d);
		switch (m) {
		case 0: d[0] = 2; break;                           /* version */
		case 1: d[5] = 1; break;                           /* reserved */
		case 2: d[2] = 8; break;                           /* user_obj perm */
		case 3: d[1] = 9; break;                           /* mask perm */
		case 4: d[1] = ACL_DISK_NO_MASK; break;            /* named, no mask */
		case 5: len--; break;                              /* length */
		case 6: le_put16(d + 6, 3); break;                 /* counts */
		case 7: le_put32(d + 15, 7); break;                /* duplicate user */
		case 8: le_put32(d + 15, 5); break;                /* unsorted users */
		case 9: d[24] = 8; break;                          /* named perm */
		case 10: le_put32(d + 20, ACL_UNDEFINED_ID); break; /* invalid group id */
		case 11: len = 9; break;                           /* shorter than the header */
		}
		ck_assert_msg(acl_disk_problem(def, S_IFDIR, d, len) != NULL, "mutation %d", m);
		struct acl *acl;
		ck_assert_int_eq(acl_from_disk(d, len, &acl), -EUCLEAN);
	}
	/* A stored access ACL without a mask would say no more than the mode:
	 * never written, refused; the same as a default ACL is fine. */
	struct acl *min = parse("u::7 g::5 o::5");
	len = acl_disk_size(min);
	ck_assert_uint_eq(len, 10);
	acl_to_disk(min, d);
	ck_assert_ptr_nonnull(acl_disk_problem(access, S_IFREG, d, len));
	ck_assert_ptr_null(acl_disk_problem(def, S_IFDIR, d, len));
	acl_free(min);
}
END_TEST

/* ---- the mode rules ---------------------------------------------------------- */

START_TEST(test_mode_rules)
{
	uint16_t mode = S_IFREG | S_ISUID | 0777;
	struct acl *min = parse("u::6 g::4 o::0");
	ck_assert(acl_equiv_mode(min, &mode));
	ck_assert_uint_eq(mode, S_IFREG | S_ISUID | 0640);
	acl_free(min);

	struct acl *acl = parse("u::7 u:1000:7 g::4 m::5 o::1");
	mode = S_IFREG | 0600;
	ck_assert(!acl_equiv_mode(acl, &mode));
	ck_assert_uint_eq(mode, S_IFREG | 0751); /* group bits are the mask */

	/* chmod: USER_OBJ, MASK, OTHER follow; GROUP_OBJ and named stay. */
	acl_chmod(acl, S_IFREG | 0640);
	ck_assert_uint_eq(acl->user_obj, 6);
	ck_assert_uint_eq(acl->mask, 4);
	ck_assert_uint_eq(acl->other, 0);
	ck_assert_uint_eq(acl->group_obj, 4);
	ck_assert_uint_eq(acl->named[0].perm, 7);
	acl_free(acl);
	/* Without a mask, GROUP_OBJ follows the group bits. */
	acl = parse("u::7 g::7 o::7");
	acl_chmod(acl, 0751);
	ck_assert_uint_eq(acl->user_obj, 7);
	ck_assert_uint_eq(acl->group_obj, 5);
	ck_assert_uint_eq(acl->other, 1);
	acl_free(acl);

	/* Creation: the create mode limits the ACL and the ACL the mode. */
	acl = parse("u::7 u:1000:7 g::5 m::7 o::5");
	mode = S_IFREG | 0640;
	ck_assert(acl_create_masq(acl, &mode));
	ck_assert_uint_eq(acl->user_obj, 6);
	ck_assert_uint_eq(acl->mask, 4);
	ck_assert_uint_eq(acl->other, 0);
	ck_assert_uint_eq(acl->group_obj, 5); /* GROUP_OBJ is not masked */
	ck_assert_uint_eq(acl->named[0].perm, 7);
	ck_assert_uint_eq(mode, S_IFREG | 0640);
	acl_free(acl);
	acl = parse("u::6 g::4 o::4");
	mode = S_IFDIR | S_ISGID | 0777;
	ck_assert(!acl_create_masq(acl, &mode)); /* equivalent: nothing to store */
	ck_assert_uint_eq(mode, S_IFDIR | S_ISGID | 0644);
	acl_free(acl);
}
END_TEST

/* ---- evaluation ---------------------------------------------------------------- */

START_TEST(test_permission_evaluation)
{
	/* Owner 100, group 100. */
	struct acl *acl = parse("u::6 u:1000:7 u:1001:4 g::4 g:50:6 g:51:1 m::6 o::4");
	const unsigned R = ACL_READ, W = ACL_WRITE, X = ACL_EXECUTE;
	static const uint32_t g51[] = { 51 }, g50_51[] = { 51, 50 }, g100[] = { 100 };
	struct {
		uint32_t uid, gid;
		const uint32_t *groups;
		uint32_t ngroups;
		unsigned want;
		int expect;
	} cases[] = {
		{ 100, 100, NULL, 0, R | W, 0 },         /* owner: USER_OBJ */
		{ 100, 100, NULL, 0, X, -EACCES },
		{ 100, 1, NULL, 0, R, 0 },
		{ 1000, 1, NULL, 0, R | W, 0 },          /* named user, rwx */
		{ 1000, 1, NULL, 0, X, -EACCES },        /* ... limited by the mask */
		{ 1001, 1, NULL, 0, R, 0 },
		{ 1001, 1, NULL, 0, W, -EACCES },
		{ 1001, 50, NULL, 0, W, -EACCES },       /* the named user entry decides */
		{ 2000, 100, NULL, 0, R, 0 },            /* owning group */
		{ 2000, 100, NULL, 0, W, -EACCES },
		{ 2000, 1, g100, 1, R, 0 },              /* ... as a supplementary group */
		{ 2000, 50, NULL, 0, R | W, 0 },         /* named group */
		{ 2000, 50, NULL, 0, X, -EACCES },
		{ 2000, 1, g50_51, 2, W, 0 },            /* named group, supplementary */
		{ 2000, 1, g51, 1, X, -EACCES },         /* group x, masked away */
		{ 2000, 1, g51, 1, R, -EACCES },         /* a matching group denies: not other */
		{ 2000, 1, NULL, 0, R, 0 },              /* other */
		{ 2000, 1, NULL, 0, W, -EACCES },
		{ 2000, 1, NULL, 0, 0, 0 },              /* nothing wanted */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = acl_permission(acl, 100, 100, cases[i].uid, cases[i].gid, cases[i].groups,
					 cases[i].ngroups, cases[i].want);
		ck_assert_msg(got == cases[i].expect, "case %zu: uid %u want %u: got %d want %d", i,
			      cases[i].uid, cases[i].want, got, cases[i].expect);
	}
	acl_free(acl);
	/* Without a mask, a matched GROUP_OBJ stands on its own. */
	acl = parse("u::0 g::5 o::0");
	ck_assert_int_eq(acl_permission(acl, 100, 100, 7, 100, NULL, 0, R | X), 0);
	ck_assert_int_eq(acl_permission(acl, 100, 100, 7, 101, NULL, 0, R), -EACCES);
	ck_assert_int_eq(acl_permission(acl, 100, 100, 100, 100, NULL, 0, R), -EACCES);
	acl_free(acl);
}
END_TEST

/* ---- through the filesystem ------------------------------------------------------- */

static void set_acl(struct test_fs *t, struct inode *f, const char *name, const char *spec)
{
	struct xv v;
	xv_build(&v, spec);
	int err = ordfs_setxattr(t->fs, f, name, v.b, v.len, 0);
	ck_assert_msg(err == 0, "%s %s: %d", name, spec, err);
}

/* The inode's ACL reads back as exactly spec (canonical order). */
static void expect_acl(struct test_fs *t, struct inode *f, const char *name, const char *spec)
{
	struct xv want;
	uint8_t got[4096];
	xv_build(&want, spec);
	ssize_t n = ordfs_getxattr(t->fs, f, name, got, sizeof(got));
	ck_assert_msg(n == (ssize_t)want.len, "%s on %u: length %zd, want %zu (%s)", name, f->ino,
		      n, want.len, spec);
	ck_assert_int_eq(ordfs_getxattr(t->fs, f, name, NULL, 0), n);
	ck_assert_int_eq(ordfs_getxattr(t->fs, f, name, got, (size_t)n - 1), -ERANGE);
	ck_assert_mem_eq(got, want.b, want.len);
}

static void expect_no_acl(struct test_fs *t, struct inode *f, const char *name)
{
	ck_assert_int_eq(ordfs_getxattr(t->fs, f, name, NULL, 0), -ENODATA);
}

static uint16_t perms(struct inode *f)
{
	return f->d.mode & 07777;
}

static uint64_t reserved_blocks(struct test_fs *t)
{
	struct alloc_counts c;
	alloc_get_counts(t->fs->alloc, &c);
	return c.reserved_blocks;
}

START_TEST(test_set_access_acl_sets_mode)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", S_ISUID | 0600, &root_cred, &f), 0);

	set_acl(&t, f, ACCESS, "u::7 u:1000:6 g::4 g:50:6 m::6 o::4");
	ck_assert_uint_eq(perms(f), S_ISUID | 0764); /* group bits: the mask */
	ck_assert_uint_ne(f->d.xattr_block, 0);
	expect_acl(&t, f, ACCESS, "u::7 u:1000:6 g::4 g:50:6 m::6 o::4");
	size_t len;
	char list[128];
	len = (size_t)ordfs_listxattr(t.fs, f, list, sizeof(list));
	ck_assert_uint_eq(len, sizeof(ACCESS));
	ck_assert_str_eq(list, ACCESS);

	/* The stored value is the compact form: 10 + 5 per named entry. */
	uint8_t *raw;
	uint32_t rlen;
	ordfs_rwlock_rdlock(&f->lock);
	ck_assert_int_eq(xattr_get_ns_locked(t.fs, f, ORDFS_XATTR_NS_POSIX_ACL_ACCESS, &raw, &rlen),
			 0);
	ordfs_rwlock_unlock(&f->lock);
	ck_assert_uint_eq(rlen, 10 + 5 * 2);
	free(raw);

	/* Replacing it with one the mode can say: no attribute, mode set. */
	set_acl(&t, f, ACCESS, "u::6 g::0 o::0");
	ck_assert_uint_eq(perms(f), S_ISUID | 0600);
	expect_no_acl(&t, f, ACCESS);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	/* An equivalent one on an inode without ACL: only the mode. */
	set_acl(&t, f, ACCESS, "u::7 g::5 o::5");
	ck_assert_uint_eq(perms(f), S_ISUID | 0755);
	expect_no_acl(&t, f, ACCESS);

	/* Removing: the mode stays (as on Linux); removing nothing is fine. */
	set_acl(&t, f, ACCESS, "u::7 g::5 m::5 o::5"); /* a mask: stored */
	expect_acl(&t, f, ACCESS, "u::7 g::5 m::5 o::5");
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, ACCESS), 0);
	expect_no_acl(&t, f, ACCESS);
	ck_assert_uint_eq(perms(f), S_ISUID | 0755);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, ACCESS), 0);
	/* An empty value or a header alone removes, too. */
	set_acl(&t, f, ACCESS, "u::7 u:5:7 g::5 m::7 o::5");
	set_acl(&t, f, ACCESS, "");
	expect_no_acl(&t, f, ACCESS);
	set_acl(&t, f, ACCESS, "u::7 u:5:7 g::5 m::7 o::5");
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, ACCESS, "", 0, 0), 0);
	expect_no_acl(&t, f, ACCESS);
	ck_assert_uint_eq(f->d.xattr_block, 0);

	/* Persistence: value and mode, across a remount. */
	set_acl(&t, f, ACCESS, "u::6 u:1000:6 g::4 m::6 o::0");
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "f", &f), 0);
	ck_assert_uint_eq(perms(f), S_ISUID | 0660);
	expect_acl(&t, f, ACCESS, "u::6 u:1000:6 g::4 m::6 o::0");
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t); /* the checker accepts a valid ACL */
}
END_TEST

/* posix_acl_update_mode: a caller that is neither in the file's group nor
 * holds CAP_FSETID loses the set-group-ID bit by setting an access ACL
 * (xfstests generic/375); the group's members and CAP_FSETID keep it. */
START_TEST(test_set_access_acl_clears_setgid)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", S_ISGID | 0770, &root_cred, &f), 0);
	f->d.uid = 1000;
	f->d.gid = 50;
	struct xv v;
	xv_build(&v, "u::7 u:1001:7 g::7 m::7 o::0");
	uint32_t other_groups[] = { 60, 70 }, member_groups[] = { 60, 50 };
	struct ordfs_caller in_group = { { 1000, 1000 }, member_groups, 2, false };
	struct ordfs_caller privileged = { { 1000, 1000 }, other_groups, 2, true };
	struct ordfs_caller outsider = { { 1000, 1000 }, other_groups, 2, false };

	ck_assert_int_eq(ordfs_setxattr_by(t.fs, f, ACCESS, v.b, v.len, 0, &in_group), 0);
	ck_assert_uint_eq(perms(f), S_ISGID | 0770);
	ck_assert_int_eq(ordfs_setxattr_by(t.fs, f, ACCESS, v.b, v.len, 0, &privileged), 0);
	ck_assert_uint_eq(perms(f), S_ISGID | 0770);
	ck_assert_int_eq(ordfs_setxattr_by(t.fs, f, ACCESS, v.b, v.len, 0, &outsider), 0);
	ck_assert_uint_eq(perms(f), 0770);
	expect_acl(&t, f, ACCESS, "u::7 u:1001:7 g::7 m::7 o::0");
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_set_errors_change_nothing)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f, *d, *l;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0640, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0750, &root_cred, &d), 0);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "l", "f", &root_cred, &l), 0);
	set_acl(&t, f, ACCESS, "u::6 u:9:4 g::4 m::4 o::0");

	struct xv v;
	xv_build(&v, "u::7 u:9:4 g::4 o::0"); /* no mask */
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, ACCESS, v.b, v.len, 0), -EINVAL);
	xv_build_version(&v, "u::7 g::4 o::0", 1);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, ACCESS, v.b, v.len, 0), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, ACCESS, "junk", 4, 0), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, ACCESS, "ju", 2, 0), -EINVAL);
	ck_assert_uint_eq(perms(f), 0640);
	expect_acl(&t, f, ACCESS, "u::6 u:9:4 g::4 m::4 o::0");

	/* Default ACLs: directories only; removing one elsewhere is a no-op. */
	xv_build(&v, "u::7 g::5 o::0");
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, DEFAULT, v.b, v.len, 0), -EACCES);
	ck_assert_int_eq(ordfs_removexattr(t.fs, f, DEFAULT), 0);
	expect_no_acl(&t, f, DEFAULT);
	/* A minimal default ACL is stored (it is not the mode). */
	set_acl(&t, d, DEFAULT, "u::7 g::5 o::0");
	expect_acl(&t, d, DEFAULT, "u::7 g::5 o::0");
	ck_assert_uint_eq(perms(d), 0750);
	expect_no_acl(&t, d, ACCESS);

	/* Symlinks have none. */
	ck_assert_int_eq(ordfs_setxattr(t.fs, l, ACCESS, v.b, v.len, 0), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_setxattr(t.fs, l, DEFAULT, v.b, v.len, 0), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_getxattr(t.fs, l, ACCESS, NULL, 0), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_removexattr(t.fs, l, ACCESS), -EOPNOTSUPP);
	ck_assert_uint_eq(l->d.xattr_block, 0);

	/* XATTR_CREATE/REPLACE do not apply to ACLs (as Linux). */
	set_acl(&t, f, ACCESS, "u::6 u:9:4 g::4 m::6 o::0");
	xv_build(&v, "u::6 u:9:6 g::4 m::6 o::0");
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, ACCESS, v.b, v.len, XATTR_CREATE), 0);
	expect_acl(&t, f, ACCESS, "u::6 u:9:6 g::4 m::6 o::0");

	inode_put(t.fs, l);
	inode_put(t.fs, d);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_chmod_updates_acl)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f, *d;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0600, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0700, &root_cred, &d), 0);
	set_acl(&t, f, ACCESS, "u::6 u:1000:7 g::4 m::6 o::0");
	set_acl(&t, d, DEFAULT, "u::7 u:1000:7 g::5 m::7 o::0");
	set_acl(&t, d, ACCESS, "u::7 g::5 m::5 o::0");

	struct ordfs_setattr sa = { .valid = ORDFS_SET_MODE, .mode = 0751 };
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	ck_assert_uint_eq(perms(f), 0751);
	expect_acl(&t, f, ACCESS, "u::7 u:1000:7 g::4 m::5 o::1");
	sa.mode = 0;
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	expect_acl(&t, f, ACCESS, "u::0 u:1000:7 g::4 m::0 o::0");

	/* Directories: the access ACL follows, the default ACL does not. */
	sa.mode = 0770;
	ck_assert_int_eq(ordfs_setattr(t.fs, d, &sa), 0);
	expect_acl(&t, d, ACCESS, "u::7 g::5 m::7 o::0");
	expect_acl(&t, d, DEFAULT, "u::7 u:1000:7 g::5 m::7 o::0");

	/* chmod of an inode without an ACL adds none. */
	struct inode *plain;
	ck_assert_int_eq(ordfs_create(t.fs, root, "plain", 0600, &root_cred, &plain), 0);
	ck_assert_int_eq(ordfs_setattr(t.fs, plain, &sa), 0);
	expect_no_acl(&t, plain, ACCESS);
	ck_assert_uint_eq(plain->d.xattr_block, 0);

	/* Persistent, and the checker agrees. */
	inode_put(t.fs, plain);
	inode_put(t.fs, d);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "f", &f), 0);
	expect_acl(&t, f, ACCESS, "u::0 u:1000:7 g::4 m::0 o::0");
	ck_assert_uint_eq(perms(f), 0);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- inheritance ------------------------------------------------------------------ */

START_TEST(test_inheritance)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *d, *f, *sub, *fifo, *dev, *link, *deep, *plain;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &root_cred, &d), 0);
	set_acl(&t, d, DEFAULT, "u::7 u:1000:7 g::5 g:50:7 m::7 o::0");

	/* A file: the create mode masks the default ACL, the umask is not
	 * applied (022 would have left group and other read bits). */
	ck_assert_int_eq(ordfs_create_umask(t.fs, d, "f", 0666, 022, &root_cred, &f), 0);
	ck_assert_uint_eq(perms(f), 0660);
	expect_acl(&t, f, ACCESS, "u::6 u:1000:7 g::5 g:50:7 m::6 o::0");
	expect_no_acl(&t, f, DEFAULT);

	/* A directory: the access ACL and the default ACL itself. */
	ck_assert_int_eq(ordfs_mkdir_umask(t.fs, d, "sub", 0777, 077, &root_cred, &sub), 0);
	ck_assert_uint_eq(perms(sub), 0770);
	expect_acl(&t, sub, ACCESS, "u::7 u:1000:7 g::5 g:50:7 m::7 o::0");
	expect_acl(&t, sub, DEFAULT, "u::7 u:1000:7 g::5 g:50:7 m::7 o::0");

	/* Device nodes and FIFOs inherit; symlinks do not. */
	ck_assert_int_eq(ordfs_mknod_umask(t.fs, d, "fifo", S_IFIFO | 0644, 0, 022, &root_cred,
					   &fifo), 0);
	ck_assert_uint_eq(fifo->d.mode, S_IFIFO | 0640);
	expect_acl(&t, fifo, ACCESS, "u::6 u:1000:7 g::5 g:50:7 m::4 o::0");
	ck_assert_int_eq(ordfs_mknod(t.fs, d, "dev", S_IFCHR | 0666, 0x0103, &root_cred, &dev), 0);
	ck_assert_uint_eq(dev->d.mode, S_IFCHR | 0660);
	expect_acl(&t, dev, ACCESS, "u::6 u:1000:7 g::5 g:50:7 m::6 o::0");
	ck_assert_int_eq(ordfs_symlink(t.fs, d, "link", "f", &root_cred, &link), 0);
	ck_assert_uint_eq(link->d.mode, S_IFLNK | 0777);
	ck_assert_uint_eq(link->d.xattr_block, 0);

	/* It carries on down the tree. */
	ck_assert_int_eq(ordfs_create_umask(t.fs, sub, "deep", 0640, 0, &root_cred, &deep), 0);
	expect_acl(&t, deep, ACCESS, "u::6 u:1000:7 g::5 g:50:7 m::4 o::0");
	ck_assert_uint_eq(perms(deep), 0640);

	/* Without a default ACL the umask applies and nothing is inherited. */
	ck_assert_int_eq(ordfs_create_umask(t.fs, root, "plain", 0666, 022, &root_cred, &plain), 0);
	ck_assert_uint_eq(perms(plain), 0644);
	ck_assert_uint_eq(plain->d.xattr_block, 0);
	ck_assert_uint_eq(reserved_blocks(&t), 0); /* every reservation used or given back */

	struct inode *all[] = { plain, deep, link, dev, fifo, sub, f, d, root };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		inode_put(t.fs, all[i]);
	tfs_unmount(&t);
	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "d/sub/deep", &deep), 0);
	expect_acl(&t, deep, ACCESS, "u::6 u:1000:7 g::5 g:50:7 m::4 o::0");
	inode_put(t.fs, deep);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_inherit_minimal_default)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *d, *f, *sub;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0777, &root_cred, &d), 0);
	set_acl(&t, d, DEFAULT, "u::7 g::5 o::5");
	/* Equivalent to a mode: no access ACL, no block; still no umask. */
	ck_assert_int_eq(ordfs_create_umask(t.fs, d, "f", 0666, 077, &root_cred, &f), 0);
	ck_assert_uint_eq(perms(f), 0644);
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_int_eq(ordfs_mkdir_umask(t.fs, d, "sub", 0777, 077, &root_cred, &sub), 0);
	ck_assert_uint_eq(perms(sub), 0755);
	expect_no_acl(&t, sub, ACCESS);
	expect_acl(&t, sub, DEFAULT, "u::7 g::5 o::5");
	inode_put(t.fs, sub);
	inode_put(t.fs, f);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* A directory's ACLs twice over do not fit a 1 KiB block: mkdir is refused
 * before anything changes; a file (access ACL only) still fits. */
START_TEST(test_inherit_too_big)
{
	struct test_fs t;
	tfs_setup(&t, 8 << 20, 1024, 0);
	struct inode *root = tfs_root(&t), *d, *f, *sub;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0777, &root_cred, &d), 0);
	char spec[2048] = "u::7";
	for (int i = 0; i < 150; i++) {
		char e[32];
		snprintf(e, sizeof(e), " u:%d:5", 1000 + i);
		strcat(spec, e);
	}
	strcat(spec, " g::5 m::7 o::0");
	set_acl(&t, d, DEFAULT, spec);
	uint64_t blocks = d->d.blocks;
	uint32_t links = d->d.links;
	ck_assert_int_eq(ordfs_mkdir(t.fs, d, "sub", 0777, &root_cred, &sub), -ENOSPC);
	ck_assert_int_eq(ordfs_lookup(t.fs, d, "sub", &sub), -ENOENT);
	ck_assert_uint_eq(d->d.blocks, blocks);
	ck_assert_uint_eq(d->d.links, links);
	ck_assert_uint_eq(reserved_blocks(&t), 0);
	ck_assert_int_eq(ordfs_create(t.fs, d, "f", 0644, &root_cred, &f), 0);
	ck_assert_uint_ne(f->d.xattr_block, 0);
	inode_put(t.fs, f);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Unlinking an inode with ACLs frees its block with it. */
START_TEST(test_acl_block_freed_with_inode)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *d, *f;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0777, &root_cred, &d), 0);
	set_acl(&t, d, DEFAULT, "u::7 u:5:7 g::5 m::7 o::0");
	struct inode *keep; /* gives d its directory block before the count */
	ck_assert_int_eq(ordfs_create(t.fs, d, "keep", 0644, &root_cred, &keep), 0);
	inode_put(t.fs, keep);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	struct ordfs_statfs before, after;
	ordfs_statfs(t.fs, &before);
	ck_assert_int_eq(ordfs_create(t.fs, d, "f", 0644, &root_cred, &f), 0);
	uint64_t blk = f->d.xattr_block;
	ck_assert_uint_ne(blk, 0);
	ck_assert(alloc_block_in_use(t.fs->alloc, blk));
	inode_put(t.fs, f);
	ck_assert_int_eq(ordfs_unlink(t.fs, d, "f"), 0);
	ck_assert(!alloc_block_in_use(t.fs->alloc, blk));
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	ordfs_statfs(t.fs, &after);
	ck_assert_uint_eq(after.blocks_free, before.blocks_free);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- ordfs_permission --------------------------------------------------------- */

START_TEST(test_permission_through_fs)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	const struct ordfs_cred owner = { 100, 100 };
	struct inode *root = tfs_root(&t), *f, *x;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0600, &owner, &f), 0);
	ck_assert_uint_eq(f->d.uid, 100);
	set_acl(&t, f, ACCESS, "u::6 u:1000:7 g::4 g:50:6 m::6 o::4");
	const unsigned R = 4, W = 2, X = 1;
	static const uint32_t g50[] = { 50 };
	const struct ordfs_cred named = { 1000, 1 }, grp = { 2000, 100 }, other = { 2000, 1 },
				root_c = { 0, 0 };

	ck_assert_int_eq(ordfs_permission(t.fs, f, &owner, NULL, 0, R | W), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &owner, NULL, 0, X), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &named, NULL, 0, R | W), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &named, NULL, 0, X), -EACCES); /* mask */
	ck_assert_int_eq(ordfs_permission(t.fs, f, &grp, NULL, 0, R), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &grp, NULL, 0, W), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &other, g50, 1, W), 0); /* supplementary */
	ck_assert_int_eq(ordfs_permission(t.fs, f, &other, NULL, 0, R), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &other, NULL, 0, W), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &other, NULL, 1, R), -EINVAL);
	/* uid 0: read and write anything; execute only with an x bit. */
	ck_assert_int_eq(ordfs_permission(t.fs, f, &root_c, NULL, 0, R | W), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &root_c, NULL, 0, X), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, root, &other, NULL, 0, X), 0); /* 0755 */

	/* chmod narrows the mask, and the named user with it. */
	struct ordfs_setattr sa = { .valid = ORDFS_SET_MODE, .mode = 0644 };
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &named, NULL, 0, R), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &named, NULL, 0, W), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &other, g50, 1, W), -EACCES);
	/* Group bits all zero: Linux judges by the mode alone, so the named
	 * user gets "other" and the owning group gets nothing. */
	sa.mode = 0604;
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	expect_acl(&t, f, ACCESS, "u::6 u:1000:7 g::4 g:50:6 m::0 o::4");
	ck_assert_int_eq(ordfs_permission(t.fs, f, &named, NULL, 0, R), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, f, &grp, NULL, 0, R), -EACCES);

	/* Without an ACL: the mode bits as before. */
	ck_assert_int_eq(ordfs_create(t.fs, root, "x", 0750, &owner, &x), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, x, &grp, NULL, 0, R | X), 0);
	ck_assert_int_eq(ordfs_permission(t.fs, x, &grp, NULL, 0, W), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, x, &other, NULL, 0, R), -EACCES);
	ck_assert_int_eq(ordfs_permission(t.fs, x, &root_c, NULL, 0, X), 0);
	inode_put(t.fs, x);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- the checker ------------------------------------------------------------------ */

struct seen {
	int xattr_problems;
	char msg[256];
};

static void note_problem(void *ctx, enum check_problem code, const char *msg)
{
	struct seen *s = ctx;
	fprintf(stderr, "checker: [%d] %s\n", (int)code, msg);
	if (code == CHK_XATTR) {
		s->xattr_problems++;
		snprintf(s->msg, sizeof(s->msg), "%s", msg);
	}
}

/* A stored ACL damaged under a valid checksum: every use refuses the
 * block (-EUCLEAN) and the checker names the ACL as an xattr problem. */
START_TEST(test_checker_flags_malformed_acl)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0644, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.a", "1", 1, 0), 0);
	set_acl(&t, f, ACCESS, "u::6 u:7:6 u:9:4 g::4 m::6 o::4");
	uint64_t blk = f->d.xattr_block;
	uint32_t seed = t.fs->csum_seed, bs = t.fs->block_size;
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	ck_assert_int_eq(tfs_check_image(&t), 0);

	/* Entries: user.a (4 + 1 + 1 -> 8 bytes) at 32, the ACL at 40; its value
	 * at 44: make the two named users unsorted (9, 9). */
	uint8_t *b = blockdev_mem_bytes(t.mem) + blk * bs;
	ck_assert_uint_eq(b[40], ORDFS_XATTR_NS_POSIX_ACL_ACCESS);
	ck_assert_uint_eq(le_get32(b + 44 + 10), 7);
	le_put32(b + 44 + 10, 9);
	ordfs_block_csum_set(b, bs, seed);

	struct seen s = { 0 };
	struct check_result res = { .report = note_problem, .ctx = &s };
	ck_assert_int_eq(ordfs_check(t.mem, &res), 0);
	ck_assert_uint_eq(res.problems, 1);
	ck_assert_int_eq(s.xattr_problems, 1);
	ck_assert_msg(strstr(s.msg, "ACL") != NULL, "message: %s", s.msg);

	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "f", &f), 0);
	char buf[64];
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, ACCESS, buf, sizeof(buf)), -EUCLEAN);
	ck_assert_int_eq(ordfs_getxattr(t.fs, f, "user.a", buf, sizeof(buf)), -EUCLEAN);
	const struct ordfs_cred other = { 2000, 1 };
	ck_assert_int_eq(ordfs_permission(t.fs, f, &other, NULL, 0, 4), -EUCLEAN);
	inode_put(t.fs, f);
	tfs_unmount(&t);

	/* fsck's repair drops the damaged block; the image checks clean. */
	struct repair_result rr;
	ck_assert_int_eq(ordfs_repair(t.mem, 0, NULL, NULL, &rr), 0);
	ck_assert_uint_eq(rr.problems, 0);
	ck_assert_int_eq(tfs_check_image(&t), 0);
	tfs_free(&t);
}
END_TEST

static Suite *acl_suite(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_xattr_form_roundtrip);
	tcase_add_test(tc, test_xattr_form_validation);
	tcase_add_test(tc, test_disk_form_checks);
	tcase_add_test(tc, test_mode_rules);
	tcase_add_test(tc, test_permission_evaluation);
	tcase_add_test(tc, test_set_access_acl_sets_mode);
	tcase_add_test(tc, test_set_access_acl_clears_setgid);
	tcase_add_test(tc, test_set_errors_change_nothing);
	tcase_add_test(tc, test_chmod_updates_acl);
	tcase_add_test(tc, test_inheritance);
	tcase_add_test(tc, test_inherit_minimal_default);
	tcase_add_test(tc, test_inherit_too_big);
	tcase_add_test(tc, test_acl_block_freed_with_inode);
	tcase_add_test(tc, test_permission_through_fs);
	tcase_add_test(tc, test_checker_flags_malformed_acl);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(acl_suite());
}
