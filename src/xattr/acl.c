/*
 * acl.c - POSIX ACLs as values: the Linux xattr form, the compact on-disk
 * form and struct acl (acl.h); the rules between an ACL and the mode
 * (setting, chmod, inheritance at create); permission evaluation.
 *
 * Owns: the meaning of the two ACL namespaces' values.  Pure: nothing
 * here reads an inode or the image (acl_inode.c does, through xattr.h),
 * so the attribute block's checks can use these without a cycle.
 *
 * Rules kept (acl.h has them in full):
 *  - Every decoder bounds-checks before it reads: a caller's value by
 *    Linux's rules (-EINVAL / -EOPNOTSUPP), a stored value by the format's
 *    (a problem string, -EUCLEAN).
 *  - The pure functions change nothing but their arguments; the ones that
 *    read an inode's ACL run under the caller's inode->lock and decide
 *    everything before the caller's handle starts, so a failure leaves
 *    nothing half done.
 *  - Evaluation follows Linux's acl_permission_check + posix_acl_permission
 *    exactly: owner by the mode; an ACL only when the group bits are not
 *    all zero; a named user or a group entry that matches goes through the
 *    mask; groups that match but do not grant mean -EACCES, not "other".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl.h"
#include "format/endian_le.h"
#include "ops.h"

#define PERM_BITS 7u

/* ---- struct acl ------------------------------------------------------------- */

struct acl *acl_alloc(uint32_t n)
{
	return calloc(1, sizeof(struct acl) + (size_t)n * sizeof(struct acl_named));
}

static uint32_t acl_named_count(const struct acl *acl)
{
	return acl->nusers + acl->ngroups;
}

struct acl *acl_dup(const struct acl *acl)
{
	size_t size = sizeof(*acl) + (size_t)acl_named_count(acl) * sizeof(acl->named[0]);
	struct acl *copy = malloc(size);
	if (copy)
		memcpy(copy, acl, size);
	return copy;
}

void acl_free(struct acl *acl)
{
	free(acl);
}

/* ---- the Linux xattr form ---------------------------------------------------- */

/* Where the decoder stands in the required order of tags. */
enum xattr_order {
	AT_USER_OBJ,   /* expecting USER_OBJ */
	AT_USERS,      /* after USER_OBJ: named users, then GROUP_OBJ */
	AT_GROUPS,     /* after GROUP_OBJ: named groups, then MASK or OTHER */
	AT_AFTER_MASK, /* after MASK: only OTHER */
	AT_END,        /* after OTHER: nothing more */
};

/* A named entry appended to its list; ids must strictly increase. */
static int add_named(struct acl *acl, bool group, uint32_t id, uint8_t perm)
{
	uint32_t count = group ? acl->ngroups : acl->nusers;
	struct acl_named *list = acl->named + (group ? acl->nusers : 0);

	if (id == ACL_UNDEFINED_ID)
		return -EINVAL;
	if (count > 0 && list[count - 1].id >= id)
		return -EINVAL; /* unsorted or duplicated */
	list[count].id = id;
	list[count].perm = perm;
	if (group)
		acl->ngroups++;
	else
		acl->nusers++;
	return 0;
}

/* One entry in the order machine. */
static int take_entry(struct acl *acl, enum xattr_order *at, uint16_t tag, uint8_t perm,
		      uint32_t id)
{
	switch (tag) {
	case ACL_TAG_USER_OBJ:
		if (*at != AT_USER_OBJ)
			return -EINVAL;
		acl->user_obj = perm;
		*at = AT_USERS;
		return 0;
	case ACL_TAG_USER:
		if (*at != AT_USERS)
			return -EINVAL;
		return add_named(acl, false, id, perm);
	case ACL_TAG_GROUP_OBJ:
		if (*at != AT_USERS)
			return -EINVAL;
		acl->group_obj = perm;
		*at = AT_GROUPS;
		return 0;
	case ACL_TAG_GROUP:
		if (*at != AT_GROUPS)
			return -EINVAL;
		return add_named(acl, true, id, perm);
	case ACL_TAG_MASK:
		if (*at != AT_GROUPS)
			return -EINVAL;
		acl->mask = perm;
		acl->has_mask = true;
		*at = AT_AFTER_MASK;
		return 0;
	case ACL_TAG_OTHER:
		if (*at != AT_AFTER_MASK && !(*at == AT_GROUPS && acl_named_count(acl) == 0))
			return -EINVAL; /* named entries need a mask */
		acl->other = perm;
		*at = AT_END;
		return 0;
	default:
		return -EINVAL;
	}
}

