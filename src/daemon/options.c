/*
 * options.c - command line and -o parsing for the ordfs daemon.
 *
 * Rules: every option is validated here, before the image is opened or
 * the daemon forks, so a bad invocation fails at once with one line.
 * default_permissions is always passed to libfuse: the kernel then checks
 * permissions for every request, so allow_other never lets one user into
 * another's files (ordfs does not check permissions itself).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* Generic options forwarded to libfuse unchanged. */
static const char *const passthrough[] = {
	"rw", "ro", "dev", "nodev", "suid", "nosuid", "exec", "noexec",
	"allow_other", "default_permissions", "async", "sync", "dirsync",
	"auto", "noauto", "user", "nouser", "users", "_netdev", "nofail",
	NULL,
};

/* Options with a value forwarded to libfuse. */
static const char *const passthrough_prefix[] = { "fsname=", "subtype=", "max_read=", NULL };

/* Options the mount helpers add that mean nothing to a FUSE filesystem
 * (x-*: userspace options, e.g. x-systemd.automount; comment=: fstab). */
static const char *const ignored[] = { "defaults", "loop", NULL };
static const char *const ignored_prefix[] = { "x-", "comment=", "helper=", NULL };

static bool in_list(const char *const *list, const char *opt)
{
	for (; *list; list++)
		if (strcmp(*list, opt) == 0)
			return true;
	return false;
}

static bool has_prefix_in(const char *const *list, const char *opt)
{
	for (; *list; list++)
		if (strncmp(opt, *list, strlen(*list)) == 0)
			return true;
	return false;
}

static int fail(char *err, size_t errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -EINVAL;
}

static int append_fuse_opt(struct daemon_options *o, const char *opt, char *err, size_t errlen)
{
	size_t used = strlen(o->fuse_opts);
	size_t need = strlen(opt) + (used ? 1 : 0);
	if (used + need + 1 > sizeof(o->fuse_opts))
		return fail(err, errlen, "too many mount options (at '%s')", opt);
	if (used)
		strcat(o->fuse_opts, ",");
	strcat(o->fuse_opts, opt);
	return 0;
}

/* commit=SECONDS: 0 means the default (5), as on ext4. */
static int parse_commit(const char *val, struct daemon_options *o, char *err, size_t errlen)
{
	char *end;
	if (!*val)
		return fail(err, errlen, "commit= needs a number of seconds%s", "");
	unsigned long secs = strtoul(val, &end, 10);
	if (*end || val[0] == '-' || secs > 86400)
		return fail(err, errlen, "bad commit interval '%s' (0..86400 seconds)", val);
	o->fs.commit_interval_ms = secs ? (unsigned)secs * 1000u : 5000u;
	return 0;
}

/* dirty_limit=SIZE: bytes, with an optional K, M or G suffix (powers of
 * 1024); 0 means self-tuned (the default). */
