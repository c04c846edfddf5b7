/*
 * extended.c - mkfs.ordfs's -E argument (see extended.h for what it owns
 * and its rules).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "extended.h"

#define ID_MAX 4294967294ull /* (uid_t)-1 is not an owner */
#define SHOWN_LEN (64 * 4 + 4)

_Static_assert(ORDFS_MOUNT_OPTS_LEN == 64, "update the mount_opts message");

__attribute__((format(printf, 3, 4))) static int refuse(char *why, size_t whylen,
							 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* [s, s + len) for a message: control characters escaped (\n, \x01), so
 * the message stays one line; at most 64 bytes of it, then "...". */
static const char *shown(const char *s, size_t len, char out[SHOWN_LEN])
{
	size_t o = 0, i = 0;
	for (; i < len && i < 64; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			o += (size_t)snprintf(out + o, SHOWN_LEN - o, "\\n");
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(out + o, SHOWN_LEN - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (i < len)
		o += (size_t)snprintf(out + o, SHOWN_LEN - o, "...");
	out[o] = '\0';
	return out;
}

/* Decimal digits [s, s + len) as an id; false when empty, not all digits
 * or past ID_MAX. */
static bool parse_id(const char *s, size_t len, uint32_t *out)
{
	unsigned long long v = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > ID_MAX)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

int mkfs_parse_owner(const char *value, uint32_t *uid, uint32_t *gid, char *why, size_t whylen)
{
	const char *colon = strchr(value, ':');
	uint32_t u, g;
	char buf[SHOWN_LEN];
	if (!colon || !parse_id(value, (size_t)(colon - value), &u) ||
	    !parse_id(colon + 1, strlen(colon + 1), &g))
		return refuse(why, whylen,
			      "invalid root_owner '%s' (UID:GID, decimal numbers from 0 to %llu)",
			      shown(value, strlen(value), buf), ID_MAX);
	*uid = u;
	*gid = g;
	return 0;
}

/* mount_opts=VALUE: the rest of the argument. */
static int parse_mount_opts(const char *v, mkfs_mount_opts_check_fn check,
			    struct mkfs_extended *x, char *why, size_t whylen)
{
	char buf[SHOWN_LEN];
	if (strlen(v) > ORDFS_MOUNT_OPTS_LEN)
		return refuse(why, whylen, "mount_opts '%s' is longer than 64 bytes",
			      shown(v, strlen(v), buf));
	/* Only what the daemon takes from an image (tune.ordfs's rule). */
	if (*v && check) {
		char reason[192];
		if (check(v, reason, sizeof(reason)) != 0)
			return refuse(why, whylen, "mount_opts: %s", reason);
	}
	x->mount_opts_set = true;
	strcpy(x->mount_opts, v);
	return 0;
}

int mkfs_parse_extended(const char *arg, uint32_t caller_uid, uint32_t caller_gid,
			mkfs_mount_opts_check_fn check_mount_opts, struct mkfs_extended *out,
			char *why, size_t whylen)
{
	struct mkfs_extended x = *out; /* committed only when all of arg is good */
	const char *p = arg;
	if (!*p)
		return refuse(why, whylen, "empty extended option");
	for (;;) {
		size_t len = strcspn(p, ",");   /* this option */
		size_t klen = strcspn(p, ",="); /* its key */
		bool has_value = klen < len;
		char buf[SHOWN_LEN];
		if (len == 0)
			return refuse(why, whylen, "empty extended option in '%s'",
				      shown(arg, strlen(arg), buf));
		if (klen == 10 && strncmp(p, "mount_opts", 10) == 0) {
			if (!has_value)
				return refuse(why, whylen, "mount_opts needs a value (mount_opts=OPTS)");
			int err = parse_mount_opts(p + 11, check_mount_opts, &x, why, whylen);
			if (err)
				return err;
			break; /* it took the rest */
		}
		if (klen == 10 && strncmp(p, "root_owner", 10) == 0) {
			if (has_value) {
				char value[64];
				size_t vlen = len - 11;
				if (vlen >= sizeof(value))
					return refuse(why, whylen,
						      "invalid root_owner '%s' (UID:GID, decimal numbers from 0 to %llu)",
						      shown(p + 11, vlen, buf), ID_MAX);
				memcpy(value, p + 11, vlen);
				value[vlen] = '\0';
				int err = mkfs_parse_owner(value, &x.root_uid, &x.root_gid, why,
							   whylen);
				if (err)
					return err;
			} else {
				x.root_uid = caller_uid;
				x.root_gid = caller_gid;
			}
			x.root_owner_set = true;
		} else {
			return refuse(why, whylen, "unknown extended option '%s'",
				      shown(p, klen, buf));
		}
		if (p[len] == '\0')
			break;
		p += len + 1;
		if (!*p)
			return refuse(why, whylen, "empty extended option in '%s'",
				      shown(arg, strlen(arg), buf));
	}
	*out = x;
	return 0;
}
