/*
 * probefs.c - the probe's filesystem: one root directory of regular files
 * held in memory, answered from the FUSE protocol's own structures so that
 * every transport runs the same code.  Attribute and entry timeouts are 0,
 * so every stat and every path walk reaches the server; open replies ask
 * for direct I/O, so every read and write does too.  One mutex guards it
 * all (the server has at most a few threads).
 *
 * A file whose name starts with "stall" never answers a READ: the
 * self-test's kill -9 case uses it to hold a client inside a request.
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES (1u << 20)
#define MAX_FILE (64u << 20)
#define NBUCKETS 4096

struct pnode {
	uint64_t gen;
	uint32_t mode;		/* 0: free slot */
	uint32_t nlink;
	uint64_t nlookup;	/* the kernel's references (LOOKUP, CREATE) */
	uint32_t opens;
	bool linked;		/* has a name in the root */
	bool stall;
	uint64_t size;
	char *data;
	size_t cap;
	struct timespec atime, mtime, ctime;
	uint32_t hnext;		/* name hash chain, 0 ends it */
	uint32_t free_next;
	char name[256];
};

struct probefs {
	pthread_mutex_t lock;
	struct pnode *n;
	uint32_t count, cap;	/* slots used (0 is never used, 1 is the root) */
	uint32_t free_head;
	uint64_t gen;
	uint32_t bucket[NBUCKETS];
	struct shared_stats *st;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % NBUCKETS;
}

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

struct probefs *probefs_new(struct shared_stats *st)
{
	struct probefs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	pthread_mutex_init(&fs->lock, NULL);
	fs->cap = 1024;
	fs->n = calloc(fs->cap, sizeof(*fs->n));
	if (!fs->n) {
		free(fs);
		return NULL;
	}
	fs->count = 2;
	fs->st = st;
	struct pnode *root = &fs->n[FUSE_ROOT_ID];
	root->mode = S_IFDIR | 0755;
	root->nlink = 2;
	root->gen = 1;
	now(&root->mtime);
	root->atime = root->ctime = root->mtime;
	return fs;
}

void probefs_free(struct probefs *fs)
{
	if (!fs)
		return;
	for (uint32_t i = 0; i < fs->count; i++)
		free(fs->n[i].data);
	free(fs->n);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}

static struct pnode *node(struct probefs *fs, uint64_t ino)
{
	if (ino == 0 || ino >= fs->count || fs->n[ino].mode == 0)
		return NULL;
	return &fs->n[ino];
}

static uint32_t find_name(struct probefs *fs, const char *name)
{
	for (uint32_t i = fs->bucket[name_hash(name)]; i; i = fs->n[i].hnext)
		if (strcmp(fs->n[i].name, name) == 0)
			return i;
	return 0;
}

static void unhash(struct probefs *fs, uint32_t ino)
{
	uint32_t *p = &fs->bucket[name_hash(fs->n[ino].name)];
	while (*p && *p != ino)
		p = &fs->n[*p].hnext;
	if (*p)
		*p = fs->n[ino].hnext;
	fs->n[ino].hnext = 0;
	fs->n[ino].linked = false;
}

static void maybe_free(struct probefs *fs, uint32_t ino)
{
	struct pnode *n = &fs->n[ino];
	if (ino == FUSE_ROOT_ID || n->nlink || n->nlookup || n->opens)
		return;
	free(n->data);
	uint64_t gen = n->gen;
	memset(n, 0, sizeof(*n));
	n->gen = gen;
	n->free_next = fs->free_head;
	fs->free_head = ino;
}

static void fill_attr(uint64_t ino, const struct pnode *n, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->size = n->size;
	a->blocks = (n->size + 511) / 512;
	a->atime = (uint64_t)n->atime.tv_sec;
	a->atimensec = (uint32_t)n->atime.tv_nsec;
	a->mtime = (uint64_t)n->mtime.tv_sec;
	a->mtimensec = (uint32_t)n->mtime.tv_nsec;
	a->ctime = (uint64_t)n->ctime.tv_sec;
	a->ctimensec = (uint32_t)n->ctime.tv_nsec;
	a->mode = n->mode;
	a->nlink = n->nlink;
	a->blksize = 4096;
}

