/*
 * transport_libfuse.c - the same filesystem behind libfuse 3.14's lowlevel
 * API and its multi-threaded loop (fuse_session_loop_mt: threads started
 * as requests wait, up to 10, one /dev/fuse file shared), for reference:
 * what the library's own transport costs next to the hand-written ones.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

struct lf {
	struct probefs *fs;
	struct shared_stats *st;
	int next_slot;
};

static __thread int tslot = -1;
static __thread char *tbuf;	/* READ and READDIR replies */
#define TBUF_SIZE (128u * 1024 + 4096)
static pthread_key_t tbuf_key;	/* frees tbuf when the loop's thread ends */
static pthread_once_t tbuf_once = PTHREAD_ONCE_INIT;

static void tbuf_key_make(void)
{
	pthread_key_create(&tbuf_key, free);
}

static struct lf *lf_of(fuse_req_t req, uint32_t opcode)
{
	struct lf *l = fuse_req_userdata(req);
	if (tslot < 0)
		tslot = __atomic_fetch_add(&l->next_slot, 1, __ATOMIC_RELAXED);
	stat_add(l->st, tslot, false, opcode);
	return l;
}

static char *thread_buf(void)
{
	if (!tbuf) {
		pthread_once(&tbuf_once, tbuf_key_make);
		tbuf = malloc(TBUF_SIZE);	/* kept for the thread's life */
		pthread_setspecific(tbuf_key, tbuf);
	}
	return tbuf;
}

static void to_stat(const struct fuse_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = a->blksize;
	st->st_atim.tv_sec = (time_t)a->atime;
	st->st_atim.tv_nsec = a->atimensec;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = a->mtimensec;
	st->st_ctim.tv_sec = (time_t)a->ctime;
	st->st_ctim.tv_nsec = a->ctimensec;
}

