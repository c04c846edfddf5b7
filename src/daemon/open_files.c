/*
 * open_files.c - the error cursor of every open regular file (fi->fh).
 *
 * Owns: struct open_file and the daemon's list of them.  Each open of a
 * regular file gets a struct ordfs_file, its cursor into the file's write
 * errors, so fsync through it reports each error once (errseq); the list
 * lets the daemon free the ones the kernel never releases (the FUSE loop
 * ended first: a lazy unmount, an abort).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuse_glue.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../lock/lock.h"

/* An open file's error cursor, on the context's list so the ones the
 * kernel never releases (loop ended first) can be freed at exit. */
struct open_file {
	struct ordfs_file f;
	bool write_only; /* opened O_WRONLY */
	struct open_file *prev, *next;
};

/* Gives an open file its error cursor (fi->fh); false (and ENOMEM
 * replied) if there is no memory. */
bool attach_file(fuse_req_t req, struct inode *inode, struct fuse_file_info *fi)
{
	struct daemon_ctx *dc = ctx_of(req);
	struct open_file *of = calloc(1, sizeof(*of));
	if (!of) {
		fuse_reply_err(req, ENOMEM);
		return false;
	}
	ordfs_file_open(inode, &of->f);
	of->write_only = (fi->flags & O_ACCMODE) == O_WRONLY;
	ordfs_mutex_lock(&dc->files_lock);
	of->next = dc->open_files;
	if (of->next)
		of->next->prev = of;
	dc->open_files = of;
	ordfs_mutex_unlock(&dc->files_lock);
	fi->fh = (uint64_t)(uintptr_t)of;
	return true;
}

void detach_file(struct daemon_ctx *dc, struct fuse_file_info *fi)
{
	struct open_file *of = fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;
	if (!of)
		return;
	ordfs_mutex_lock(&dc->files_lock);
	if (of->prev)
		of->prev->next = of->next;
	else
		dc->open_files = of->next;
	if (of->next)
		of->next->prev = of->prev;
	ordfs_mutex_unlock(&dc->files_lock);
	free(of);
	fi->fh = 0;
}

void daemon_release_all_files(struct daemon_ctx *dc)
{
	ordfs_mutex_lock(&dc->files_lock);
	while (dc->open_files) {
		struct open_file *of = dc->open_files;
		dc->open_files = of->next;
		free(of);
	}
	ordfs_mutex_unlock(&dc->files_lock);
}

struct ordfs_file *file_of(const struct fuse_file_info *fi)
{
	struct open_file *of = fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;
	return of ? &of->f : NULL;
}

bool file_is_write_only(const struct fuse_file_info *fi)
{
	struct open_file *of = fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;
	return of && of->write_only;
}
