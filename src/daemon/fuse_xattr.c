/*
 * fuse_xattr.c - the four xattr calls of the daemon, and who the caller is.
 *
 * Owns: setxattr, getxattr, listxattr and removexattr (POSIX ACLs are the
 * system.posix_acl_* names; the core keeps them and the mode in step), and
 * caller_of(): the caller's groups and CAP_FSETID, which Linux's
 * set-group-ID rules need (setting an access ACL here, fallocate in
 * fuse_ops.c); caller_has_cap() for other capabilities (fuse_ioctl.c).  libfuse 3.14 drops the kernel's
 * FUSE_SETXATTR_ACL_KILL_SGID flag, so the daemon applies the rule itself.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_glue.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../ops.h"

/* Does process pid hold capability `cap` (its effective set,
 * /proc/PID/status)?  If it cannot be read (the process is gone): only
 * root is taken to. */
bool caller_has_cap(pid_t pid, uid_t uid, int cap)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return uid == 0;
	bool has = uid == 0, found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long caps;
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			has = (caps >> cap) & 1;
			found = true;
		}
	}
	fclose(f);
	return has;
}

/* Who is asking, for ordfs_setxattr_by.  libfuse 3.14 drops the kernel's
 * FUSE_SETXATTR_ACL_KILL_SGID flag, so the daemon applies Linux's rule
 * itself from the caller's groups and capabilities. */
void caller_of(fuse_req_t req, struct ordfs_caller *c, uint32_t *groups)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);
	gid_t list[CALLER_GROUPS_MAX];
	int n = fuse_req_getgroups(req, CALLER_GROUPS_MAX, list);
	if (n < 0)
		n = 0;
	if (n > CALLER_GROUPS_MAX)
		n = CALLER_GROUPS_MAX;
	for (int i = 0; i < n; i++)
		groups[i] = (uint32_t)list[i];
	c->cred = cred_of(req);
	c->groups = groups;
	c->ngroups = (uint32_t)n;
	c->cap_fsetid = caller_has_cap(fc->pid, fc->uid, CAP_FSETID);
}

/* ---- extended attributes -------------------------------------------------- */

void op_setxattr(fuse_req_t req, fuse_ino_t node, const char *name, const char *value,
		 size_t size, int flags)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	struct ordfs_caller caller;
	uint32_t groups[CALLER_GROUPS_MAX];
	bool access_acl = strcmp(name, "system.posix_acl_access") == 0;
	if (access_acl)
		caller_of(req, &caller, groups);
	int err = ordfs_setxattr_by(ctx_of(req)->fs, inode, name, value, size, flags,
				    access_acl ? &caller : NULL);
	inode_put(ctx_of(req)->fs, inode);
	reply_result(req, err);
}

/* getxattr and listxattr share the FUSE protocol: size 0 asks for the
 * length, otherwise the value (or -ERANGE). */
static void reply_xattr_value(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		reply_result(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

void op_getxattr(fuse_req_t req, fuse_ino_t node, const char *name, size_t size)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	bool failed;
	char *buf = reply_buffer(req, inode, size, true, &failed);
	if (failed)
		return;
	ssize_t n = ordfs_getxattr(ctx_of(req)->fs, inode, name, buf, size);
	inode_put(ctx_of(req)->fs, inode);
	reply_xattr_value(req, n, buf, size);
	free(buf);
}

void op_listxattr(fuse_req_t req, fuse_ino_t node, size_t size)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	bool failed;
	char *buf = reply_buffer(req, inode, size, true, &failed);
	if (failed)
		return;
	ssize_t n = ordfs_listxattr(ctx_of(req)->fs, inode, buf, size);
	inode_put(ctx_of(req)->fs, inode);
	reply_xattr_value(req, n, buf, size);
	free(buf);
}

void op_removexattr(fuse_req_t req, fuse_ino_t node, const char *name)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	int err = ordfs_removexattr(ctx_of(req)->fs, inode, name);
	inode_put(ctx_of(req)->fs, inode);
	reply_result(req, err);
}