int acl_from_xattr(const void *value, size_t size, struct acl **out)
{
	const uint8_t *p = value;

	*out = NULL;
	if (!value || size == 0)
		return 0;
	if (size < ACL_XATTR_HDR)
		return -EINVAL;
	if (le_get32(p) != ACL_XATTR_VERSION)
		return -EOPNOTSUPP;
	if ((size - ACL_XATTR_HDR) % ACL_XATTR_ENTRY)
		return -EINVAL;
	size_t n = (size - ACL_XATTR_HDR) / ACL_XATTR_ENTRY;
	if (n == 0)
		return 0; /* no entries: no ACL */
	if (n > UINT16_MAX)
		return -EINVAL; /* more than a value can hold */
	struct acl *acl = acl_alloc((uint32_t)n);
	if (!acl)
		return -ENOMEM;
	enum xattr_order at = AT_USER_OBJ;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const uint8_t *e = p + ACL_XATTR_HDR + i * ACL_XATTR_ENTRY;
		uint16_t perm = le_get16(e + 2);
		if (perm & ~PERM_BITS)
			err = -EINVAL;
		else
			err = take_entry(acl, &at, le_get16(e), (uint8_t)perm, le_get32(e + 4));
	}
	if (!err && at != AT_END)
		err = -EINVAL;
	if (err) {
		acl_free(acl);
		return err;
	}
	*out = acl;
	return 0;
}

static uint8_t *put_xattr_entry(uint8_t *p, uint16_t tag, uint8_t perm, uint32_t id)
{
	le_put16(p, tag);
	le_put16(p + 2, perm);
	le_put32(p + 4, id);
	return p + ACL_XATTR_ENTRY;
}

ssize_t acl_to_xattr(const struct acl *acl, void *buf, size_t size)
{
	size_t entries = 3u + acl_named_count(acl) + (acl->has_mask ? 1u : 0u);
	size_t need = ACL_XATTR_HDR + entries * ACL_XATTR_ENTRY;

	if (size == 0)
		return (ssize_t)need;
	if (size < need)
		return -ERANGE;
	uint8_t *p = buf;
	le_put32(p, ACL_XATTR_VERSION);
	p += ACL_XATTR_HDR;
	p = put_xattr_entry(p, ACL_TAG_USER_OBJ, acl->user_obj, ACL_UNDEFINED_ID);
	for (uint32_t i = 0; i < acl->nusers; i++)
		p = put_xattr_entry(p, ACL_TAG_USER, acl->named[i].perm, acl->named[i].id);
	p = put_xattr_entry(p, ACL_TAG_GROUP_OBJ, acl->group_obj, ACL_UNDEFINED_ID);
	for (uint32_t i = acl->nusers; i < acl_named_count(acl); i++)
		p = put_xattr_entry(p, ACL_TAG_GROUP, acl->named[i].perm, acl->named[i].id);
	if (acl->has_mask)
		p = put_xattr_entry(p, ACL_TAG_MASK, acl->mask, ACL_UNDEFINED_ID);
	put_xattr_entry(p, ACL_TAG_OTHER, acl->other, ACL_UNDEFINED_ID);
	return (ssize_t)need;
}

/* ---- the compact on-disk form ---------------------------------------------- */

/* The shape of a stored value, whatever inode holds it, or NULL. */
static const char *disk_shape_problem(const uint8_t *v, size_t len)
{
	if (len < ACL_DISK_HDR)
		return "ACL value shorter than its header";
	if (v[0] != ACL_DISK_VERSION)
		return "ACL value of an unknown version";
	if (v[5] != 0)
		return "ACL reserved byte is not zero";
	if (v[2] > PERM_BITS || v[3] > PERM_BITS || v[4] > PERM_BITS ||
	    (v[1] > PERM_BITS && v[1] != ACL_DISK_NO_MASK))
		return "ACL permission out of range";
	size_t users = le_get16(v + 6), groups = le_get16(v + 8);
	if (len != ACL_DISK_HDR + (users + groups) * ACL_DISK_ENTRY)
		return "ACL value length does not match its entry counts";
	if (users + groups > 0 && v[1] == ACL_DISK_NO_MASK)
		return "ACL with named entries but no mask";
	const uint8_t *e = v + ACL_DISK_HDR;
	for (size_t i = 0; i < users + groups; i++, e += ACL_DISK_ENTRY) {
		uint32_t id = le_get32(e);
		if (e[4] > PERM_BITS)
			return "ACL permission out of range";
		if (id == ACL_UNDEFINED_ID)
			return "ACL entry with an invalid id";
		/* Within each list (not across the user/group boundary). */
		if (i != 0 && i != users && le_get32(e - ACL_DISK_ENTRY) >= id)
			return "ACL entries out of order or duplicated";
	}
	return NULL;
}

