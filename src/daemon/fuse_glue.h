/*
 * fuse_glue.h - what the daemon's FUSE op files share: the request helpers
 * of fuse_ops.c, the open files' error cursors (open_files.c), the caller's
 * identity (fuse_xattr.c) and the ops that live outside fuse_ops.c, for
 * its operations table.
 *
 * The op files: fuse_ops.c (names, attributes, file data, directories,
 * fallocate and lseek, init, the table), fuse_xattr.c (extended attributes
 * and ACLs), fuse_ioctl.c (ORDFS_IOC_*), fuse_fileattr.c (the file-flag
 * ioctls: lsattr, chattr), fuse_copy_range.c (copy_file_range),
 * open_files.c (fi->fh).  Rules as
 * in fuse_ops.c: every handler ends in exactly one reply.
 */
#ifndef ORDFS_FUSE_GLUE_H
#define ORDFS_FUSE_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuse_ops.h"
#include "../ops.h"

struct inode;
struct ordfs_file;

static inline struct daemon_ctx *ctx_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Looks up the inode behind a node id with a reference, or replies with
 * the error and returns NULL. */
struct inode *get_inode(fuse_req_t req, fuse_ino_t node);
/* The caller's uid and gid. */
struct ordfs_cred cred_of(fuse_req_t req);
/* Replies with a negative errno (0: success); -EUCLEAN goes through the
 * errors= policy first. */
void reply_result(fuse_req_t req, int err);
/* A reply buffer of size bytes (NULL is fine for size 0 when allow_empty).
 * On failure drops the inode reference, replies ENOMEM and returns NULL
 * with *failed set. */
char *reply_buffer(fuse_req_t req, struct inode *inode, size_t size, bool allow_empty,
		   bool *failed);

/* ---- open files (open_files.c) ----------------------------------------- */

/* Gives an open file its error cursor (fi->fh); false (and ENOMEM
 * replied) if there is no memory. */
bool attach_file(fuse_req_t req, struct inode *inode, struct fuse_file_info *fi);
/* Frees fi's error cursor (release, or a reply the kernel did not take). */
void detach_file(struct daemon_ctx *dc, struct fuse_file_info *fi);
/* fi's error cursor, NULL for a directory or no fi. */
struct ordfs_file *file_of(const struct fuse_file_info *fi);
/* Was fi opened O_WRONLY?  (A READ through it is the kernel filling a page
 * for a write, with -o writeback_cache, not a program reading.) */
bool file_is_write_only(const struct fuse_file_info *fi);

/* ---- the caller (fuse_xattr.c) ----------------------------------------- */

#define CALLER_GROUPS_MAX 256

/* Who is asking, with its groups (in groups[CALLER_GROUPS_MAX]) and
 * whether it holds CAP_FSETID: the inputs of Linux's set-group-ID rules
 * (ACL set, fallocate). */
void caller_of(fuse_req_t req, struct ordfs_caller *c, uint32_t *groups);
/* Does process pid (of user uid) hold capability cap in its effective
 * set?  Read from /proc; if the process is gone, only uid 0 does. */
bool caller_has_cap(pid_t pid, uid_t uid, int cap);
/* The caller's effective capabilities, as a mask of 1 << CAP_*. */
uint64_t caller_caps(pid_t pid, uid_t uid);

/* ---- ops outside fuse_ops.c -------------------------------------------- */

/* copy_file_range (fuse_copy_range.c). */
void op_copy_file_range(fuse_req_t req, fuse_ino_t node_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t node_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags);

void op_setxattr(fuse_req_t req, fuse_ino_t node, const char *name, const char *value,
		 size_t size, int flags);
void op_getxattr(fuse_req_t req, fuse_ino_t node, const char *name, size_t size);
void op_listxattr(fuse_req_t req, fuse_ino_t node, size_t size);
void op_removexattr(fuse_req_t req, fuse_ino_t node, const char *name);
/* ORDFS_IOC_REMOUNT (fuse_remount.c): 0 and the options in force in
 * reply, or a negative errno and why. */
int daemon_remount(struct daemon_ctx *dc, const char *opts, char *reply, size_t replylen);

/* ORDFS_IOC_GROW (fuse_grow.c): 0 or a negative errno with g->reply set. */
struct ordfs_grow;
int daemon_grow(struct daemon_ctx *dc, struct ordfs_grow *g);

/* ORDFS_IOC_SCRUB (fuse_scrub.c): the online scrub at idle priority; 0
 * (out->problems says what it found) or a negative errno. */
struct ordfs_scrub;
int daemon_scrub(struct daemon_ctx *dc, struct ordfs_scrub *out);
void op_ioctl(fuse_req_t req, fuse_ino_t node, int cmd, void *arg, struct fuse_file_info *fi,
	      unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz);
/* The file-flag ioctls (fuse_fileattr.c): true when cmd is one of them
 * (FS_IOC_GETFLAGS, SETFLAGS, FSGETXATTR, FSSETXATTR) and it replied. */
bool fileattr_ioctl(fuse_req_t req, fuse_ino_t node, unsigned cmd, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz);

#endif
