/*
 * mount_opts.c - editing and validating the image's default mount options
 * for tune.ordfs (see mount_opts.h for the rules).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mount_opts.h"
#include "daemon/options.h"
#include "format/format.h"

#define MAX_OPTS (MOUNT_OPTS_WORK_LEN / 2u) /* "a,a,a...": at most this many */

/* Options of which only the last one counts: adding one drops the others.
 * (Options with a value are grouped by their name, see overrides().) */
static const char *const families[][6] = {
	{ "barrier", "nobarrier", NULL },
	{ "relatime", "strictatime", "norelatime", "atime", "noatime", NULL },
	{ "diratime", "nodiratime", NULL },
	{ "lazytime", "nolazytime", NULL },
};

struct opt_list {
	const char *v[MAX_OPTS];
	unsigned n;
};

static size_t name_len(const char *opt)
{
	return strcspn(opt, "=");
}

static bool same_name(const char *a, const char *b)
{
	size_t la = name_len(a);
	return la == name_len(b) && memcmp(a, b, la) == 0;
}

static int family_of(const char *opt)
{
	size_t len = name_len(opt);
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (const char *const *m = families[f]; *m; m++)
			if (strlen(*m) == len && memcmp(*m, opt, len) == 0)
				return (int)f;
	return -1;
}

/* Does adding `new_opt` make `old` meaningless? */
static bool overrides(const char *new_opt, const char *old)
{
	if (same_name(new_opt, old))
		return true;
	int f = family_of(new_opt);
	return f >= 0 && f == family_of(old);
}

static int fail(char *err, size_t errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -EINVAL;
}

int mount_opts_validate(const char *opts, char *err, size_t errlen)
{
	if (strlen(opts) > ORDFS_MOUNT_OPTS_LEN) {
		snprintf(err, errlen, "default mount options '%.80s%s' are longer than %u bytes",
			 opts, strlen(opts) > 80 ? "..." : "", ORDFS_MOUNT_OPTS_LEN);
		return -EINVAL;
	}
	/* Exactly what `ordfs IMAGE MOUNTPOINT` does with the image's list. */
	struct daemon_options parsed;
	char *argv[] = { (char *)"ordfs", (char *)"IMAGE", (char *)"MOUNTPOINT", NULL };
	return daemon_parse_args_over(3, argv, opts, &parsed, err, errlen);
}

/* Splits a comma-separated list (in the writable copy s) into out.  With
 * strict, an empty option ("a,,b", a trailing comma) is an error. */
static int split(char *s, bool strict, struct opt_list *out, char *err, size_t errlen)
{
	out->n = 0;
	if (strict && !*s)
		return fail(err, errlen, "empty mount option list%s", "");
	for (char *p = s;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (*p) {
			if (out->n == MAX_OPTS)
				return fail(err, errlen, "too many mount options%s", "");
			out->v[out->n++] = p;
		} else if (strict) {
			return fail(err, errlen, "empty mount option in the list%s", "");
		}
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

int mount_opts_check_edits(const char *edits, char *err, size_t errlen)
{
	if (strlen(edits) >= MOUNT_OPTS_WORK_LEN)
		return fail(err, errlen, "mount option list too long%s", "");
	char *copy = strdup(edits);
	struct opt_list *l = malloc(sizeof(*l));
	int rc = copy && l ? split(copy, true, l, err, errlen) : -ENOMEM;
	for (unsigned i = 0; rc == 0 && i < l->n; i++) {
		const char *opt = l->v[i];
		if (opt[0] == '^')
			rc = opt[1] && opt[1] != '^' ? 0
						     : fail(err, errlen, "bad option removal '%s' "
							    "(use ^OPTION)", opt);
		else
			rc = mount_opts_validate(opt, err, errlen);
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(l);
	free(copy);
	return rc;
}

static void drop_if(struct opt_list *l, bool (*match)(const char *, const char *),
		    const char *key, unsigned *dropped)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < l->n; i++) {
		if (match(key, l->v[i]))
			++*dropped;
		else
			l->v[kept++] = l->v[i];
	}
	l->n = kept;
}

/* ^name: every option of that name; ^name=value: that option only. */
static bool removal_matches(const char *what, const char *opt)
{
	return strchr(what, '=') ? strcmp(what, opt) == 0 : same_name(what, opt);
}

static int apply_one(struct opt_list *l, const char *edit, char *err, size_t errlen)
{
	unsigned dropped = 0;
	if (edit[0] == '^') {
		drop_if(l, removal_matches, edit + 1, &dropped);
		if (!dropped)
			return fail(err, errlen, "'%s' is not among the default mount options",
				    edit + 1);
		return 0;
	}
	drop_if(l, overrides, edit, &dropped);
	if (l->n == MAX_OPTS)
		return fail(err, errlen, "too many mount options%s", "");
	l->v[l->n++] = edit;
	return 0;
}

static int join(const struct opt_list *l, char *out, size_t len, char *err, size_t errlen)
{
	size_t used = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < l->n; i++) {
		int n = snprintf(out + used, len - used, "%s%s", i ? "," : "", l->v[i]);
		if (n < 0 || (size_t)n >= len - used)
			return fail(err, errlen, "mount option list too long%s", "");
		used += (size_t)n;
	}
	return 0;
}

int mount_opts_apply(char *opts, const char *edits, char *err, size_t errlen)
{
	int rc = mount_opts_check_edits(edits, err, errlen);
	if (rc)
		return rc;
	char *current = strdup(opts), *changes = strdup(edits);
	char *result = malloc(MOUNT_OPTS_WORK_LEN);
	struct opt_list *l = malloc(sizeof(*l)), *e = malloc(sizeof(*e));
	if (!current || !changes || !result || !l || !e) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = split(current, false, l, err, errlen);
	if (!rc)
		rc = split(changes, true, e, err, errlen);
	for (unsigned i = 0; !rc && i < e->n; i++)
		rc = apply_one(l, e->v[i], err, errlen);
	if (!rc)
		rc = join(l, result, MOUNT_OPTS_WORK_LEN, err, errlen);
	if (!rc)
		memcpy(opts, result, strlen(result) + 1);
out:
	free(e);
	free(l);
	free(result);
	free(changes);
	free(current);
	return rc;
}