const char *acl_disk_problem(uint8_t ns, uint16_t mode, const uint8_t *value, size_t len)
{
	if (S_ISLNK(mode))
		return "ACL on a symlink";
	if (ns == ORDFS_XATTR_NS_POSIX_ACL_DEFAULT && !S_ISDIR(mode))
		return "default ACL on a non-directory";
	const char *why = disk_shape_problem(value, len);
	if (why)
		return why;
	if (ns == ORDFS_XATTR_NS_POSIX_ACL_ACCESS && value[1] == ACL_DISK_NO_MASK)
		return "access ACL that only repeats the mode";
	return NULL;
}

int acl_from_disk(const uint8_t *value, size_t len, struct acl **out)
{
	*out = NULL;
	if (disk_shape_problem(value, len))
		return -EUCLEAN;
	uint32_t users = le_get16(value + 6), groups = le_get16(value + 8);
	struct acl *acl = acl_alloc(users + groups);
	if (!acl)
		return -ENOMEM;
	acl->has_mask = value[1] != ACL_DISK_NO_MASK;
	acl->mask = acl->has_mask ? value[1] : 0;
	acl->user_obj = value[2];
	acl->group_obj = value[3];
	acl->other = value[4];
	acl->nusers = users;
	acl->ngroups = groups;
	const uint8_t *e = value + ACL_DISK_HDR;
	for (uint32_t i = 0; i < users + groups; i++, e += ACL_DISK_ENTRY) {
		acl->named[i].id = le_get32(e);
		acl->named[i].perm = e[4];
	}
	*out = acl;
	return 0;
}

size_t acl_disk_size(const struct acl *acl)
{
	return ACL_DISK_HDR + (size_t)acl_named_count(acl) * ACL_DISK_ENTRY;
}

void acl_to_disk(const struct acl *acl, uint8_t *out)
{
	out[0] = ACL_DISK_VERSION;
	out[1] = acl->has_mask ? acl->mask : ACL_DISK_NO_MASK;
	out[2] = acl->user_obj;
	out[3] = acl->group_obj;
	out[4] = acl->other;
	out[5] = 0;
	le_put16(out + 6, (uint16_t)acl->nusers);
	le_put16(out + 8, (uint16_t)acl->ngroups);
	uint8_t *e = out + ACL_DISK_HDR;
	for (uint32_t i = 0; i < acl_named_count(acl); i++, e += ACL_DISK_ENTRY) {
		le_put32(e, acl->named[i].id);
		e[4] = acl->named[i].perm;
	}
}

int acl_encode_disk(const struct acl *acl, uint8_t **out, uint32_t *len)
{
	size_t size = acl_disk_size(acl);
	*out = malloc(size);
	if (!*out)
		return -ENOMEM;
	acl_to_disk(acl, *out);
	*len = (uint32_t)size;
	return 0;
}

/* ---- the rules between an ACL and the mode ----------------------------------- */

/* The entry the mode's group bits stand for: the mask if there is one. */
static uint8_t *group_class(struct acl *acl)
{
	return acl->has_mask ? &acl->mask : &acl->group_obj;
}

static uint16_t with_perms(uint16_t mode, uint8_t user, uint8_t group, uint8_t other)
{
	return (uint16_t)((mode & ~0777u) | (unsigned)user << 6 | (unsigned)group << 3 | other);
}

bool acl_equiv_mode(const struct acl *acl, uint16_t *mode)
{
	uint8_t group = acl->has_mask ? acl->mask : acl->group_obj;
	*mode = with_perms(*mode, acl->user_obj, group, acl->other);
	return !acl->has_mask && acl_named_count(acl) == 0;
}