/* Timeouts 0: the kernel asks again for every stat and path walk. */
static void fill_entry(uint64_t ino, const struct pnode *n, struct fuse_entry_out *eo)
{
	memset(eo, 0, sizeof(*eo));
	eo->nodeid = ino;
	eo->generation = n->gen;
	fill_attr(ino, n, &eo->attr);
}

static int lookup_l(struct probefs *fs, uint64_t parent, const char *name,
		    struct fuse_entry_out *eo)
{
	if (parent != FUSE_ROOT_ID)
		return node(fs, parent) ? -ENOTDIR : -ENOENT;
	uint32_t ino;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		ino = FUSE_ROOT_ID;
	else
		ino = find_name(fs, name);
	if (!ino)
		return -ENOENT;
	struct pnode *n = &fs->n[ino];
	n->nlookup++;
	fill_entry(ino, n, eo);
	return 0;
}

int probefs_lookup(struct probefs *fs, uint64_t parent, const char *name,
		   struct fuse_entry_out *eo)
{
	pthread_mutex_lock(&fs->lock);
	int r = lookup_l(fs, parent, name, eo);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int probefs_getattr(struct probefs *fs, uint64_t ino, struct fuse_attr_out *ao)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (!n) {
		r = -ENOENT;
	} else {
		memset(ao, 0, sizeof(*ao));
		fill_attr(ino, n, &ao->attr);
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static int resize_l(struct pnode *n, uint64_t size)
{
	if (size > MAX_FILE)
		return -EFBIG;
	if (size > n->cap) {
		size_t cap = n->cap ? n->cap : 4096;
		while (cap < size)
			cap *= 2;
		char *d = realloc(n->data, cap);
		if (!d)
			return -ENOSPC;
		memset(d + n->cap, 0, cap - n->cap);
		n->data = d;
		n->cap = cap;
	}
	if (size < n->size)
		memset(n->data + size, 0, n->size - size);
	n->size = size;
	return 0;
}

int probefs_setattr(struct probefs *fs, uint64_t ino, const struct fuse_setattr_in *in,
		    struct fuse_attr_out *ao)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (!n) {
		r = -ENOENT;
		goto out;
	}
	if (in->valid & FATTR_SIZE) {
		if (S_ISDIR(n->mode)) {
			r = -EISDIR;
			goto out;
		}
		r = resize_l(n, in->size);
		if (r)
			goto out;
		now(&n->mtime);
	}
	if (in->valid & FATTR_MODE)
		n->mode = (n->mode & S_IFMT) | (in->mode & 07777);
	if (in->valid & FATTR_ATIME_NOW)
		now(&n->atime);
	else if (in->valid & FATTR_ATIME)
		n->atime = (struct timespec){ (time_t)in->atime, in->atimensec };
	if (in->valid & FATTR_MTIME_NOW)
		now(&n->mtime);
	else if (in->valid & FATTR_MTIME)
		n->mtime = (struct timespec){ (time_t)in->mtime, in->mtimensec };
	now(&n->ctime);
	memset(ao, 0, sizeof(*ao));
	fill_attr(ino, n, &ao->attr);
out:
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static int new_node_l(struct probefs *fs, const char *name, uint32_t mode, uint32_t *inop)
{
	if (find_name(fs, name))
		return -EEXIST;
	uint32_t ino = fs->free_head;
	if (ino) {
		fs->free_head = fs->n[ino].free_next;
	} else {
		if (fs->count >= MAX_NODES)
			return -ENOSPC;
		if (fs->count == fs->cap) {
			struct pnode *nn = realloc(fs->n, 2 * fs->cap * sizeof(*nn));
			if (!nn)
				return -ENOSPC;
			memset(nn + fs->cap, 0, fs->cap * sizeof(*nn));
			fs->n = nn;
			fs->cap *= 2;
		}
		ino = fs->count++;
	}
	struct pnode *n = &fs->n[ino];
	uint64_t gen = n->gen;
	memset(n, 0, sizeof(*n));
	n->gen = gen + 1;
	n->mode = S_IFREG | (mode & 07777);
	n->nlink = 1;
	n->linked = true;
	n->stall = strncmp(name, "stall", 5) == 0;
	strcpy(n->name, name);
	now(&n->mtime);
	n->atime = n->ctime = n->mtime;
	uint32_t b = name_hash(name);
	n->hnext = fs->bucket[b];
	fs->bucket[b] = ino;
	now(&fs->n[FUSE_ROOT_ID].mtime);
	fs->n[FUSE_ROOT_ID].ctime = fs->n[FUSE_ROOT_ID].mtime;
	*inop = ino;
	return 0;
}

int probefs_create(struct probefs *fs, uint64_t parent, const char *name, uint32_t mode,
		   struct fuse_entry_out *eo)
{
	if (parent != FUSE_ROOT_ID)
		return -ENOTDIR;
	if (!S_ISREG(mode) && (mode & S_IFMT))
		return -EPERM;
	pthread_mutex_lock(&fs->lock);
	uint32_t ino;
	int r = new_node_l(fs, name, mode, &ino);
	if (r == 0) {
		fs->n[ino].nlookup = 1;
		fill_entry(ino, &fs->n[ino], eo);
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int probefs_open(struct probefs *fs, uint64_t ino, uint32_t flags)
{
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (!n)
		r = -ENOENT;
	else if ((flags & O_TRUNC) && S_ISREG(n->mode))
		r = resize_l(n, 0);
	if (r == 0)
		n->opens++;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int probefs_release(struct probefs *fs, uint64_t ino)
{
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (n && n->opens) {
		n->opens--;
		maybe_free(fs, (uint32_t)ino);
	}
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int probefs_unlink(struct probefs *fs, uint64_t parent, const char *name)
{
	if (parent != FUSE_ROOT_ID)
		return -ENOTDIR;
	int r = 0;
	pthread_mutex_lock(&fs->lock);
	uint32_t ino = find_name(fs, name);
	if (!ino) {
		r = -ENOENT;
	} else {
		unhash(fs, ino);
		fs->n[ino].nlink = 0;
		now(&fs->n[ino].ctime);
		now(&fs->n[FUSE_ROOT_ID].mtime);
		maybe_free(fs, ino);
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

ssize_t probefs_read(struct probefs *fs, uint64_t ino, uint64_t off, uint32_t size, void *buf)
{
	ssize_t r;
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (!n) {
		r = -ENOENT;
	} else if (S_ISDIR(n->mode)) {
		r = -EISDIR;
	} else if (n->stall) {
		pthread_mutex_unlock(&fs->lock);
		if (fs->st)
			__atomic_add_fetch(&fs->st->stalled, 1, __ATOMIC_SEQ_CST);
		for (;;)	/* until the process is killed */
			sleep(3600);
	} else {
		uint64_t len = off < n->size ? n->size - off : 0;
		if (len > size)
			len = size;
		if (len)
			memcpy(buf, n->data + off, len);
		r = (ssize_t)len;
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

ssize_t probefs_write(struct probefs *fs, uint64_t ino, uint64_t off, uint32_t size,
		      const void *buf)
{
	ssize_t r;
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (!n) {
		r = -ENOENT;
	} else if (!S_ISREG(n->mode)) {
		r = -EISDIR;
	} else if (off > MAX_FILE || size > MAX_FILE - off) {
		r = -EFBIG;
	} else {
		r = 0;
		if (off + size > n->size)
			r = resize_l(n, off + size);
		if (r == 0) {
			memcpy(n->data + off, buf, size);
			now(&n->mtime);
			n->ctime = n->mtime;
			r = size;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

void probefs_forget(struct probefs *fs, uint64_t ino, uint64_t nlookup)
{
	pthread_mutex_lock(&fs->lock);
	struct pnode *n = node(fs, ino);
	if (n && ino != FUSE_ROOT_ID) {
		n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
		maybe_free(fs, (uint32_t)ino);
	}
	pthread_mutex_unlock(&fs->lock);
}

/* Offsets: 1 ".", 2 "..", slot i + 2 for the file in slot i (i >= 2). */
static size_t add_dirent(char *buf, size_t room, uint64_t ino, uint64_t off, uint32_t type,
			 const char *name)
{
	size_t len = strlen(name);
	size_t rec = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + len);
	if (rec > room)
		return 0;
	struct fuse_dirent *d = (struct fuse_dirent *)buf;
	d->ino = ino;
	d->off = off;
	d->namelen = (uint32_t)len;
	d->type = type;
	memcpy(d->name, name, len);
	memset(d->name + len, 0, rec - FUSE_NAME_OFFSET - len);
	return rec;
}

ssize_t probefs_readdir(struct probefs *fs, uint64_t ino, uint64_t off, uint32_t size, void *out)
{
	if (ino != FUSE_ROOT_ID)
		return -ENOTDIR;
	char *buf = out;
	size_t used = 0, rec;
	pthread_mutex_lock(&fs->lock);
	if (off < 1) {
		if (!(rec = add_dirent(buf + used, size - used, FUSE_ROOT_ID, 1, S_IFDIR >> 12, ".")))
			goto out;
		used += rec;
	}
	if (off < 2) {
		if (!(rec = add_dirent(buf + used, size - used, FUSE_ROOT_ID, 2, S_IFDIR >> 12, "..")))
			goto out;
		used += rec;
	}
	for (uint64_t i = off >= 3 ? off - 1 : 2; i < fs->count; i++) {
		struct pnode *n = &fs->n[i];
		if (!n->mode || !n->linked)
			continue;
		if (!(rec = add_dirent(buf + used, size - used, i, i + 2, n->mode >> 12, n->name)))
			break;
		used += rec;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return (ssize_t)used;
}

void probefs_statfs(struct fuse_statfs_out *so)
{
	memset(so, 0, sizeof(*so));
	so->st.blocks = so->st.bfree = so->st.bavail = MAX_FILE / 4096;
	so->st.files = so->st.ffree = MAX_NODES;
	so->st.bsize = so->st.frsize = 4096;
	so->st.namelen = 255;
}

size_t probefs_op_in_size(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_FORGET: return sizeof(struct fuse_forget_in);
	case FUSE_GETATTR: return sizeof(struct fuse_getattr_in);
	case FUSE_SETATTR: return sizeof(struct fuse_setattr_in);
	case FUSE_MKNOD: return sizeof(struct fuse_mknod_in);
	case FUSE_MKDIR: return sizeof(struct fuse_mkdir_in);
	case FUSE_RENAME: return sizeof(struct fuse_rename_in);
	case FUSE_LINK: return sizeof(struct fuse_link_in);
	case FUSE_OPEN: case FUSE_OPENDIR: return sizeof(struct fuse_open_in);
	case FUSE_READ: case FUSE_READDIR: case FUSE_READDIRPLUS: return sizeof(struct fuse_read_in);
	case FUSE_WRITE: return sizeof(struct fuse_write_in);
	case FUSE_RELEASE: case FUSE_RELEASEDIR: return sizeof(struct fuse_release_in);
	case FUSE_FSYNC: case FUSE_FSYNCDIR: return sizeof(struct fuse_fsync_in);
	case FUSE_GETXATTR: case FUSE_LISTXATTR: return sizeof(struct fuse_getxattr_in);
	case FUSE_FLUSH: return sizeof(struct fuse_flush_in);
	case FUSE_INIT: return sizeof(struct fuse_init_in);
	case FUSE_ACCESS: return sizeof(struct fuse_access_in);
	case FUSE_CREATE: return sizeof(struct fuse_create_in);
	case FUSE_INTERRUPT: return sizeof(struct fuse_interrupt_in);
	case FUSE_BATCH_FORGET: return sizeof(struct fuse_batch_forget_in);
	case FUSE_FALLOCATE: return sizeof(struct fuse_fallocate_in);
	case FUSE_RENAME2: return sizeof(struct fuse_rename2_in);
	case FUSE_LSEEK: return sizeof(struct fuse_lseek_in);
	default: return 0;	/* LOOKUP, UNLINK, STATFS, DESTROY, ...: name or nothing */
	}
}

/* A NUL-terminated name at the start of the payload, copied out (the
 * payload's buffer may be the reply's). */
static int get_name(const void *payload, size_t len, char name[256])
{
	const char *p = payload;
	const char *end = memchr(p, 0, len);
	if (!end)
		return -EINVAL;
	if (end - p > 255)
		return -ENAMETOOLONG;
	if (end == p)
		return -EINVAL;
	memcpy(name, p, (size_t)(end - p) + 1);
	return 0;
}

#define NEED(type) do { if (op_in_len < sizeof(type)) return -EINVAL; } while (0)
#define ROOM(n) do { if (out_cap < (n)) return -ERANGE; } while (0)

int probefs_handle(struct probefs *fs, const struct fuse_in_header *ih,
		   const void *op_in, size_t op_in_len,
		   const void *payload, size_t payload_len,
		   void *out, size_t out_cap)
{
	char name[256];
	int r;

	switch (ih->opcode) {
	case FUSE_LOOKUP: {
		struct fuse_entry_out eo;
		ROOM(sizeof(eo));
		if ((r = get_name(payload, payload_len, name)))
			return r;
		if ((r = probefs_lookup(fs, ih->nodeid, name, &eo)))
			return r;
		memcpy(out, &eo, sizeof(eo));
		return sizeof(eo);
	}
	case FUSE_FORGET: {
		NEED(struct fuse_forget_in);
		const struct fuse_forget_in *in = op_in;
		probefs_forget(fs, ih->nodeid, in->nlookup);
		return PROBE_NOREPLY;
	}
	case FUSE_BATCH_FORGET: {
		NEED(struct fuse_batch_forget_in);
		const struct fuse_batch_forget_in *in = op_in;
		const struct fuse_forget_one *one = payload;
		for (uint32_t i = 0; i < in->count && (i + 1) * sizeof(*one) <= payload_len; i++)
			probefs_forget(fs, one[i].nodeid, one[i].nlookup);
		return PROBE_NOREPLY;
	}
	case FUSE_INTERRUPT:
		return PROBE_NOREPLY;	/* nothing here waits long enough to stop */
	case FUSE_GETATTR: {
		struct fuse_attr_out ao;
		ROOM(sizeof(ao));
		if ((r = probefs_getattr(fs, ih->nodeid, &ao)))
			return r;
		memcpy(out, &ao, sizeof(ao));
		return sizeof(ao);
	}
	case FUSE_SETATTR: {
		NEED(struct fuse_setattr_in);
		struct fuse_setattr_in in;
		struct fuse_attr_out ao;
		ROOM(sizeof(ao));
		memcpy(&in, op_in, sizeof(in));
		if ((r = probefs_setattr(fs, ih->nodeid, &in, &ao)))
			return r;
		memcpy(out, &ao, sizeof(ao));
		return sizeof(ao);
	}
	case FUSE_MKNOD: {
		NEED(struct fuse_mknod_in);
		const struct fuse_mknod_in *in = op_in;
		struct fuse_entry_out eo;
		uint32_t mode = in->mode & ~in->umask;
		ROOM(sizeof(eo));
		if ((r = get_name(payload, payload_len, name)))
			return r;
		if ((r = probefs_create(fs, ih->nodeid, name, mode, &eo)))
			return r;
		memcpy(out, &eo, sizeof(eo));
		return sizeof(eo);
	}
	case FUSE_CREATE: {
		NEED(struct fuse_create_in);
		const struct fuse_create_in *in = op_in;
		struct {
			struct fuse_entry_out eo;
			struct fuse_open_out oo;
		} rep;
		uint32_t mode = in->mode & ~in->umask;
		ROOM(sizeof(rep));
		if ((r = get_name(payload, payload_len, name)))
			return r;
		if ((r = probefs_create(fs, ih->nodeid, name, mode, &rep.eo)))
			return r;
		probefs_open(fs, rep.eo.nodeid, 0);
		memset(&rep.oo, 0, sizeof(rep.oo));
		rep.oo.fh = rep.eo.nodeid;
		rep.oo.open_flags = FOPEN_DIRECT_IO;
		memcpy(out, &rep, sizeof(rep));
		return sizeof(rep);
	}
	case FUSE_OPEN: {
		NEED(struct fuse_open_in);
		const struct fuse_open_in *in = op_in;
		struct fuse_open_out oo = { .fh = ih->nodeid, .open_flags = FOPEN_DIRECT_IO };
		ROOM(sizeof(oo));
		if ((r = probefs_open(fs, ih->nodeid, in->flags)))
			return r;
		memcpy(out, &oo, sizeof(oo));
		return sizeof(oo);
	}
	case FUSE_OPENDIR: {
		struct fuse_open_out oo = { 0 };
		ROOM(sizeof(oo));
		if (ih->nodeid != FUSE_ROOT_ID)
			return -ENOTDIR;
		memcpy(out, &oo, sizeof(oo));
		return sizeof(oo);
	}
	case FUSE_READ: {
		NEED(struct fuse_read_in);
		const struct fuse_read_in *in = op_in;
		uint32_t size = in->size < out_cap ? in->size : (uint32_t)out_cap;
		ssize_t n = probefs_read(fs, ih->nodeid, in->offset, size, out);
		return (int)n;
	}
	case FUSE_READDIR: {
		NEED(struct fuse_read_in);
		const struct fuse_read_in *in = op_in;
		uint32_t size = in->size < out_cap ? in->size : (uint32_t)out_cap;
		return (int)probefs_readdir(fs, ih->nodeid, in->offset, size, out);
	}
	case FUSE_WRITE: {
		NEED(struct fuse_write_in);
		const struct fuse_write_in *in = op_in;
		struct fuse_write_out wo = { 0 };
		ROOM(sizeof(wo));
		if (in->size > payload_len)
			return -EINVAL;
		ssize_t n = probefs_write(fs, ih->nodeid, in->offset, in->size, payload);
		if (n < 0)
			return (int)n;
		wo.size = (uint32_t)n;
		memcpy(out, &wo, sizeof(wo));
		return sizeof(wo);
	}
	case FUSE_RELEASE:
		probefs_release(fs, ih->nodeid);
		return 0;
	case FUSE_RELEASEDIR:
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
	case FUSE_DESTROY:
		return 0;
	case FUSE_UNLINK:
		if ((r = get_name(payload, payload_len, name)))
			return r;
		return probefs_unlink(fs, ih->nodeid, name);
	case FUSE_STATFS: {
		struct fuse_statfs_out so;
		ROOM(sizeof(so));
		probefs_statfs(&so);
		memcpy(out, &so, sizeof(so));
		return sizeof(so);
	}
	case FUSE_MKDIR: case FUSE_SYMLINK: case FUSE_LINK: case FUSE_RENAME:
	case FUSE_RENAME2: case FUSE_RMDIR:
		return -EPERM;
	default:
		/* FLUSH, ACCESS, the xattr calls, STATX, ...: ENOSYS, which the
		 * kernel remembers for most of them and stops sending */
		return -ENOSYS;
	}
}
