/*
 * fuse_xattr.c - the four xattr calls of the daemon, and who the caller is.
 *
 * Owns: setxattr, getxattr, listxattr and removexattr (POSIX ACLs are the
 * system.posix_acl_* names; the core keeps them and the mode in step), and
 * caller_of(): the caller's groups and CAP_FSETID, which Linux's
 * set-group-ID rules need (setting an access ACL here, fallocate in
 * fuse_ops.c); caller_has_cap() and caller_caps() for other capabilities
 * (fuse_ioctl.c, fuse_fileattr.c).  libfuse 3.14 drops the kernel's
 * FUSE_SETXATTR_ACL_KILL_SGID flag, so the daemon applies the rule itself.
 * listxattr shows trusted.* names only to a caller with CAP_SYS_ADMIN.
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

/* The effective capabilities of process pid (/proc/PID/status).  If they
 * cannot be read (the process is gone): all of them for root, none for
 * anyone else. */
uint64_t caller_caps(pid_t pid, uid_t uid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	uint64_t caps = uid == 0 ? ~0ull : 0;
	if (!f)
		return caps;
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long eff;
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			caps = eff;
			found = true;
		}
	}
	fclose(f);
	return caps;
}

bool caller_has_cap(pid_t pid, uid_t uid, int cap)
{
	return (caller_caps(pid, uid) >> cap) & 1;
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

/* The inode's whole list of names (malloc'd in *out), or a negative
 * errno; 0 names: 0 and *out NULL.  A list that grows between its size
 * and its copy is asked again. */
static ssize_t list_all(struct ordfs *fs, struct inode *inode, char **out)
{
	*out = NULL;
	for (unsigned tries = 0; tries < 8; tries++) {
		ssize_t n = ordfs_listxattr(fs, inode, NULL, 0);
		if (n <= 0)
			return n;
		char *buf = malloc((size_t)n);
		if (!buf)
			return -ENOMEM;
		ssize_t m = ordfs_listxattr(fs, inode, buf, (size_t)n);
		if (m >= 0) {
			*out = buf;
			return m;
		}
		free(buf);
		if (m != -ERANGE)
			return m;
	}
	return -EAGAIN;
}

/* Drops the trusted.* names from a list; its new length. */
static size_t drop_trusted(char *list, size_t len)
{
	size_t kept = 0;
	for (size_t pos = 0; pos < len;) {
		size_t n = strnlen(list + pos, len - pos) + 1;
		if (strncmp(list + pos, "trusted.", 8) != 0) {
			memmove(list + kept, list + pos, n);
			kept += n;
		}
		pos += n;
	}
	return kept;
}

/* listxattr: trusted.* names are listed only to a caller with
 * CAP_SYS_ADMIN, as ext4 lists them (ext4_xattr_trusted_list): the kernel
 * checks getxattr and setxattr of them itself (xattr_permission), but
 * leaves the list to the filesystem.  The caller's capabilities are read
 * only when the list has such a name. */
void op_listxattr(fuse_req_t req, fuse_ino_t node, size_t size)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	char *all;
	ssize_t n = list_all(ctx_of(req)->fs, inode, &all);
	inode_put(ctx_of(req)->fs, inode);
	if (n > 0 && memmem(all, (size_t)n, "trusted.", 8)) {
		const struct fuse_ctx *fc = fuse_req_ctx(req);
		if (!caller_has_cap(fc->pid, fc->uid, CAP_SYS_ADMIN))
			n = (ssize_t)drop_trusted(all, (size_t)n);
	}
	if (n >= 0 && size && (size_t)n > size)
		n = -ERANGE;
	reply_xattr_value(req, n, all, size);
	free(all);
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