static int parse_dirty_limit(const char *val, struct daemon_options *o, char *err,
			     size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(val, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (!*val || val[0] == '-' || *end || errno || n > (64ull << 30) >> shift ||
	    (n && (n << shift) < (1ull << 20)))
		return fail(err, errlen, "bad dirty_limit '%s' (0 for self-tuned, or 1M..64G)",
			    val);
	o->fs.dirty_limit_bytes = n << shift;
	return 0;
}

/* nbd_timeout=SECONDS: 1..3600. */
static int parse_nbd_timeout(const char *val, struct daemon_options *o, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long s = strtoul(val, &end, 10);
	if (!*val || val[0] == '-' || *end || errno || s < 1 || s > 3600)
		return fail(err, errlen, "bad nbd_timeout '%s' (1..3600 seconds)", val);
	o->nbd_timeout_ms = (unsigned)s * 1000u;
	return 0;
}

/* read_ahead_kb=N: KiB, 0 for the kernel's default, up to 64 MiB. */
static int parse_read_ahead(const char *val, struct daemon_options *o, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long kb = strtoul(val, &end, 10);
	if (!*val || val[0] == '-' || *end || errno || kb > 65536)
		return fail(err, errlen, "bad read_ahead_kb '%s' (0..65536 KiB)", val);
	o->read_ahead_kb = (unsigned)kb;
	o->read_ahead_given = true;
	return 0;
}

static int parse_one(const char *opt, struct daemon_options *o, char *err, size_t errlen)
{
	if (strncmp(opt, "data=", 5) == 0) {
		if (strcmp(opt + 5, "ordered") == 0)
			o->fs.data_mode = JOURNAL_DATA_ORDERED;
		else if (strcmp(opt + 5, "writeback") == 0)
			o->fs.data_mode = JOURNAL_DATA_WRITEBACK;
		else if (strcmp(opt + 5, "journal") == 0)
			o->fs.data_mode = JOURNAL_DATA_JOURNAL;
		else
			return fail(err, errlen,
				    "bad data mode '%s' (ordered, writeback or journal)", opt + 5);
		return 0;
	}
	if (strncmp(opt, "commit=", 7) == 0)
		return parse_commit(opt + 7, o, err, errlen);
	if (strncmp(opt, "dirty_limit=", 12) == 0)
		return parse_dirty_limit(opt + 12, o, err, errlen);
	if (strncmp(opt, "journal_ioprio=", 15) == 0) {
		const char *v = opt + 15;
		if (v[0] < '0' || v[0] > '7' || v[1])
			return fail(err, errlen, "bad journal_ioprio '%s' (0..7)", v);
		o->fs.journal_ioprio = (unsigned)(v[0] - '0');
		return 0;
	}
	if (strncmp(opt, "read_ahead_kb=", 14) == 0)
		return parse_read_ahead(opt + 14, o, err, errlen);
	if (strncmp(opt, "nbd_timeout=", 12) == 0)
		return parse_nbd_timeout(opt + 12, o, err, errlen);
	if (strcmp(opt, "fua") == 0 || strcmp(opt, "nofua") == 0) {
		o->nbd_nofua = opt[0] == 'n';
		return 0;
	}
	if (strcmp(opt, "writeback_cache") == 0 || strcmp(opt, "nowriteback_cache") == 0) {
		o->writeback_cache = opt[0] == 'w';
		return 0;
	}
	if (strncmp(opt, "io_uring=", 9) == 0) {
		int m = transport_uring_mode_parse(opt + 9);
		if (m < 0)
			return fail(err, errlen, "bad io_uring '%s' (off, auto or on)", opt + 9);
		o->io_uring = (enum transport_uring_mode)m;
		return 0;
	}
	if (strcmp(opt, "discard") == 0 || strcmp(opt, "nodiscard") == 0) {
		o->fs.discard = opt[0] == 'd';
		return 0;
	}
	if (strcmp(opt, "barrier") == 0 || strcmp(opt, "barrier=1") == 0) {
		o->fs.barrier = true;
		return 0;
	}
	if (strcmp(opt, "nobarrier") == 0 || strcmp(opt, "barrier=0") == 0) {
		o->fs.barrier = false;
		return 0;
	}
	if (strncmp(opt, "flush_error=", 12) == 0) {
		int p = flush_error_policy_parse(opt + 12);
		if (p < 0)
			return fail(err, errlen, "bad flush_error policy '%s' "
				    "(report, ignore, remount-ro or abort)", opt + 12);
		o->fs.flush_error = (enum flush_error_policy)p;
		return 0;
	}
	if (strncmp(opt, "errors=", 7) == 0) {
		const char *v = opt + 7;
		if (strcmp(v, "continue") == 0)
			o->fs.errors = ORDFS_ERRORS_CONTINUE;
		else if (strcmp(v, "remount-ro") == 0)
			o->fs.errors = ORDFS_ERRORS_RO;
		else if (strcmp(v, "abort") == 0 || strcmp(v, "panic") == 0)
			o->fs.errors = ORDFS_ERRORS_ABORT;
		else
			return fail(err, errlen, "bad errors policy '%s' "
				    "(continue, remount-ro or abort)", v);
		return 0;
	}
	if (atime_parse_option(opt, &o->fs.atime))
		return 0;
	if (strcmp(opt, "ro") == 0)
		o->fs.readonly = true;
	if (strcmp(opt, "rw") == 0)
		o->fs.readonly = false;
	if (in_list(ignored, opt) || has_prefix_in(ignored_prefix, opt))
		return 0;
	if (in_list(passthrough, opt) || has_prefix_in(passthrough_prefix, opt))
		return append_fuse_opt(o, opt, err, errlen);
	return fail(err, errlen, "unknown mount option '%s'", opt);
}

/* Parses a comma-separated list.  The image's defaults (from_image,
 * mkfs.ordfs -E mount_opts=) may hold only ordfs's own options. */
static int parse_list(const char *opts, bool from_image, struct daemon_options *o, char *err,
		      size_t errlen)
{
	char *copy = strdup(opts);
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	char *save = NULL;
	for (char *opt = strtok_r(copy, ",", &save); opt && !rc; opt = strtok_r(NULL, ",", &save)) {
		if (!from_image) {
			rc = parse_one(opt, o, err, errlen);
		} else if (in_list(passthrough, opt) || has_prefix_in(passthrough_prefix, opt) ||
			   in_list(ignored, opt) || has_prefix_in(ignored_prefix, opt)) {
			rc = fail(err, errlen, "the image's default mount option '%s' is not an "
				  "ordfs option", opt);
		} else {
			char one[128];
			rc = parse_one(opt, o, one, sizeof(one));
			if (rc)
				snprintf(err, errlen, "the image's default mount options: %s", one);
		}
	}
	free(copy);
	return rc;
}

int daemon_parse_mount_opts(const char *opts, struct daemon_options *o, char *err,
			    size_t errlen)
{
	return parse_list(opts, false, o, err, errlen);
}

int daemon_parse_args(int argc, char **argv, struct daemon_options *o, char *err,
		      size_t errlen)
{
	return daemon_parse_args_over(argc, argv, NULL, o, err, errlen);
}

/* The mount's source and type as /proc/mounts shows them, unless given:
 * "IMAGE MOUNTPOINT fuse.ordfs", so umount(8) finds umount.fuse.ordfs and
 * that helper finds the image.  Commas and backslashes in the path are
 * escaped for libfuse's option parser. */
static int add_mount_identity(struct daemon_options *o, char *err, size_t errlen)
{
	const char *given = strstr(o->fuse_opts, "fsname=");
	if (given) {
		/* as given (unescaped, up to the next unescaped comma) */
		size_t k = 0;
		for (const char *p = given + 7; *p && *p != ',' && k + 1 < sizeof(o->source); p++) {
			if (*p == '\\' && p[1])
				p++;
			o->source[k++] = *p;
		}
		o->source[k] = '\0';
	} else {
		char *abs = realpath(o->image, NULL);
		const char *path = abs ? abs : o->image;
		snprintf(o->source, sizeof(o->source), "%s", path);
		char opt[PATH_MAX * 2 + 8] = "fsname=";
		size_t k = strlen(opt);
		for (const char *p = path; *p && k + 2 < sizeof(opt); p++) {
			if (*p == ',' || *p == '\\')
				opt[k++] = '\\';
			opt[k++] = *p;
		}
		opt[k] = '\0';
		free(abs);
		int rc = append_fuse_opt(o, opt, err, errlen);
		if (rc)
			return rc;
	}
	if (!strstr(o->fuse_opts, "subtype="))
		return append_fuse_opt(o, "subtype=ordfs", err, errlen);
	return 0;
}

int daemon_parse_args_over(int argc, char **argv, const char *image_defaults,
			   struct daemon_options *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	ordfs_options_default(&o->fs);
	o->read_ahead_kb = DAEMON_DEFAULT_READ_AHEAD_KB;
	o->io_uring = TRANSPORT_URING_AUTO;
	strcpy(o->fuse_opts, "default_permissions");
	if (image_defaults && *image_defaults) {
		int rc = parse_list(image_defaults, true, o, err, errlen);
		if (rc)
			return rc;
	}

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rc = 0;
		if (strcmp(a, "-o") == 0) {
			if (++i >= argc)
				return fail(err, errlen, "option -o needs a value%s", "");
			rc = daemon_parse_mount_opts(argv[i], o, err, errlen);
		} else if (strncmp(a, "-o", 2) == 0) {
			rc = daemon_parse_mount_opts(a + 2, o, err, errlen);
		} else if (strcmp(a, "-f") == 0) {
			o->foreground = true;
		} else if (strcmp(a, "-d") == 0) {
			o->debug = o->foreground = true;
		} else if (strcmp(a, "-s") == 0) {
			o->single_thread = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->show_help = true;
			return 0;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			o->show_version = true;
			return 0;
		} else if (a[0] == '-' && a[1]) {
			return fail(err, errlen, "unknown option '%s' (see --help)", a);
		} else if (!o->image) {
			o->image = a;
		} else if (!o->mountpoint) {
			o->mountpoint = a;
		} else {
			return fail(err, errlen, "unexpected argument '%s'", a);
		}
		if (rc)
			return rc;
	}
	if (!o->image)
		return fail(err, errlen, "missing IMAGE (usage: ordfs IMAGE MOUNTPOINT [-o opts])%s",
			    "");
	if (!o->mountpoint)
		return fail(err, errlen, "missing MOUNTPOINT (usage: ordfs IMAGE MOUNTPOINT [-o opts])%s",
			    "");
	/* The kernel shows noatime for a noatime mount (libfuse passes it on;
	 * it knows no strictatime): mount(8)'s remount repeats what the
	 * kernel shows (remount_client.h). */
	if (o->fs.atime.mode == ATIME_NOATIME) {
		int rc = append_fuse_opt(o, "noatime", err, errlen);
		if (rc)
			return rc;
	}
	return add_mount_identity(o, err, errlen);
}

bool daemon_args_remount(int argc, char **argv, const char **mountpoint, char *opts,
			 size_t optslen)
{
	bool remount = false;
	int positional = 0;
	*mountpoint = NULL;
	opts[0] = '\0';
	for (int i = 1; i < argc; i++) {
		const char *list = NULL;
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			list = argv[++i];
		else if (strncmp(argv[i], "-o", 2) == 0 && argv[i][2])
			list = argv[i] + 2;
		else if (argv[i][0] != '-' && ++positional == 2)
			*mountpoint = argv[i];
		if (!list)
			continue;
		size_t used = strlen(opts);
		snprintf(opts + used, optslen - used, "%s%s", used ? "," : "", list);
		char *copy = strdup(list);
		char *save = NULL;
		for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
			remount |= strcmp(t, "remount") == 0;
		free(copy);
	}
	return remount && *mountpoint;
}
