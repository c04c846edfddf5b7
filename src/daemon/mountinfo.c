/*
 * mountinfo.c - see mountinfo.h.
 */
#include <errno.h>
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

/* A mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - TYPE
 * SOURCE SUPER"; the optional tags end at the lone "-". */
int mountinfo_device_of(const char *path, const char *fstype_prefix, unsigned *major,
			unsigned *minor)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int found = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mnt[4096];
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) != 3)
			continue;
		mountinfo_unescape(mnt);
		const char *dash = strstr(line, " - ");
		char type[256];
		if (strcmp(mnt, path) != 0 || !dash || sscanf(dash + 3, "%255s", type) != 1 ||
		    strncmp(type, fstype_prefix, strlen(fstype_prefix)) != 0)
			continue;
		*major = maj; /* later lines are newer mounts on top */
		*minor = min;
		found = 0;
	}
	free(line);
	fclose(f);
	return found;
}
