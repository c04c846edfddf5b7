/*
 * fuse_remount.c - the daemon's side of a remount (ORDFS_IOC_REMOUNT):
 * the options string parsed on top of the options in force, then
 * ordfs_remount (mount/remount.c) for what ordfs changes live.
 *
 * Rules: the string is parsed with the daemon's own option parser
 * (options.c), so every option means what it means at mount; what a
 * running daemon cannot change (the kernel's and libfuse's options such
 * as allow_other, writeback_cache, read_ahead_kb=, the NBD options,
 * io_uring=) is
 * refused with the reason and nothing changes.  "ro" and "rw" are
 * ordfs's: the kernel's own flag is the caller's business (the helper
 * runs mount(2) for it when it can; remount_client.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_glue.h"
#include "options.h"
#include "../fs.h"
#include "../ops.h"
#include "../stats/stats.h"

/* The first option in a libfuse list that a remount cannot pass on (all
 * but ro and rw), copied to out; false if none. */
static bool fuse_level_option(const char *list, char *out, size_t outlen)
{
	char copy[sizeof(((struct daemon_options *)0)->fuse_opts)];
	snprintf(copy, sizeof(copy), "%s", list);
	char *save = NULL;
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		if (strcmp(opt, "ro") != 0 && strcmp(opt, "rw") != 0) {
			snprintf(out, outlen, "%s", opt);
			return true;
		}
	}
	return false;
}

int daemon_remount(struct daemon_ctx *dc, const char *opts, char *reply, size_t replylen)
{
	struct daemon_options *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	*o = *dc->options; /* what the daemon was started with ... */
	ordfs_options_in_force(dc->fs, &o->fs); /* ... with ordfs's options as they are now */
	o->fuse_opts[0] = '\0';
	int err = daemon_parse_mount_opts(opts, o, reply, replylen);
	char bad[128];
	if (!err && fuse_level_option(o->fuse_opts, bad, sizeof(bad))) {
		snprintf(reply, replylen, "'%s' is not an ordfs option: a remount changes ordfs's "
			 "own options (and ro/rw)", bad);
		err = -EINVAL;
	} else if (!err && (o->writeback_cache != dc->options->writeback_cache ||
			    o->read_ahead_kb != dc->options->read_ahead_kb ||
			    o->nbd_timeout_ms != dc->options->nbd_timeout_ms ||
			    o->nbd_nofua != dc->options->nbd_nofua ||
			    o->io_uring != dc->options->io_uring)) {
		snprintf(reply, replylen, "writeback_cache, read_ahead_kb=, nbd_timeout=, nofua and "
			 "io_uring= cannot change on a mounted filesystem");
		err = -EINVAL;
	} else if (!err) {
		const char *why = NULL;
		err = ordfs_remount(dc->fs, &o->fs, &why);
		if (err) {
			snprintf(reply, replylen, "%s", why ? why : strerror(-err));
		} else {
			struct ordfs_options now;
			ordfs_options_in_force(dc->fs, &now);
			if (!now.errors)
				now.errors = dc->fs->sb.errors;
			ordfs_options_describe(&now, reply, replylen);
		}
	}
	free(o);
	return err;
}