static void to_entry(const struct fuse_entry_out *eo, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = eo->nodeid;
	e->generation = eo->generation;
	to_stat(&eo->attr, &e->attr);
	e->attr_timeout = 0;
	e->entry_timeout = 0;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct lf *l = userdata;
	conn->max_write = 128 * 1024;
	if (l->st) {
		snprintf(l->st->note, sizeof(l->st->note), "libfuse %s, loop_mt", fuse_pkgversion());
		__atomic_store_n(&l->st->state, ST_READY, __ATOMIC_SEQ_CST);
	}
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct lf *l = lf_of(req, FUSE_LOOKUP);
	struct fuse_entry_out eo;
	struct fuse_entry_param e;
	int r = probefs_lookup(l->fs, parent, name, &eo);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	to_entry(&eo, &e);
	fuse_reply_entry(req, &e);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct lf *l = lf_of(req, FUSE_FORGET);
	probefs_forget(l->fs, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	struct lf *l = lf_of(req, FUSE_BATCH_FORGET);
	for (size_t i = 0; i < count; i++)
		probefs_forget(l->fs, f[i].ino, f[i].nlookup);
	fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct lf *l = lf_of(req, FUSE_GETATTR);
	struct fuse_attr_out ao;
	struct stat st;
	int r = probefs_getattr(l->fs, ino, &ao);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	to_stat(&ao.attr, &st);
	fuse_reply_attr(req, &st, 0);
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct lf *l = lf_of(req, FUSE_SETATTR);
	struct fuse_setattr_in in;
	struct fuse_attr_out ao;
	struct stat st;
	memset(&in, 0, sizeof(in));
	/* libfuse's FUSE_SET_ATTR_* bits are the kernel's FATTR_* bits */
	in.valid = (uint32_t)to_set & (FATTR_MODE | FATTR_SIZE | FATTR_ATIME | FATTR_MTIME |
				       FATTR_ATIME_NOW | FATTR_MTIME_NOW);
	in.mode = attr->st_mode;
	in.size = (uint64_t)attr->st_size;
	in.atime = (uint64_t)attr->st_atim.tv_sec;
	in.atimensec = (uint32_t)attr->st_atim.tv_nsec;
	in.mtime = (uint64_t)attr->st_mtim.tv_sec;
	in.mtimensec = (uint32_t)attr->st_mtim.tv_nsec;
	int r = probefs_setattr(l->fs, ino, &in, &ao);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	to_stat(&ao.attr, &st);
	fuse_reply_attr(req, &st, 0);
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct lf *l = lf_of(req, FUSE_CREATE);
	struct fuse_entry_out eo;
	struct fuse_entry_param e;
	int r = probefs_create(l->fs, parent, name, mode, &eo);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	probefs_open(l->fs, eo.nodeid, 0);
	to_entry(&eo, &e);
	fi->fh = eo.nodeid;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) != 0)
		probefs_release(l->fs, eo.nodeid);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lf *l = lf_of(req, FUSE_OPEN);
	int r = probefs_open(l->fs, ino, (uint32_t)fi->flags);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = ino;
	fi->direct_io = 1;
	if (fuse_reply_open(req, fi) != 0)
		probefs_release(l->fs, ino);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	struct lf *l = lf_of(req, FUSE_READ);
	char *buf = thread_buf();
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (size > TBUF_SIZE)
		size = TBUF_SIZE;
	ssize_t n = probefs_read(l->fs, ino, (uint64_t)off, (uint32_t)size, buf);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)fi;
	struct lf *l = lf_of(req, FUSE_WRITE);
	ssize_t n = probefs_write(l->fs, ino, (uint64_t)off, (uint32_t)size, buf);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct lf *l = lf_of(req, FUSE_RELEASE);
	probefs_release(l->fs, ino);
	fuse_reply_err(req, 0);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct lf *l = lf_of(req, FUSE_UNLINK);
	fuse_reply_err(req, -probefs_unlink(l->fs, parent, name));
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	lf_of(req, FUSE_OPENDIR);
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct lf *l = lf_of(req, FUSE_READDIR);
	char *buf = thread_buf();
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (size > TBUF_SIZE)
		size = TBUF_SIZE;
	/* probefs_readdir writes the kernel's fuse_dirent records, which is
	 * what fuse_add_direntry would have built */
	ssize_t n = probefs_readdir(l->fs, ino, (uint64_t)off, (uint32_t)size, buf);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	lf_of(req, FUSE_STATFS);
	struct fuse_statfs_out so;
	struct statvfs sv;
	probefs_statfs(&so);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = so.st.bsize;
	sv.f_frsize = so.st.frsize;
	sv.f_blocks = so.st.blocks;
	sv.f_bfree = so.st.bfree;
	sv.f_bavail = so.st.bavail;
	sv.f_files = so.st.files;
	sv.f_ffree = so.st.ffree;
	sv.f_namemax = so.st.namelen;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.create = ll_create,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.release = ll_release,
	.unlink = ll_unlink,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.statfs = ll_statfs,
};

int server_run_libfuse(const struct probe_opts *o, const char *mnt, struct shared_stats *st)
{
	(void)o;
	struct lf l = { .st = st };
	int ret = 1;
	l.fs = probefs_new(st);
	if (!l.fs)
		return 1;
	char *argv[] = { "fuse_transport_probe", "-o", "fsname=fuse_transport_probe", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), &l);
	fuse_opt_free_args(&args);	/* the parser copied argv into it */
	if (!se)
		goto out_fs;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_se;
	if (fuse_session_mount(se, mnt) != 0)
		goto out_sig;
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 10);
	ret = fuse_session_loop_mt(se, cfg) == 0 ? 0 : 1;
	fuse_loop_cfg_destroy(cfg);
out_unmount:
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out_se:
	fuse_session_destroy(se);
out_fs:
	probefs_free(l.fs);
	if (ret && st && __atomic_load_n(&st->state, __ATOMIC_SEQ_CST) == ST_STARTING)
		__atomic_store_n(&st->state, ST_FAILED, __ATOMIC_SEQ_CST);
	return ret;
}
