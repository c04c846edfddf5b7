/*
 * fuse_ops.c - thin glue: one FUSE lowlevel request -> one ops.h call -> one
 * reply.
 *
 * Owns: the mapping between FUSE node ids and inodes, and the lookup
 * counts; the request helpers every op file uses (fuse_glue.h); the ops
 * on names, attributes, file data, directories, fallocate and lseek;
 * op_init and the operations table.  The other op files: fuse_xattr.c
 * (extended attributes, ACLs), fuse_ioctl.c (ORDFS_IOC_*), open_files.c
 * (the error cursor in fi->fh), fuse_copy_range.c (copy_file_range).  Rules:
 *  - Node id 1 (FUSE_ROOT_ID) is the root inode (2); every other node id is
 *    the inode number (inode 1 is reserved and never exposed).
 *  - Every reply that hands the kernel an entry (lookup, create, mkdir,
 *    readdirplus) keeps one inode reference; forget drops nlookup of them.
 *    So an inode the kernel knows stays cached, and an unlinked one is
 *    freed when the kernel forgets it (the orphan list covers crashes).
 *  - Each handler ends in exactly one reply; errors from the core are
 *    negative errnos, replied as positive ones.  -EUCLEAN (metadata
 *    corruption found) goes through the errors= policy first.
 *  - Every open regular file has a struct ordfs_file in fi->fh: its
 *    cursor into the file's write errors, so fsync through it reports each
 *    error once (errseq).
 *  - Caching (design/caches.md, "What the kernel caches"): attributes, names
 *    and absent names are cached for a day (DAEMON_*_TIMEOUT): every
 *    change
 *    but the filesystem's own reaches ordfs through the kernel, which
 *    updates or drops what it holds, and the filesystem's own changes are
 *    told to it (daemon_attr_changed).  File pages and readdir results
 *    are kept across opens when no read could change atime under the
 *    mount's policy (ordfs_open_keeps_cache); otherwise the open drops
 *    them so the read that owes an atime reaches ordfs.  The writeback
 *    cache is off unless -o writeback_cache asks for it (op_init): by
 *    default every write() reaches the daemon in order and every READ we
 *    get is a read a program made (or its readahead); with it, the kernel
 *    sends written pages later, before FSYNC and at close (design/caches.md,
 *    "Writes through the kernel").  Direct I/O is synchronous (op_init
 *    turns FUSE_CAP_ASYNC_DIO off), so the kernel drops the pages a
 *    direct write covers after our reply, AIO included; the daemon never
 *    invalidates pages itself from a request's handler.
 *  - After FS_IOC_SHUTDOWN (mount/shutdown.c) every request that names an
 *    inode (all but forget, release, statfs and the ordfsctl ioctls) is
 *    answered EIO in get_inode, and a request already under way that
 *    meets the aborted journal (EROFS) gets EIO too, as on ext4.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fuse_ops.h"
#include "fuse_glue.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../ops.h"
#include "../lock/lock.h"

static uint32_t ino_of(fuse_ino_t node)
{
	return node == FUSE_ROOT_ID ? ORDFS_ROOT_INO : (uint32_t)node;
}

static fuse_ino_t node_of(uint32_t ino)
{
	return ino == ORDFS_ROOT_INO ? FUSE_ROOT_ID : ino;
}

struct inode *get_inode(fuse_req_t req, fuse_ino_t node)
{
	struct inode *inode;
	if (node > UINT32_MAX) {
		fuse_reply_err(req, EINVAL);
		return NULL;
	}
	if (ordfs_is_shut_down(ctx_of(req)->fs)) {
		fuse_reply_err(req, EIO);
		return NULL;
	}
	int err = inode_get(ctx_of(req)->fs, ino_of(node), &inode);
	if (err) {
		ordfs_report_error(ctx_of(req)->fs, err, "bad inode");
		fuse_reply_err(req, -err);
		return NULL;
	}
	return inode;
}

static void fill_entry(fuse_req_t req, struct inode *inode, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	ordfs_getattr(ctx_of(req)->fs, inode, &e->attr);
	e->ino = node_of(inode->ino);
	e->generation = inode->d.generation;
	e->attr_timeout = ctx_of(req)->attr_timeout;
	e->entry_timeout = ctx_of(req)->entry_timeout;
}

/* Replies with an entry; the inode reference becomes the kernel's. */
static void reply_entry(fuse_req_t req, struct inode *inode)
{
	struct fuse_entry_param e;
	fill_entry(req, inode, &e);
	if (fuse_reply_entry(req, &e) != 0)
		inode_put(ctx_of(req)->fs, inode); /* the kernel did not take it */
}

