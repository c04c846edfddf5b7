/*
 * mount_opts.h - the image's default mount options (the superblock's
 * mount_opts) for tune.ordfs: editing the list as `tune2fs -o` does, and
 * deciding whether a list may be stored.
 *
 * Owns: the edit rules of `-o [^]option[,...]` and the validity rule of a
 * stored list.
 *
 * Rules:
 *  - A list may be stored only if the daemon would mount with it: it is
 *    checked by the daemon's own parser (src/daemon/options.c,
 *    daemon_parse_args_over, as `ordfs` reads the image's defaults at
 *    mount), so only ordfs's own options pass (no ro, allow_other, ...),
 *    and it must fit the superblock's 64 bytes.
 *  - Adding an option first drops the options it overrides: any with the
 *    same name (commit=5 goes when commit=10 comes; barrier, barrier=0),
 *    and the other members of its family (noatime replaces relatime,
 *    nobarrier replaces barrier); then it is appended.
 *  - `^name` removes the options with that name (`^commit` removes
 *    commit=10), `^name=value` only that exact option; removing something
 *    that is not in the list is an error (a typo must not pass silently).
 *  - Pure: no I/O; errors are one line in err (no trailing newline).
 */
#ifndef ORDFS_TOOLS_MOUNT_OPTS_H
#define ORDFS_TOOLS_MOUNT_OPTS_H

#include <stddef.h>

/* Room for a list while it is being edited (it must shrink to
 * ORDFS_MOUNT_OPTS_LEN before it can be stored). */
#define MOUNT_OPTS_WORK_LEN 1024u

/* 0 if opts may be stored in the superblock, else -EINVAL and why. */
int mount_opts_validate(const char *opts, char *err, size_t errlen);

/* Checks the syntax of one -o argument and that every option it adds is
 * one the daemon takes from an image (the list it ends in is checked by
 * mount_opts_validate once the image's list is known). */
int mount_opts_check_edits(const char *edits, char *err, size_t errlen);

/* Applies the -o argument `edits` to the list in opts (in place; opts has
 * MOUNT_OPTS_WORK_LEN bytes).  On error opts is unchanged. */
int mount_opts_apply(char *opts, const char *edits, char *err, size_t errlen);

#endif
