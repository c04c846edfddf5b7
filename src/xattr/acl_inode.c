/*
 * acl_inode.c - an inode's ACLs: reading them from its attribute block,
 * what a new inode inherits from its directory's default ACL, the ACL
 * change a chmod makes, and ordfs_permission (ops.h).
 *
 * Rules (acl.h has them in full): these run under the caller's
 * inode->lock and decide everything before the caller's handle starts,
 * so a failure leaves nothing half done.  Evaluation follows Linux's
 * acl_permission_check + posix_acl_permission exactly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl.h"
#include "fs.h"
#include "inode/inode.h"
#include "ops.h"
#include "xattr.h"
#include "lock/lock.h"

#define PERM_BITS 7u

/* ---- an inode's ACLs ------------------------------------------------------------ */

int acl_get_locked(struct ordfs *fs, struct inode *inode, uint8_t ns, struct acl **out)
{
	uint8_t *value;
	uint32_t len;

	*out = NULL;
	int err = xattr_get_ns_locked(fs, inode, ns, &value, &len);
	if (err == -ENODATA)
		return 0;
	if (err)
		return err;
	err = acl_from_disk(value, len, out);
	free(value);
	return err;
}

void acl_inherit_release(struct acl_inherit *ai)
{
	free(ai->access);
	free(ai->def);
	ai->access = ai->def = NULL;
}

bool acl_inherit_any(const struct acl_inherit *ai)
{
	return ai->access || ai->def;
}

int acl_inherit_prepare(struct ordfs *fs, struct inode *dir, uint16_t mode, uint32_t umask,
			struct acl_inherit *out)
{
	struct acl *def, *access = NULL;

	memset(out, 0, sizeof(*out));
	out->mode = mode;
	if (S_ISLNK(mode))
		return 0;
	int err = acl_get_locked(fs, dir, ORDFS_XATTR_NS_POSIX_ACL_DEFAULT, &def);
	if (err)
		return err;
	if (!def) {
		out->mode = (uint16_t)(mode & ~(umask & 0777u));
		return 0;
	}
	access = acl_dup(def);
	if (!access)
		err = -ENOMEM;
	if (!err && acl_create_masq(access, &out->mode))
		err = acl_encode_disk(access, &out->access, &out->access_len);
	if (!err && S_ISDIR(mode))
		err = acl_encode_disk(def, &out->def, &out->def_len);
	acl_free(access);
	acl_free(def);
	if (err)
		acl_inherit_release(out);
	return err;
}

int acl_chmod_prepare(struct ordfs *fs, struct inode *inode, uint16_t new_mode, uint8_t **out,
		      uint32_t *len)
{
	struct acl *acl;

	*out = NULL;
	*len = 0;
	int err = acl_get_locked(fs, inode, ORDFS_XATTR_NS_POSIX_ACL_ACCESS, &acl);
	if (err || !acl)
		return err;
	acl_chmod(acl, new_mode);
	err = acl_encode_disk(acl, out, len);
	acl_free(acl);
	return err;
}

/* ---- ordfs_permission (ops.h) ------------------------------------------------- */

/* Linux's acl_permission_check: -EACCES, 0, or an error reading the ACL. */
static int dac_check(struct ordfs *fs, struct inode *inode, const struct ordfs_cred *cred,
		     const uint32_t *groups, uint32_t ngroups, unsigned want)
{
	uint16_t mode = inode->d.mode;

	if (cred->uid == inode->d.uid)
		return (want & ~((mode >> 6) & PERM_BITS)) ? -EACCES : 0;
	if (mode & S_IRWXG) {
		struct acl *acl;
		int err = acl_get_locked(fs, inode, ORDFS_XATTR_NS_POSIX_ACL_ACCESS, &acl);
		if (err)
			return err;
		if (acl) {
			err = acl_permission(acl, inode->d.uid, inode->d.gid, cred->uid, cred->gid,
					     groups, ngroups, want);
			acl_free(acl);
			return err;
		}
	}
	if (acl_in_group(inode->d.gid, cred->gid, groups, ngroups))
		mode >>= 3;
	return (want & ~(mode & PERM_BITS)) ? -EACCES : 0;
}

/* generic_permission's capability step, for uid 0 (CAP_DAC_OVERRIDE and
 * CAP_DAC_READ_SEARCH): directories always; otherwise reading and writing
 * always, executing only if some execute bit is set. */
static bool root_overrides(uint16_t mode, unsigned want)
{
	if (S_ISDIR(mode))
		return true;
	return !(want & ACL_EXECUTE) || (mode & (S_IXUSR | S_IXGRP | S_IXOTH));
}

int ordfs_permission(struct ordfs *fs, struct inode *inode, const struct ordfs_cred *cred,
		     const uint32_t *groups, uint32_t ngroups, unsigned want)
{
	if (ngroups && !groups)
		return -EINVAL;
	want &= ACL_READ | ACL_WRITE | ACL_EXECUTE;
	ordfs_rwlock_rdlock(&inode->lock);
	uint16_t mode = inode->d.mode;
	int err = dac_check(fs, inode, cred, groups, ngroups, want);
	ordfs_rwlock_unlock(&inode->lock);
	if (err == -EACCES && cred->uid == 0 && root_overrides(mode, want))
		err = 0;
	return err;
}
