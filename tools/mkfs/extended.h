/*
 * extended.h - mkfs.ordfs's -E argument: the extended options, parsed.
 *
 * Owns: the syntax of -E key[=value][,...] and the validity of each value:
 *   root_owner[=UID:GID]  the owner of the root directory; without a value
 *                         the caller's real uid and gid (mke2fs's rule);
 *   mount_opts=OPTS       default mount options; takes the rest of the
 *                         argument, commas included, so it comes last.
 *
 * Rules:
 *  - Pure: no I/O, no globals, no output.  The caller's ids come in as
 *    arguments (so a test can give any), errors go out as one line in why
 *    (no trailing newline, no program name; what the user typed is quoted
 *    with control characters escaped, so it stays one line).
 *  - A UID or GID is decimal digits only (no sign, no spaces, no 0x),
 *    0 .. 4294967294 (4294967295 is (uid_t)-1, "no owner" to chown(2));
 *    both must be there, joined by one ':' and followed by nothing.
 *  - On an error *out is left as it was: a refused -E changes nothing.
 *  - Several -E arguments add up; a key given twice keeps the last value.
 */
#ifndef ORDFS_TOOLS_MKFS_EXTENDED_H
#define ORDFS_TOOLS_MKFS_EXTENDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

struct mkfs_extended {
	bool root_owner_set;      /* root_owner was given, with or without a value */
	uint32_t root_uid, root_gid;
	bool mount_opts_set;
	char mount_opts[ORDFS_MOUNT_OPTS_LEN + 1];
};

/* Checks a mount_opts= value beyond its length (mkfs.ordfs passes the
 * daemon's own check, tools/tune/mount_opts.c); 0 or -EINVAL with why.
 * NULL: only the length is checked. */
typedef int (*mkfs_mount_opts_check_fn)(const char *opts, char *why, size_t whylen);

/* Parses one -E argument into *out.  caller_uid/caller_gid: what
 * root_owner without a value means.  0, or -EINVAL with a one-line reason
 * in why. */
int mkfs_parse_extended(const char *arg, uint32_t caller_uid, uint32_t caller_gid,
			mkfs_mount_opts_check_fn check_mount_opts, struct mkfs_extended *out,
			char *why, size_t whylen);

/* "UID:GID" as root_owner= takes it; 0, or -EINVAL with why. */
int mkfs_parse_owner(const char *value, uint32_t *uid, uint32_t *gid, char *why,
		     size_t whylen);

#endif
