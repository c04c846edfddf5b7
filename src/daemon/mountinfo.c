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

/* The last line of mountinfo whose mount point is target (the mount on
 * top), its fields copied out (any pointer may be NULL). */
static int find_entry(const char *target, char *source, size_t ssize, char *type, size_t tsize,
		      char *dev, size_t dsize, char *opts, size_t osize)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char line[3 * PATH_MAX];
	int err = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint options... - type source superopts */
		char *save = NULL, *field[6];
		int n = 0;
		char *dash = strstr(line, " - ");
		if (!dash)
			continue;
		*dash = '\0';
		for (char *t = strtok_r(line, " ", &save); t && n < 6; t = strtok_r(NULL, " ", &save))
			field[n++] = t;
		if (n < 6)
			continue;
		mountinfo_unescape(field[4]);
		if (strcmp(field[4], target) != 0)
			continue;
		char *t_save = NULL;
		char *fstype = strtok_r(dash + 3, " ", &t_save);
		char *src = strtok_r(NULL, " ", &t_save);
		if (!fstype || !src)
			continue;
		mountinfo_unescape(src);
		if (type)
			snprintf(type, tsize, "%s", fstype);
		if (source)
			snprintf(source, ssize, "%s", src);
		if (dev)
			snprintf(dev, dsize, "%s", field[2]);
		if (opts)
			snprintf(opts, osize, "%s", field[5]);
		err = 0; /* later lines are newer mounts on top: keep going */
	}
	fclose(f);
	return err;
}

int mountinfo_find(const char *target, char *source, size_t ssize, char *type, size_t tsize,
		   char *dev, size_t dsize)
{
	return find_entry(target, source, ssize, type, tsize, dev, dsize, NULL, 0);
}

int mountinfo_find_options(const char *target, char *type, size_t tsize, char *opts,
			   size_t osize)
{
	return find_entry(target, NULL, 0, type, tsize, NULL, 0, opts, osize);
}

/* Is the image the source of a live FUSE mount (this namespace)? */
bool mountinfo_image_mounted(const char *image)
{
	char *abs = realpath(image, NULL);
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;
	char line[3 * PATH_MAX];
	while (abs && f && !found && fgets(line, sizeof(line), f)) {
		/* ... - TYPE SOURCE SUPEROPTS */
		char *dash = strstr(line, " - ");
		char type[256], source[2 * PATH_MAX];
		if (!dash || sscanf(dash + 3, "%255s %8191s", type, source) != 2)
			continue;
		mountinfo_unescape(source);
		found = strncmp(type, "fuse", 4) == 0 && strcmp(source, abs) == 0;
	}
	if (f)
		fclose(f);
	free(abs);
	return found;
}
