/*
 * mountinfo.c - see mountinfo.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"

void mountinfo_unescape(char *s)
{
	char *out = s;
	for (char *in = s; *in; in++) {
		if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' &&
		    in[3] >= '0' && in[3] <= '7') {
			*out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
			in += 3;
		} else {
			*out++ = *in;
		}
	}
	*out = '\0';
}

/* "id parent major:minor root mountpoint options [optional...] - type
 * source superopts": false for a line that is not that. */
static bool parse_line(char *line, struct mountinfo_entry *e)
{
	char *dash = strstr(line, " - ");
	if (!dash)
		return false;
	*dash = '\0';
	char *save = NULL, *field[6];
	int n = 0;
	for (char *t = strtok_r(line, " ", &save); t && n < 6; t = strtok_r(NULL, " ", &save))
		field[n++] = t;
	char *tsave = NULL;
	char *type = strtok_r(dash + 3, " \n", &tsave);
	char *source = type ? strtok_r(NULL, " \n", &tsave) : NULL;
	if (n < 6 || !source)
		return false;
	mountinfo_unescape(field[4]);
	mountinfo_unescape(source);
	*e = (struct mountinfo_entry){ .dev = field[2], .mountpoint = field[4],
				       .options = field[5], .type = type, .source = source };
	return true;
}

int mountinfo_each(bool (*fn)(const struct mountinfo_entry *e, void *ctx), void *ctx)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char line[3 * PATH_MAX];
	struct mountinfo_entry e;
	while (fgets(line, sizeof(line), f))
		if (parse_line(line, &e) && !fn(&e, ctx))
			break;
	fclose(f);
	return 0;
}

struct find_ctx {
	const char *target;
	char *source, *type, *dev, *opts;
	size_t ssize, tsize, dsize, osize;
	bool found;
};

static bool find_one(const struct mountinfo_entry *e, void *ctx)
{
	struct find_ctx *c = ctx;
	if (strcmp(e->mountpoint, c->target) != 0)
		return true;
	if (c->source)
		snprintf(c->source, c->ssize, "%s", e->source);
	if (c->type)
		snprintf(c->type, c->tsize, "%s", e->type);
	if (c->dev)
		snprintf(c->dev, c->dsize, "%s", e->dev);
	if (c->opts)
		snprintf(c->opts, c->osize, "%s", e->options);
	c->found = true;
	return true; /* later lines are newer mounts on top: keep going */
}

int mountinfo_find(const char *target, char *source, size_t ssize, char *type, size_t tsize,
		   char *dev, size_t dsize)
{
	struct find_ctx c = { .target = target, .source = source, .ssize = ssize, .type = type,
			      .tsize = tsize, .dev = dev, .dsize = dsize };
	int err = mountinfo_each(find_one, &c);
	return err ? err : c.found ? 0 : -ENOENT;
}

int mountinfo_find_options(const char *target, char *type, size_t tsize, char *opts,
			   size_t osize)
{
	struct find_ctx c = { .target = target, .type = type, .tsize = tsize, .opts = opts,
			      .osize = osize };
	int err = mountinfo_each(find_one, &c);
	return err ? err : c.found ? 0 : -ENOENT;
}

struct image_ctx {
	const char *image;
	char *mountpoint;
	size_t size;
	bool found;
};

static bool image_one(const struct mountinfo_entry *e, void *ctx)
{
	struct image_ctx *c = ctx;
	c->found = strncmp(e->type, "fuse", 4) == 0 && strcmp(e->source, c->image) == 0;
	if (c->found && c->mountpoint)
		snprintf(c->mountpoint, c->size, "%s", e->mountpoint);
	return !c->found;
}

int mountinfo_image_mountpoint(const char *image, char *mountpoint, size_t size)
{
	/* The daemon names a file by its absolute path, an NBD export by its
	 * URI as given (options.c, add_mount_identity). */
	char *abs = realpath(image, NULL);
	struct image_ctx c = { .image = abs ? abs : image, .mountpoint = mountpoint,
			       .size = size };
	int err = mountinfo_each(image_one, &c);
	free(abs);
	return err ? err : c.found ? 0 : -ENOENT;
}

bool mountinfo_image_mounted(const char *image)
{
	/* a file only: a path that does not resolve is not an image here */
	char *abs = realpath(image, NULL);
	struct image_ctx c = { .image = abs };
	if (abs)
		(void)mountinfo_each(image_one, &c);
	free(abs);
	return c.found;
}