struct ordfs_cred cred_of(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct ordfs_cred cred = { c->uid, c->gid };
	return cred;
}

void reply_result(fuse_req_t req, int err)
{
	if (err == -EROFS && ordfs_is_shut_down(ctx_of(req)->fs))
		err = -EIO;
	/* damage the namespace code named (an entry that loops) */
	const char *note = ordfs_take_corruption_note();
	ordfs_report_error(ctx_of(req)->fs, err,
			   note && err == -EUCLEAN ? note : "a damaged block or structure");
	fuse_reply_err(req, err < 0 ? -err : 0);
}


/* ---- names ------------------------------------------------------------- */

/* "." and "..": with FUSE_CAP_EXPORT_SUPPORT the kernel looks up "." on
 * the node id of a file handle whose inode it no longer caches (of any
 * type; it compares the generation we answer with the handle's, so a freed
 * or reused inode gives ESTALE), and ".." to find a directory's parent. */
static int lookup_self_or_parent(struct ordfs *fs, struct inode *node, const char *name,
				 struct inode **out)
{
	if (strcmp(name, ".") == 0) {
		inode_hold(fs, node);
		*out = node;
		return 0;
	}
	return ordfs_lookup_parent(fs, node, out);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct inode *dir = get_inode(req, parent), *child;
	if (!dir)
		return;
	int err;
	bool dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
	if (dots)
		err = lookup_self_or_parent(ctx_of(req)->fs, dir, name, &child);
	else
		err = ordfs_lookup(ctx_of(req)->fs, dir, name, &child);
	inode_put(ctx_of(req)->fs, dir);
	if (err == -ENOENT && !dots) {
		/* Remembered as absent until a create through the kernel. */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = ctx_of(req)->negative_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (err) {
		reply_result(req, err);
		return;
	}
	reply_entry(req, child);
}

void daemon_attr_changed(void *ctx, uint32_t ino)
{
	struct daemon_ctx *dc = ctx;
	if (dc->se) /* fails harmlessly once the session has ended */
		(void)fuse_lowlevel_notify_inval_inode(dc->se, node_of(ino), -1, 0);
}

static void op_forget_one(struct ordfs *fs, fuse_ino_t node, uint64_t nlookup)
{
	struct inode *inode;
	if (node > UINT32_MAX || inode_get(fs, ino_of(node), &inode) != 0)
		return;
	for (uint64_t i = 0; i < nlookup; i++)
		inode_put(fs, inode);
	inode_put(fs, inode);
}

static void op_forget(fuse_req_t req, fuse_ino_t node, uint64_t nlookup)
{
	op_forget_one(ctx_of(req)->fs, node, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		op_forget_one(ctx_of(req)->fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* The caller's umask for create, mkdir and mknod.  With FUSE_CAP_DONT_MASK
 * (op_init) the kernel leaves it to us, and the core applies it only when
 * the directory has no default ACL; without it the kernel has applied it
 * already and applying it again changes nothing. */
static uint32_t umask_of(fuse_req_t req)
{
	return (uint32_t)fuse_req_ctx(req)->umask & 0777u;
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct inode *dir = get_inode(req, parent), *child;
	if (!dir)
		return;
	struct ordfs_cred cred = cred_of(req);
	int err = ordfs_mkdir_umask(ctx_of(req)->fs, dir, name, (uint16_t)mode, umask_of(req),
				    &cred, &child);
	inode_put(ctx_of(req)->fs, dir);
	if (err)
		reply_result(req, err);
	else
		reply_entry(req, child);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct inode *dir = get_inode(req, parent), *child;
	if (!dir)
		return;
	struct ordfs_cred cred = cred_of(req);
	int err = ordfs_create_umask(ctx_of(req)->fs, dir, name, (uint16_t)mode, umask_of(req),
				     &cred, &child);
	inode_put(ctx_of(req)->fs, dir);
	if (err) {
		reply_result(req, err);
		return;
	}
	struct fuse_entry_param e;
	fill_entry(req, child, &e);
	if (!attach_file(req, child, fi)) {
		inode_put(ctx_of(req)->fs, child);
		return;
	}
	if (fuse_reply_create(req, &e, fi) != 0) {
		detach_file(ctx_of(req), fi);
		inode_put(ctx_of(req)->fs, child);
	}
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct inode *dir = get_inode(req, parent), *child;
	if (!dir)
		return;
	struct ordfs_cred cred = cred_of(req);
	int err = ordfs_mknod_umask(ctx_of(req)->fs, dir, name, (uint16_t)mode, (uint32_t)rdev,
				    umask_of(req), &cred, &child);
	inode_put(ctx_of(req)->fs, dir);
	if (err)
		reply_result(req, err);
	else
		reply_entry(req, child);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	struct inode *dir = get_inode(req, parent), *child;
	if (!dir)
		return;
	struct ordfs_cred cred = cred_of(req);
	int err = ordfs_symlink(ctx_of(req)->fs, dir, name, target, &cred, &child);
	inode_put(ctx_of(req)->fs, dir);
	if (err)
		reply_result(req, err);
	else
		reply_entry(req, child);
}

static void op_readlink(fuse_req_t req, fuse_ino_t node)
{
	struct inode *link = get_inode(req, node);
	if (!link)
		return;
	char buf[ORDFS_SYMLINK_MAX + 1];
	ssize_t n = ordfs_readlink(ctx_of(req)->fs, link, buf, ORDFS_SYMLINK_MAX);
	inode_put(ctx_of(req)->fs, link);
	if (n < 0) {
		reply_result(req, (int)n);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void op_link(fuse_req_t req, fuse_ino_t node, fuse_ino_t newparent, const char *newname)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	struct inode *dir = get_inode(req, newparent);
	if (!dir) {
		inode_put(ctx_of(req)->fs, inode);
		return;
	}
	int err = ordfs_link(ctx_of(req)->fs, inode, dir, newname);
	inode_put(ctx_of(req)->fs, dir);
	if (err) {
		inode_put(ctx_of(req)->fs, inode);
		reply_result(req, err);
		return;
	}
	reply_entry(req, inode); /* the new name is a lookup: keep the reference */
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct inode *dir = get_inode(req, parent);
	if (!dir)
		return;
	int err = ordfs_unlink(ctx_of(req)->fs, dir, name);
	inode_put(ctx_of(req)->fs, dir);
	reply_result(req, err);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct inode *dir = get_inode(req, parent);
	if (!dir)
		return;
	int err = ordfs_rmdir(ctx_of(req)->fs, dir, name);
	inode_put(ctx_of(req)->fs, dir);
	reply_result(req, err);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct inode *olddir = get_inode(req, parent);
	if (!olddir)
		return;
	struct inode *newdir = get_inode(req, newparent);
	if (!newdir) {
		inode_put(ctx_of(req)->fs, olddir);
		return;
	}
	int err = ordfs_rename(ctx_of(req)->fs, olddir, name, newdir, newname, flags);
	inode_put(ctx_of(req)->fs, olddir);
	inode_put(ctx_of(req)->fs, newdir);
	reply_result(req, err);
}

/* ---- attributes ---------------------------------------------------------- */

static void op_getattr(fuse_req_t req, fuse_ino_t node, struct fuse_file_info *fi)
{
	(void)fi;
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	struct stat st;
	ordfs_getattr(ctx_of(req)->fs, inode, &st);
	inode_put(ctx_of(req)->fs, inode);
	fuse_reply_attr(req, &st, ctx_of(req)->attr_timeout);
}

static struct ordfs_timespec ts_of(struct timespec t)
{
	struct ordfs_timespec o = { t.tv_sec, (uint32_t)t.tv_nsec };
	return o;
}

static void op_setattr(fuse_req_t req, fuse_ino_t node, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	struct ordfs_setattr sa;
	memset(&sa, 0, sizeof(sa));
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= ORDFS_SET_MODE;
		sa.mode = (uint16_t)attr->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= ORDFS_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= ORDFS_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= ORDFS_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= ORDFS_SET_ATIME;
		sa.atime = ts_of(attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa.valid |= ORDFS_SET_ATIME | ORDFS_SET_ATIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= ORDFS_SET_MTIME;
		sa.mtime = ts_of(attr->st_mtim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa.valid |= ORDFS_SET_MTIME | ORDFS_SET_MTIME_NOW;

	int err = ordfs_setattr(ctx_of(req)->fs, inode, &sa);
	if (err) {
		inode_put(ctx_of(req)->fs, inode);
		reply_result(req, err);
		return;
	}
	struct stat st;
	ordfs_getattr(ctx_of(req)->fs, inode, &st);
	inode_put(ctx_of(req)->fs, inode);
	fuse_reply_attr(req, &st, ctx_of(req)->attr_timeout);
}

static void op_statfs(fuse_req_t req, fuse_ino_t node)
{
	(void)node;
	struct ordfs_statfs s;
	struct statvfs v;
	ordfs_statfs(ctx_of(req)->fs, &s);
	memset(&v, 0, sizeof(v));
	v.f_bsize = v.f_frsize = s.block_size;
	v.f_blocks = s.blocks;
	v.f_bfree = s.blocks_free;
	v.f_bavail = s.blocks_avail;
	v.f_files = s.inodes;
	v.f_ffree = v.f_favail = s.inodes_free;
	v.f_namemax = s.name_max;
	fuse_reply_statfs(req, &v);
}

/* ---- file data ------------------------------------------------------------ */

static void op_open(fuse_req_t req, fuse_ino_t node, struct fuse_file_info *fi)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	int err = 0;
	if (S_ISDIR(inode->d.mode))
		err = -EISDIR;
	else
		err = ordfs_open_check(ctx_of(req)->fs, inode, fi->flags); /* chattr +i, +a */
	if (!err && (fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY)
		err = ordfs_truncate(ctx_of(req)->fs, inode, 0);
	if (err) {
		inode_put(ctx_of(req)->fs, inode);
		reply_result(req, err);
		return;
	}
	/* The kernel's cached pages stay unless a read must reach us for its
	 * atime (or this open truncated the file). */
	fi->keep_cache = !(fi->flags & O_TRUNC) && ordfs_open_keeps_cache(ctx_of(req)->fs, inode);
	bool ok = attach_file(req, inode, fi);
	inode_put(ctx_of(req)->fs, inode);
	if (ok && fuse_reply_open(req, fi) != 0)
		detach_file(ctx_of(req), fi);
}

/* Directories: the kernel caches readdir results (and drops them when a
 * name in the directory changes through it) under the same atime rule. */
static void op_opendir(fuse_req_t req, fuse_ino_t node, struct fuse_file_info *fi)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	bool keep = ordfs_open_keeps_cache(ctx_of(req)->fs, inode);
	inode_put(ctx_of(req)->fs, inode);
	fi->cache_readdir = keep;
	fi->keep_cache = keep;
	fuse_reply_open(req, fi);
}

char *reply_buffer(fuse_req_t req, struct inode *inode, size_t size, bool allow_empty,
		   bool *failed)
{
	*failed = false;
	if (size == 0 && allow_empty)
		return NULL;
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		inode_put(ctx_of(req)->fs, inode);
		fuse_reply_err(req, ENOMEM);
		*failed = true;
	}
	return buf;
}

static void op_read(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	bool failed;
	char *buf = reply_buffer(req, inode, size, false, &failed);
	if (failed)
		return;
	/* With the writeback cache the kernel reads a page through a
	 * write-only open to complete a partial write: not an access. */
	ssize_t n = ctx_of(req)->writeback_cache && file_is_write_only(fi)
			    ? ordfs_read_for_write(ctx_of(req)->fs, inode, buf, size, (uint64_t)off)
			    : ordfs_read(ctx_of(req)->fs, inode, buf, size, (uint64_t)off);
	inode_put(ctx_of(req)->fs, inode);
	if (n < 0)
		reply_result(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t node, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	/* The kernel passes the file's current open flags (an append-only
	 * file takes only O_APPEND writes, also after fcntl cleared it), and
	 * marks the pages it writes back from its cache. */
	unsigned how = ((fi->flags & O_APPEND) ? ORDFS_WRITE_APPEND : 0) |
		       (fi->writepage ? ORDFS_WRITE_CACHED : 0);
	ssize_t n = ordfs_write_by(ctx_of(req)->fs, inode, buf, size, (uint64_t)off, how);
	inode_put(ctx_of(req)->fs, inode);
	if (n < 0)
		reply_result(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_release(fuse_req_t req, fuse_ino_t node, struct fuse_file_info *fi)
{
	(void)node;
	detach_file(ctx_of(req), fi);
	fuse_reply_err(req, 0);
}

/* fsync and fdatasync, whatever the file was opened for (read-only too):
 * its dirty data becomes durable, and each write error of the file is
 * reported once to this open file description. */
static void op_fsync(fuse_req_t req, fuse_ino_t node, int datasync,
		     struct fuse_file_info *fi)
{
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	struct ordfs_file *f = file_of(fi);
	int err = f ? ordfs_file_fsync(ctx_of(req)->fs, inode, f, datasync != 0)
		    : ordfs_fsync(ctx_of(req)->fs, inode, datasync != 0);
	inode_put(ctx_of(req)->fs, inode);
	reply_result(req, err);
}

/* ---- directories ------------------------------------------------------------ */

/* An entry of a READDIRPLUS reply, found under the directory's lock and
 * given its attributes after it: no inode is locked under the directory's
 * (an entry may name the directory itself or an ancestor). */
struct plus_entry {
	uint32_t ino;
	off_t next;
	char name[ORDFS_NAME_MAX + 1];
};

struct dir_fill {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool plus;
	int err;
	struct plus_entry *pending; /* plus: entries to fill in */
	size_t npending, cap, planned; /* planned: bytes they will take */
};

/* FUSE offsets: 1 after ".", 2 after "..", 2 + cookie after an entry
 * (directory cookies are below 2^63 - 2 in practice: see dir/dir_readdir.c).
 * "." and ".." (and every entry of a plain READDIR) are added at once,
 * without attributes; other READDIRPLUS entries are planned, for
 * fill_planned. */
static int add_dirent(struct dir_fill *f, const char *name, uint32_t ino, mode_t type,
		      off_t next)
{
	size_t room = f->size - f->used;
	size_t need;

	if (f->plus && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
		need = fuse_add_direntry_plus(f->req, NULL, 0, name, NULL, 0);
		if (f->planned + need > room)
			return 1;
		if (f->npending == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 16;
			struct plus_entry *p = realloc(f->pending, cap * sizeof(*p));
			if (!p) {
				f->err = -ENOMEM;
				return 1;
			}
			f->pending = p;
			f->cap = cap;
		}
		struct plus_entry *pe = &f->pending[f->npending++];
		pe->ino = ino;
		pe->next = next;
		snprintf(pe->name, sizeof(pe->name), "%s", name);
		f->planned += need;
		return 0;
	}
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = type << 12;
	if (f->plus) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.attr = st;
		need = fuse_add_direntry_plus(f->req, f->buf + f->used, room, name, &e, next);
	} else {
		need = fuse_add_direntry(f->req, f->buf + f->used, room, name, &st, next);
	}
	if (need > room)
		return 1;
	f->used += need;
	return 0;
}

/* The planned READDIRPLUS entries, with attributes, the directory's lock
 * no longer held.  Each keeps an inode reference (the kernel's lookup).
 * An entry that names a directory it may not (ordfs_check_entry) ends the
 * reply with -EUCLEAN there; one renamed meanwhile is left out. */
static void fill_planned(struct dir_fill *f, struct inode *dir)
{
	struct ordfs *fs = ctx_of(f->req)->fs;
	for (size_t i = 0; i < f->npending && !f->err; i++) {
		struct plus_entry *pe = &f->pending[i];
		struct inode *inode;
		int err = inode_get(fs, pe->ino, &inode);
		if (!err) {
			err = ordfs_check_entry(fs, dir, pe->name, strlen(pe->name), inode);
			if (err)
				inode_put(fs, inode);
		}
		if (err == -EAGAIN)
			continue;
		if (err) {
			f->err = err;
			break;
		}
		struct fuse_entry_param e;
		fill_entry(f->req, inode, &e);
		size_t room = f->size - f->used;
		size_t need = fuse_add_direntry_plus(f->req, f->buf + f->used, room, pe->name, &e,
						     pe->next);
		if (need > room) { /* cannot happen: planned */
			inode_put(fs, inode);
			break;
		}
		f->used += need; /* the reference is the kernel's lookup now */
	}
}

static int emit_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		      uint64_t next_cookie)
{
	char namebuf[ORDFS_NAME_MAX + 1];
	if (len > ORDFS_NAME_MAX)
		return 1;
	memcpy(namebuf, name, len);
	namebuf[len] = '\0';
	return add_dirent(ctx, namebuf, ino, dtype, (off_t)(next_cookie + 2));
}

static void readdir_common(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
			   bool plus)
{
	struct inode *dir = get_inode(req, node);
	if (!dir)
		return;
	struct dir_fill f = { .req = req, .buf = malloc(size ? size : 1), .size = size,
			      .plus = plus };
	if (!f.buf) {
		inode_put(ctx_of(req)->fs, dir);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	int stop = 0, read_err = 0;
	if (off == 0)
		stop = add_dirent(&f, ".", dir->ino, DT_DIR, 1);
	if (!stop && off <= 1)
		stop = add_dirent(&f, "..", dir->d.parent, DT_DIR, 2);
	if (!stop) {
		uint64_t cookie = off >= 2 ? (uint64_t)off - 2 : 0;
		int err = ordfs_readdir(ctx_of(req)->fs, dir, cookie, emit_entry, &f);
		if (err < 0)
			read_err = err;
	}
	/* The entries planned before a failed read (a damaged block further
	 * on) still go out; the error is the next request's, which starts
	 * where this reply ends. */
	if (f.npending)
		fill_planned(&f, dir);
	if (!f.err)
		f.err = read_err;
	free(f.pending);
	inode_put(ctx_of(req)->fs, dir);
	if (f.err && f.used == 0) {
		reply_result(req, f.err);
	} else {
		if (f.err) /* the next request, from the entry that failed, says it */
			(void)ordfs_take_corruption_note();
		fuse_reply_buf(req, f.buf, f.used);
	}
	free(f.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, node, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, node, size, off, true);
}

/* Directories have no error cursor (fi->fh is 0): fsyncdir makes the
 * directory's entries durable and reports its own failure. */
static void op_fsyncdir(fuse_req_t req, fuse_ino_t node, int datasync,
			struct fuse_file_info *fi)
{
	(void)fi;
	op_fsync(req, node, datasync, NULL);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t node, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	(void)fi;
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	int err = 0;
	struct stat st;
	ordfs_getattr(ctx_of(req)->fs, inode, &st);
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		struct ordfs_caller caller;
		uint32_t groups[CALLER_GROUPS_MAX];
		caller_of(req, &caller, groups);
		err = ordfs_drop_privs(ctx_of(req)->fs, inode, &caller);
		if (err == 1) {
			/* The kernel cached the mode it sent us a moment ago. */
			fuse_lowlevel_notify_inval_inode(ctx_of(req)->se, node, -1, 0);
			err = 0;
		}
	}
	if (!err)
		err = ordfs_fallocate(ctx_of(req)->fs, inode, mode, (uint64_t)offset,
				      (uint64_t)length);
	inode_put(ctx_of(req)->fs, inode);
	reply_result(req, err);
}

/* The kernel sends only SEEK_DATA and SEEK_HOLE here. */
static void op_lseek(fuse_req_t req, fuse_ino_t node, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	(void)fi;
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return;
	off_t pos = off < 0 ? -ENXIO
			    : ordfs_seek_data_hole(ctx_of(req)->fs, inode, (uint64_t)off, whence);
	inode_put(ctx_of(req)->fs, inode);
	if (pos < 0)
		reply_result(req, (int)pos);
	else
		fuse_reply_lseek(req, pos);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct daemon_ctx *dc = userdata;
	/* Writeback cache off by default: every write reaches the daemon at
	 * once (delayed allocation, ENOSPC at write(), fsync that waits only
	 * for its own data).  -o writeback_cache lets the kernel hold written
	 * pages and send them later (design/caches.md, "Writes through the
	 * kernel"). */
	if (dc->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* The kernel keeps the smaller of the mount's readahead window (which
	 * the daemon raised before this INIT, readahead.c) and this. */
	if ((uint64_t)dc->read_ahead_kb * 1024 > conn->max_readahead)
		conn->max_readahead = dc->read_ahead_kb * 1024u;
	/* ioctls on directories too: `ordfsctl sync MOUNTPOINT`. */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* POSIX ACLs: the kernel caches the ACL xattrs and enforces them
	 * (default_permissions is on anyway); we keep the mode and the ACL in
	 * step and do the inheritance, which needs the umask left to us. */
	if (conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	/* File handles that outlive the kernel's inode cache (NFS export,
	 * open_by_handle_at): node ids are inode numbers, checked by
	 * generation (op_lookup's "." and ".."). */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
#ifdef FUSE_CAP_POSIX_ACL
	if (conn->capable & FUSE_CAP_POSIX_ACL)
		conn->want |= FUSE_CAP_POSIX_ACL;
#endif
	/* Kept pages are dropped when the kernel sees a file's mtime or size
	 * change (libfuse asks for it by default; the caching rules of
	 * design/caches.md, "What the kernel caches", rely on it, so ask
	 * here). */
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* Direct I/O is synchronous, so a direct write never leaves older
	 * pages behind (design/caches.md, "What the kernel caches", direct
	 * writes). The kernel drops the written range's pages before a direct
	 * write
	 * and again once it has our reply, but with FUSE_CAP_ASYNC_DIO
	 * (libfuse's default) an AIO write goes back to io_submit as queued
	 * and that second pass never runs: a page a buffered reader filled
	 * from us with the old bytes while the write was in flight stays, and
	 * keep_cache keeps it across opens.  Without the capability the
	 * kernel sends the write and waits for the reply in the writer's own
	 * task, then invalidates, as for any synchronous O_DIRECT write; we
	 * wait on nothing.  Not fuse_lowlevel_notify_inval_inode() from
	 * op_write before the reply: it would block a worker on page locks
	 * whose release can need that very request (a short direct write the
	 * kernel finishes as a buffered one), or a worker or background slot
	 * that blocked writes hold. */
	conn->want &= ~FUSE_CAP_ASYNC_DIO;
}

const struct fuse_lowlevel_ops ordfs_fuse_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.mknod = op_mknod,
	.symlink = op_symlink,
	.readlink = op_readlink,
	.link = op_link,
	.create = op_create,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.opendir = op_opendir,
	.read = op_read,
	.write = op_write,
	/* No .flush: close() has nothing to tell us (write errors are reported
	 * by fsync, once per open file, as on ext4; there are no POSIX locks
	 * to release here), so the kernel stops sending FLUSH after the first
	 * ENOSYS and every close saves a round trip. */
	.release = op_release,
	.fsync = op_fsync,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.fallocate = op_fallocate,
	.copy_file_range = op_copy_file_range,
	.lseek = op_lseek,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.ioctl = op_ioctl,
};
