/*
 * test_mkfs_extended.c - mkfs.ordfs's -E parser (tools/mkfs/extended.c),
 * a pure function: root_owner with and without a value, every malformed
 * value refused with a reason and nothing changed, mount_opts= taking the
 * rest of the argument, and the list syntax around them.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "extended.h"

#define CALLER_UID 1234u
#define CALLER_GID 5678u

static char why[256];

static int parse(const char *arg, mkfs_mount_opts_check_fn check, struct mkfs_extended *x)
{
	why[0] = '\0';
	return mkfs_parse_extended(arg, CALLER_UID, CALLER_GID, check, x, why, sizeof(why));
}

/* Refused with a one-line reason, *x exactly as before. */
static void refused(const char *arg, mkfs_mount_opts_check_fn check, const char *word)
{
	struct mkfs_extended x, before;
	memset(&x, 0xa5, sizeof(x));
	x.mount_opts[sizeof(x.mount_opts) - 1] = '\0';
	before = x;
	ck_assert_msg(parse(arg, check, &x) == -EINVAL, "'%s' was accepted", arg);
	ck_assert_msg(memcmp(&x, &before, sizeof(x)) == 0, "'%s' changed the result", arg);
	ck_assert_msg(strlen(why) > 10 && !strchr(why, '\n'), "'%s': reason '%s'", arg, why);
	ck_assert_msg(strstr(why, word), "'%s': reason '%s' lacks '%s'", arg, why, word);
}

/* A stand-in for the daemon's check: refuses any list naming "bogus". */
static int fake_check(const char *opts, char *reason, size_t len)
{
	if (strstr(opts, "bogus")) {
		snprintf(reason, len, "unknown option 'bogus'");
		return -EINVAL;
	}
	return 0;
}

START_TEST(test_root_owner_value)
{
	struct mkfs_extended x = { 0 };
	ck_assert_int_eq(parse("root_owner=1000:100", NULL, &x), 0);
	ck_assert(x.root_owner_set);
	ck_assert_uint_eq(x.root_uid, 1000);
	ck_assert_uint_eq(x.root_gid, 100);
	ck_assert(!x.mount_opts_set);

	ck_assert_int_eq(parse("root_owner=0:0", NULL, &x), 0);
	ck_assert_uint_eq(x.root_uid, 0);
	ck_assert_uint_eq(x.root_gid, 0);
	/* the largest id: (uid_t)-1 is one more */
	ck_assert_int_eq(parse("root_owner=4294967294:4294967294", NULL, &x), 0);
	ck_assert_uint_eq(x.root_uid, 4294967294u);
	ck_assert_uint_eq(x.root_gid, 4294967294u);
	/* leading zeros are still decimal */
	ck_assert_int_eq(parse("root_owner=0010:007", NULL, &x), 0);
	ck_assert_uint_eq(x.root_uid, 10);
	ck_assert_uint_eq(x.root_gid, 7);
}
END_TEST

START_TEST(test_root_owner_alone_is_the_caller)
{
	struct mkfs_extended x = { 0 };
	ck_assert_int_eq(parse("root_owner", NULL, &x), 0);
	ck_assert(x.root_owner_set);
	ck_assert_uint_eq(x.root_uid, CALLER_UID);
	ck_assert_uint_eq(x.root_gid, CALLER_GID);
	/* and in a list */
	memset(&x, 0, sizeof(x));
	ck_assert_int_eq(parse("root_owner,mount_opts=noatime", NULL, &x), 0);
	ck_assert_uint_eq(x.root_uid, CALLER_UID);
	ck_assert_str_eq(x.mount_opts, "noatime");
}
END_TEST

