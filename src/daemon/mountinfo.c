/*
 * mountinfo.c - see mountinfo.h.
 */
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
