/*
 * utab_lines.c - see utab_lines.h.
 *
 * The format, as libmount 2.38 writes it (tab_update.c) and any later
 * one reads it: one mount a line, space-separated KEY=VALUE fields
 * ("SRC=/img TARGET=/mnt ROOT=/ OPTS=helper=ordfs"; BINDSRC=, ATTRS= and
 * newer keys such as ID= may appear too), each value escaped as
 * libmount's mnt_mangle does (a space is "\040"), so mnt_unmangle undoes
 * it.  Unknown keys are skipped; a line without TARGET= names nothing.
 */
#include <errno.h>
#include <libmount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utab_lines.h"

/* The value of KEY= in a line's fields, unescaped and malloc'd, in *out
 * (NULL when the line has no such field).  0 or -ENOMEM. */
static int field_value(const char *line, const char *key, char **out)
{
	size_t klen = strlen(key);
	*out = NULL;
	for (const char *p = line; *p;) {
		p += strspn(p, " \t");
		size_t len = strcspn(p, " \t\n");
		if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			char *raw = strndup(p + klen + 1, len - klen - 1);
			*out = raw ? mnt_unmangle(raw) : NULL;
			free(raw);
			return *out ? 0 : -ENOMEM;
		}
		p += len;
		if (*p == '\n')
			break;
	}
	return 0;
}

/* fn on one line (nothing for a line without TARGET=).  0 and *go_on
 * (false: fn said stop), or -ENOMEM. */
static int visit_line(const char *text, bool (*fn)(const struct utab_line *l, void *ctx),
		      void *ctx, bool *go_on)
{
	char *source = NULL, *target = NULL, *opts = NULL;
	int err = field_value(text, "SRC", &source);
	if (!err)
		err = field_value(text, "TARGET", &target);
	if (!err)
		err = field_value(text, "OPTS", &opts);
	if (!err && target)
		*go_on = fn(&(struct utab_line){ .source = source ? source : "", .target = target,
						  .opts = opts ? opts : "" },
			    ctx);
	free(source);
	free(target);
	free(opts);
	return err;
}

int utab_lines_each(const char *path, bool (*fn)(const struct utab_line *l, void *ctx),
		    void *ctx)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	char *text = NULL;
	size_t cap = 0;
	int err = 0;
	bool go_on = true;
	while (!err && go_on && getline(&text, &cap, f) >= 0)
		err = visit_line(text, fn, ctx, &go_on);
	if (!err && ferror(f))
		err = -EIO;
	free(text);
	fclose(f);
	return err;
}

bool utab_opts_name_helper(const char *opts, const char *name)
{
	char *value = NULL;
	size_t len = 0;
	return mnt_optstr_get_option(opts, "helper", &value, &len) == 0 && value &&
	       len == strlen(name) && strncmp(value, name, len) == 0;
}