void acl_chmod(struct acl *acl, uint16_t mode)
{
	acl->user_obj = (mode >> 6) & PERM_BITS;
	*group_class(acl) = (mode >> 3) & PERM_BITS;
	acl->other = mode & PERM_BITS;
}

bool acl_create_masq(struct acl *acl, uint16_t *mode)
{
	uint8_t *group = group_class(acl);
	acl->user_obj &= (*mode >> 6) & PERM_BITS;
	*group &= (*mode >> 3) & PERM_BITS;
	acl->other &= *mode & PERM_BITS;
	*mode = with_perms(*mode, acl->user_obj, *group, acl->other);
	return acl->has_mask || acl_named_count(acl) > 0;
}

/* ---- evaluation ------------------------------------------------------------------ */

static bool grants(uint8_t perm, unsigned want)
{
	return (perm & want) == want;
}

bool acl_in_group(uint32_t id, uint32_t gid, const uint32_t *groups, uint32_t ngroups)
{
	if (id == gid)
		return true;
	for (uint32_t i = 0; i < ngroups; i++)
		if (groups[i] == id)
			return true;
	return false;
}

bool acl_keeps_setgid(const struct ordfs_caller *caller, uint32_t gid)
{
	return caller->cap_fsetid ||
	       acl_in_group(gid, caller->cred.gid, caller->groups, caller->ngroups);
}

/* A matched named user or group entry: the mask limits it. */
static int through_mask(const struct acl *acl, uint8_t perm, unsigned want)
{
	uint8_t limit = acl->has_mask ? acl->mask : PERM_BITS;
	return grants(perm & limit, want) ? 0 : -EACCES;
}

int acl_permission(const struct acl *acl, uint32_t owner_uid, uint32_t owner_gid, uint32_t uid,
		   uint32_t gid, const uint32_t *groups, uint32_t ngroups, unsigned want)
{
	want &= ACL_READ | ACL_WRITE | ACL_EXECUTE;
	if (uid == owner_uid)
		return grants(acl->user_obj, want) ? 0 : -EACCES;
	for (uint32_t i = 0; i < acl->nusers; i++)
		if (acl->named[i].id == uid)
			return through_mask(acl, acl->named[i].perm, want);
	/* The first group entry that matches and grants wins; groups that
	 * match without granting deny, whatever "other" says. */
	bool matched = false;
	if (acl_in_group(owner_gid, gid, groups, ngroups)) {
		matched = true;
		if (grants(acl->group_obj, want))
			return through_mask(acl, acl->group_obj, want);
	}
	for (uint32_t i = acl->nusers; i < acl_named_count(acl); i++) {
		if (!acl_in_group(acl->named[i].id, gid, groups, ngroups))
			continue;
		matched = true;
		if (grants(acl->named[i].perm, want))
			return through_mask(acl, acl->named[i].perm, want);
	}
	if (matched)
		return -EACCES;
	return grants(acl->other, want) ? 0 : -EACCES;
}

void acl_plan_release(struct acl_set_plan *p)
{
	free(p->disk);
	p->disk = NULL;
}

int acl_plan_set(uint8_t ns, uint16_t mode, const void *value, size_t size,
		 struct acl_set_plan *out)
{
	struct acl *acl;

	memset(out, 0, sizeof(*out));
	out->mode = mode;
	if (S_ISLNK(mode))
		return -EOPNOTSUPP;
	int err = acl_from_xattr(value, size, &acl);
	if (err)
		return err;
	if (!acl) {
		out->remove = true;
		return 0;
	}
	if (ns == ORDFS_XATTR_NS_POSIX_ACL_DEFAULT && !S_ISDIR(mode)) {
		acl_free(acl);
		return -EACCES;
	}
	if (ns == ORDFS_XATTR_NS_POSIX_ACL_ACCESS && acl_equiv_mode(acl, &out->mode))
		out->remove = true; /* the mode says it all */
	else
		err = acl_encode_disk(acl, &out->disk, &out->disk_len);
	acl_free(acl);
	return err;
}

ssize_t acl_disk_to_xattr(const uint8_t *disk, size_t len, void *buf, size_t size)
{
	struct acl *acl;
	int err = acl_from_disk(disk, len, &acl);
	if (err)
		return err;
	ssize_t n = acl_to_xattr(acl, buf, size);
	acl_free(acl);
	return n;
}