START_TEST(test_root_owner_malformed)
{
	static const char *const bad[] = {
		"root_owner=abc", "root_owner=1:", "root_owner=:2", "root_owner=:",
		"root_owner=", "root_owner=1", "root_owner=1:2:3", "root_owner=1:2x",
		"root_owner=x1:2", "root_owner=+1:2", "root_owner=-1:2", "root_owner=1:-2",
		"root_owner= 1:2", "root_owner=1 :2", "root_owner=1: 2", "root_owner=1:2 ",
		"root_owner=0x10:1", "root_owner=1:2\n", "root_owner=4294967295:0",
		"root_owner=0:4294967295", "root_owner=99999999999999999999:0",
		"root_owner=18446744073709551617:1",
		"root_owner=1:0000000000000000000000000000000000000000000000000000000000000000001",
		"root_owner=1;2", "root_owner=1.2",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i], NULL, "root_owner");
}
END_TEST

START_TEST(test_owner_alone)
{
	uint32_t u = 7, g = 7;
	ck_assert_int_eq(mkfs_parse_owner("65534:65534", &u, &g, why, sizeof(why)), 0);
	ck_assert_uint_eq(u, 65534);
	ck_assert_uint_eq(g, 65534);
	ck_assert_int_eq(mkfs_parse_owner("65534", &u, &g, why, sizeof(why)), -EINVAL);
	ck_assert_uint_eq(u, 65534); /* untouched */
}
END_TEST

START_TEST(test_mount_opts_takes_the_rest)
{
	struct mkfs_extended x = { 0 };
	ck_assert_int_eq(parse("root_owner=1:2,mount_opts=noatime,commit=10", fake_check, &x), 0);
	ck_assert(x.root_owner_set);
	ck_assert(x.mount_opts_set);
	ck_assert_str_eq(x.mount_opts, "noatime,commit=10");
	/* after mount_opts=, root_owner is one of the mount options */
	memset(&x, 0, sizeof(x));
	ck_assert_int_eq(parse("mount_opts=noatime,root_owner", NULL, &x), 0);
	ck_assert(!x.root_owner_set);
	ck_assert_str_eq(x.mount_opts, "noatime,root_owner");
	/* an empty value clears them */
	ck_assert_int_eq(parse("mount_opts=", fake_check, &x), 0);
	ck_assert(x.mount_opts_set);
	ck_assert_str_eq(x.mount_opts, "");
}
END_TEST

START_TEST(test_mount_opts_refused)
{
	refused("mount_opts=noatime,bogus", fake_check, "bogus");
	refused("root_owner=1:2,mount_opts=bogus", fake_check, "bogus"); /* root_owner not kept */
	refused("mount_opts=0123456789012345678901234567890123456789012345678901234567890123X",
		NULL, "64 bytes");
	refused("mount_opts", NULL, "mount_opts");
}
END_TEST

START_TEST(test_list_syntax)
{
	refused("", NULL, "empty");
	refused(",", NULL, "empty");
	refused("root_owner,", NULL, "empty");
	refused(",root_owner", NULL, "empty");
	refused("root_owner,,root_owner", NULL, "empty");
	refused("stride=4", NULL, "unknown extended option 'stride'");
	refused("root_owner=1:2,stride=4", NULL, "stride"); /* nothing kept */
	refused("root_ownerx", NULL, "root_ownerx");
	refused("Root_owner", NULL, "Root_owner");
}
END_TEST

START_TEST(test_several_arguments_add_up)
{
	struct mkfs_extended x = { 0 };
	ck_assert_int_eq(parse("mount_opts=noatime", NULL, &x), 0);
	ck_assert_int_eq(parse("root_owner=3:4", NULL, &x), 0);
	ck_assert_str_eq(x.mount_opts, "noatime");
	ck_assert_uint_eq(x.root_uid, 3);
	ck_assert_int_eq(parse("root_owner=5:6,root_owner=7:8", NULL, &x), 0);
	ck_assert_uint_eq(x.root_uid, 7); /* the last one */
	ck_assert_uint_eq(x.root_gid, 8);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mkfs -E");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, test_root_owner_value);
	tcase_add_test(tc, test_root_owner_alone_is_the_caller);
	tcase_add_test(tc, test_root_owner_malformed);
	tcase_add_test(tc, test_owner_alone);
	tcase_add_test(tc, test_mount_opts_takes_the_rest);
	tcase_add_test(tc, test_mount_opts_refused);
	tcase_add_test(tc, test_list_syntax);
	tcase_add_test(tc, test_several_arguments_add_up);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
