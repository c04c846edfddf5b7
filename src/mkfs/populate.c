/*
 * populate.c - fill a new ordfs from a directory tree (see populate.h for
 * what is copied and the rules).
 *
 * How the walk goes: a stack of frames, one per directory being copied,
 * each holding the sorted names of its entries (read whole when the
 * directory is entered, so its descriptor need not stay open) and the
 * inode number of its copy.  An entry is copied when it is reached; a
 * directory's own attributes are applied when its last entry is done
 * (post-order), because making its entries changes its mtime, and its
 * default ACL would otherwise be inherited by the entries made in it.
 * For the same reason new inodes are made with permission bits only
 * (no set-group-ID directory passes its group on) and get their full mode
 * last: after the chown (which clears set-user-ID) and after the ACLs
 * (which set the group bits).
 *
 * Order per inode: make it (as its owner) -> owner again if the inode
 * came out differently (the root directory, lost+found) -> data ->
 * extended attributes and ACLs -> mode, times (and size) in one setattr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "populate.h"
#include "fs.h"
#include "inode/inode.h"

#define COPY_CHUNK (1u << 20)      /* bytes per read of file data */
#define XATTR_VALUE_MAX 65536u     /* Linux's limit on one value */
#define LOST_FOUND "lost+found"

_Static_assert(ORDFS_NAME_MAX == 255 && ORDFS_SYMLINK_MAX == 4095,
	       "update the limits named in the messages");

/* ---- growing buffers ---------------------------------------------------- */

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* Appends len bytes and keeps a NUL after them. */
static int buf_append(struct buf *b, const char *s, size_t len)
{
	int err = buf_reserve(b, len);
	if (err)
		return err;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

static void buf_truncate(struct buf *b, size_t len)
{
	b->len = len;
	if (b->p)
		b->p[len] = '\0';
}

/* ---- hard links: (st_dev, st_ino) -> the copy's inode number ------------ */

struct link_slot {
	dev_t dev;
	ino_t ino;
	uint32_t copy; /* 0 = empty */
};

struct link_table {
	struct link_slot *slots;
	size_t cap, used; /* cap a power of two, or 0 */
};

static size_t link_hash(dev_t dev, ino_t ino, size_t cap)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static uint32_t link_find(const struct link_table *t, dev_t dev, ino_t ino)
{
	if (!t->cap)
		return 0;
	for (size_t i = link_hash(dev, ino, t->cap);; i = (i + 1) & (t->cap - 1)) {
		const struct link_slot *s = &t->slots[i];
		if (!s->copy)
			return 0;
		if (s->dev == dev && s->ino == ino)
			return s->copy;
	}
}

static void link_put(struct link_table *t, dev_t dev, ino_t ino, uint32_t copy)
{
	size_t i = link_hash(dev, ino, t->cap);
	while (t->slots[i].copy)
		i = (i + 1) & (t->cap - 1);
	t->slots[i] = (struct link_slot){ dev, ino, copy };
	t->used++;
}

static int link_add(struct link_table *t, dev_t dev, ino_t ino, uint32_t copy)
{
	if ((t->used + 1) * 2 > t->cap) {
		struct link_table bigger = { .cap = t->cap ? t->cap * 2 : 64 };
		bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
		if (!bigger.slots)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++)
			if (t->slots[i].copy)
				link_put(&bigger, t->slots[i].dev, t->slots[i].ino,
					 t->slots[i].copy);
		free(t->slots);
		*t = bigger;
	}
	link_put(t, dev, ino, copy);
	return 0;
}

/* ---- the walk ----------------------------------------------------------- */

/* One directory being copied. */
struct frame {
	char *names;        /* its entries' names, each NUL-terminated */
	size_t *offs;       /* where each starts in names, sorted by name */
	size_t count, next; /* entries, and the next one to copy */
	struct stat st;     /* the source directory as it was opened */
	uint32_t copy;      /* its copy's inode number */
	size_t path_len;    /* length of its path in walk.path */
	int fd;             /* open while kept (depth < POPULATE_KEEP_FDS), else -1 */
};

struct walk {
	struct ordfs *fs;
	const struct mkfs_populate *p;
	struct mkfs_populate_stats *stats;
	struct frame *frames;
	size_t depth, cap;
	int dir_fd;          /* the directory of the top frame */
	struct buf path;     /* the entry at hand, as shown to the user */
	struct buf shown[2]; /* escaped strings for messages */
	struct link_table links;
	uint8_t *data;       /* COPY_CHUNK bytes */
	struct buf xnames;   /* an entry's xattr names */
	char *xvalue;        /* XATTR_VALUE_MAX bytes */
	bool proc_ok;        /* /proc/self/fd reaches a directory by descriptor */
	char **why;
};

/* The message for a failure; returns err.  At most one per walk: the
 * first failure is the one reported. */
__attribute__((format(printf, 3, 4))) static int fail(struct walk *w, int err,
						      const char *fmt, ...)
{
	if (*w->why)
		return err;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(w->why, fmt, ap) < 0)
		*w->why = NULL;
	va_end(ap);
	return err;
}

/* s with control characters and backslashes escaped (one line). */
static const char *shown(struct walk *w, unsigned which, const char *s)
{
	struct buf *b = &w->shown[which];
	buf_truncate(b, 0);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		char esc[5];
		size_t n = 1;
		esc[0] = (char)*c;
		if (*c == '\\') {
			memcpy(esc, "\\\\", 2);
			n = 2;
		} else if (*c == '\n') {
			memcpy(esc, "\\n", 2);
			n = 2;
		} else if (*c == '\t') {
			memcpy(esc, "\\t", 2);
			n = 2;
		} else if (*c < 0x20 || *c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *c);
			n = 4;
		}
		if (buf_append(b, esc, n))
			return "(out of memory)";
	}
	return b->p ? b->p : "";
}

static const char *here(struct walk *w)
{
	return w->path.len ? shown(w, 0, w->path.p) : "/"; /* the source "/" itself */
}

static int cannot_read(struct walk *w, int err)
{
	return fail(w, err, "cannot read %s: %s", here(w), strerror(-err));
}

static int cannot_copy(struct walk *w, int err)
{
	return fail(w, err, "cannot copy %s: %s", here(w), strerror(-err));
}

static int changed(struct walk *w)
{
	return fail(w, -EAGAIN, "%s changed while it was being copied", here(w));
}

static struct frame *top(struct walk *w)
{
	return &w->frames[w->depth - 1];
}

/* openat with O_NOATIME where the caller may use it (the owner, or root):
 * copying a tree does not change its access times.  The entries of the
 * tree are opened with O_NOFOLLOW; DIR itself may be a symlink. */
static int open_noatime(int dir, const char *name, int flags)
{
	int fd = openat(dir, name, flags | O_NOATIME | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == EPERM)
		fd = openat(dir, name, flags | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

/* The file opened is the one lstat saw. */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT);
}

static int by_name(const void *a, const void *b, void *names)
{
	return strcmp((const char *)names + *(const size_t *)a,
		      (const char *)names + *(const size_t *)b);
}

/* Reads the names of the directory open as fd into f, sorted. */
static int read_names(struct walk *w, int fd, struct frame *f)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return cannot_read(w, -errno);
	DIR *d = fdopendir(dup_fd);
	if (!d) {
		int err = -errno;
		close(dup_fd);
		return cannot_read(w, err);
	}
	struct buf names = { 0 };
	size_t *offs = NULL, count = 0, cap = 0;
	int err = 0;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				err = cannot_read(w, -errno);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (count == cap) {
			size_t *more = realloc(offs, (cap ? cap * 2 : 32) * sizeof(*offs));
			if (!more) {
				err = -ENOMEM;
				break;
			}
			offs = more;
			cap = cap ? cap * 2 : 32;
		}
		offs[count] = names.len;
		err = buf_append(&names, de->d_name, strlen(de->d_name) + 1);
		if (err)
			break;
		count++;
	}
	closedir(d);
	if (err) {
		free(names.p);
		free(offs);
		return err == -ENOMEM ? fail(w, err, "out of memory reading %s", here(w)) : err;
	}
	if (count)
		qsort_r(offs, count, sizeof(*offs), by_name, names.p);
	f->names = names.p;
	f->offs = offs;
	f->count = count;
	f->next = 0;
	return 0;
}

/* ---- attributes ----------------------------------------------------------- */

static struct ordfs_cred owner_of(const struct walk *w, const struct stat *st, bool is_root)
{
	if (is_root && w->p->root_owner_set)
		return w->p->root_owner;
	if (w->p->keep_owners)
		return (struct ordfs_cred){ (uint32_t)st->st_uid, (uint32_t)st->st_gid };
	return w->p->owner;
}

static struct ordfs_timespec ts_of(struct timespec t)
{
	return (struct ordfs_timespec){ (int64_t)t.tv_sec, (uint32_t)t.tv_nsec };
}

/* The owner, if the inode did not come out with it. */
static int set_owner(struct walk *w, struct inode *inode, struct ordfs_cred owner)
{
	struct stat now;
	ordfs_getattr(w->fs, inode, &now);
	if (now.st_uid == owner.uid && now.st_gid == owner.gid)
		return 0;
	struct ordfs_setattr sa = { .valid = ORDFS_SET_UID | ORDFS_SET_GID,
				    .uid = owner.uid, .gid = owner.gid };
	int err = ordfs_setattr(w->fs, inode, &sa);
	return err ? cannot_copy(w, err) : 0;
}

/* The last step: mode (not for symlinks, whose mode is fixed), atime,
 * mtime and, for a file whose end is a hole, its size. */
static int set_final(struct walk *w, struct inode *inode, const struct stat *st, bool size)
{
	struct ordfs_setattr sa = {
		.valid = ORDFS_SET_ATIME | ORDFS_SET_MTIME,
		.atime = ts_of(st->st_atim),
		.mtime = ts_of(st->st_mtim),
	};
	if (!S_ISLNK(st->st_mode)) {
		sa.valid |= ORDFS_SET_MODE;
		sa.mode = (uint16_t)(st->st_mode & 07777);
	}
	if (size) {
		sa.valid |= ORDFS_SET_SIZE;
		sa.size = (uint64_t)st->st_size;
	}
	int err = ordfs_setattr(w->fs, inode, &sa);
	return err ? cannot_copy(w, err) : 0;
}

/* ---- extended attributes ------------------------------------------------- */

/* Where the source's attributes are read from: an open descriptor, or a
 * name in the directory w->dir_fd (symlinks, devices, FIFOs, sockets,
 * which are not opened). */
struct xsrc {
	int fd;            /* or -1 */
	const char *name;  /* with fd -1 */
	char proc[64 + NAME_MAX + 1];
};

static const char *xsrc_path(struct walk *w, struct xsrc *s)
{
	if (!w->proc_ok)
		return w->path.p; /* as the user gave it: fine below PATH_MAX */
	snprintf(s->proc, sizeof(s->proc), "/proc/self/fd/%d/%s", w->dir_fd, s->name);
	return s->proc;
}

static ssize_t xsrc_list(struct walk *w, struct xsrc *s, char *list, size_t size)
{
	return s->fd >= 0 ? flistxattr(s->fd, list, size) : llistxattr(xsrc_path(w, s), list, size);
}

static ssize_t xsrc_get(struct walk *w, struct xsrc *s, const char *name, void *value,
			size_t size)
{
	return s->fd >= 0 ? fgetxattr(s->fd, name, value, size)
			  : lgetxattr(xsrc_path(w, s), name, value, size);
}

/* The names ordfs stores (ops.h, "extended attributes"). */
static bool storable(const char *name)
{
	static const char *const prefixes[] = { "user.", "trusted.", "security." };
	for (unsigned i = 0; i < 3; i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(name, prefixes[i], n) == 0)
			return name[n] != '\0';
	}
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/* Fills w->xnames with the source's attribute names (a source filesystem
 * without xattrs has none); 0, or an error when they cannot be read. */
static int list_xattrs(struct walk *w, struct xsrc *s)
{
	for (;;) {
		ssize_t n = xsrc_list(w, s, NULL, 0);
		if (n < 0 && (errno == ENOTSUP || errno == ENOSYS)) {
			buf_truncate(&w->xnames, 0);
			return 0;
		}
		if (n < 0)
			return cannot_read(w, -errno);
		buf_truncate(&w->xnames, 0);
		if (buf_reserve(&w->xnames, (size_t)n))
			return fail(w, -ENOMEM, "out of memory reading %s", here(w));
		ssize_t got = xsrc_list(w, s, w->xnames.p, (size_t)n);
		if (got < 0 && errno == ERANGE)
			continue; /* grew meanwhile */
		if (got < 0)
			return cannot_read(w, -errno);
		w->xnames.len = (size_t)got;
		return 0;
	}
}

static int copy_xattrs(struct walk *w, struct xsrc *s, struct inode *inode)
{
	int err = list_xattrs(w, s);
	if (err)
		return err;
	for (size_t at = 0; at < w->xnames.len; at += strlen(w->xnames.p + at) + 1) {
		const char *name = w->xnames.p + at;
		if (!storable(name))
			continue;
		ssize_t len = xsrc_get(w, s, name, w->xvalue, XATTR_VALUE_MAX);
		if (len < 0 && errno == ENODATA)
			continue; /* removed since it was listed */
		if (len < 0) {
			err = -errno;
			return fail(w, err, "cannot read extended attribute %s of %s: %s",
				    shown(w, 1, name), here(w), strerror(-err));
		}
		err = ordfs_setxattr(w->fs, inode, name, w->xvalue, (size_t)len, 0);
		if (err)
			return fail(w, err, "cannot copy extended attribute %s of %s: %s",
				    shown(w, 1, name), here(w), strerror(-err));
	}
	return 0;
}

/* ---- one entry ------------------------------------------------------------- */

/* The file data of fd (lstat'ed as st) into inode: the data ranges only.
 * *end: where the last range written ended. */
static int copy_data(struct walk *w, int fd, const struct stat *st, struct inode *inode,
		     uint64_t *end)
{
	off_t size = st->st_size, off = 0;
	*end = 0;
	while (off < size) {
		off_t data = lseek(fd, off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole from off on */
		if (data < 0)
			return cannot_read(w, -errno);
		if (data >= size)
			break;
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return cannot_read(w, -errno);
		if (hole > size)
			hole = size;
		for (off_t pos = data; pos < hole;) {
			size_t want = (size_t)(hole - pos) < COPY_CHUNK ? (size_t)(hole - pos)
									: COPY_CHUNK;
			ssize_t got = pread(fd, w->data, want, pos);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return cannot_read(w, -errno);
			if (got == 0)
				return changed(w); /* shorter than lstat said */
			for (ssize_t done = 0; done < got;) {
				ssize_t n = ordfs_write(w->fs, inode, w->data + done,
							(size_t)(got - done),
							(uint64_t)(pos + done));
				if (n < 0)
					return cannot_copy(w, (int)n);
				done += n;
			}
			pos += got;
			w->stats->data_bytes += (uint64_t)got;
		}
		*end = (uint64_t)hole;
		off = hole;
	}
	return 0;
}

/* Makes the inode for a non-directory entry (st as lstat saw it) in dir. */
static int make_inode(struct walk *w, struct inode *dir, const char *name,
		      const struct stat *st, const char *target, struct inode **out)
{
	struct ordfs_cred cred = owner_of(w, st, false);
	uint16_t perm = (uint16_t)(st->st_mode & 0777);
	uint32_t rdev = 0;
	int err;
	switch (st->st_mode & S_IFMT) {
	case S_IFREG:
		err = ordfs_create(w->fs, dir, name, (uint16_t)(S_IFREG | perm), &cred, out);
		break;
	case S_IFLNK:
		err = ordfs_symlink(w->fs, dir, name, target, &cred, out);
		break;
	case S_IFCHR:
	case S_IFBLK:
		/* ordfs keeps Linux's 32-bit device number (new_encode_dev:
		 * 12 bits of major, 20 of minor), which is glibc's dev_t below
		 * 2^32. */
		if (st->st_rdev >> 32)
			return fail(w, -EOVERFLOW,
				    "cannot copy %s: device number %u:%u does not fit ordfs's 32 bits",
				    here(w), major(st->st_rdev), minor(st->st_rdev));
		rdev = (uint32_t)st->st_rdev;
		/* fall through */
	case S_IFIFO:
	case S_IFSOCK:
		err = ordfs_mknod(w->fs, dir, name, (uint16_t)((st->st_mode & S_IFMT) | perm), rdev,
				  &cred, out);
		break;
	default:
		return fail(w, -EOPNOTSUPP, "cannot copy %s: unknown file type (mode %o)", here(w),
			    (unsigned)st->st_mode);
	}
	if (err)
		return cannot_copy(w, err);
	w->stats->inodes++;
	return 0;
}

/* A regular file: open it, check it is what lstat saw, make and fill. */
static int copy_file(struct walk *w, struct inode *dir, const char *name,
		     const struct stat *st, struct inode **out)
{
	int fd = open_noatime(w->dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return fd == -ELOOP || fd == -ENXIO ? changed(w) : cannot_read(w, fd);
	struct stat now;
	int err = fstat(fd, &now) ? cannot_read(w, -errno) : 0;
	if (!err && !same_file(st, &now))
		err = changed(w);
	if (!err)
		err = make_inode(w, dir, name, st, NULL, out);
	uint64_t end = 0;
	if (!err)
		err = copy_data(w, fd, st, *out, &end);
	if (!err) {
		struct xsrc src = { .fd = fd };
		err = copy_xattrs(w, &src, *out);
	}
	if (!err)
		err = set_final(w, *out, st, end != (uint64_t)st->st_size);
	close(fd);
	return err;
}

/* Anything that is not opened: symlinks, devices, FIFOs, sockets. */
static int copy_special(struct walk *w, struct inode *dir, const char *name,
			const struct stat *st, struct inode **out)
{
	char target[ORDFS_SYMLINK_MAX + 2];
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(w->dir_fd, name, target, sizeof(target));
		if (n < 0)
			return errno == EINVAL ? changed(w) : cannot_read(w, -errno);
		if ((size_t)n > ORDFS_SYMLINK_MAX)
			return fail(w, -ENAMETOOLONG,
				    "cannot copy %s: symbolic link target longer than 4095 bytes",
				    here(w));
		if (n == 0)
			return changed(w);
		target[n] = '\0';
	}
	int err = make_inode(w, dir, name, st, target, out);
	if (!err) {
		struct xsrc src = { .fd = -1, .name = name };
		err = copy_xattrs(w, &src, *out);
	}
	if (!err)
		err = set_final(w, *out, st, false);
	return err;
}

/* ---- directories ------------------------------------------------------------ */

static void frame_free(struct frame *f)
{
	free(f->names);
	free(f->offs);
	if (f->fd >= 0)
		close(f->fd);
	f->names = NULL;
	f->offs = NULL;
	f->fd = -1;
}

/* Enters the source directory open as fd (its copy: copy) as a new top
 * frame; w->path names it.  fd becomes w->dir_fd (owned by the walk). */
static int push_dir(struct walk *w, int fd, const struct stat *st, uint32_t copy)
{
	if (w->depth == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct frame *more = realloc(w->frames, cap * sizeof(*more));
		if (!more) {
			close(fd);
			return fail(w, -ENOMEM, "out of memory at %s", here(w));
		}
		w->frames = more;
		w->cap = cap;
	}
	struct frame *f = &w->frames[w->depth];
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->st = *st;
	f->copy = copy;
	f->path_len = w->path.len;
	int err = read_names(w, fd, f);
	if (err) {
		close(fd);
		return err;
	}
	/* The parent's descriptor stays open only near the top; deeper, the
	 * walk climbs back with "..". */
	if (w->depth > 0 && w->depth >= POPULATE_KEEP_FDS) {
		close(top(w)->fd);
		top(w)->fd = -1;
	}
	f->fd = fd;
	w->dir_fd = fd;
	w->depth++;
	return 0;
}

/* A directory entry: make its copy and enter it. */
static int enter_dir(struct walk *w, struct inode *dir, const char *name,
		     const struct stat *st)
{
	int fd = open_noatime(w->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return fd == -ELOOP || fd == -ENOTDIR ? changed(w) : cannot_read(w, fd);
	struct stat now;
	int err = fstat(fd, &now) ? cannot_read(w, -errno) : 0;
	if (!err && !same_file(st, &now))
		err = changed(w);
	struct inode *copy = NULL;
	if (!err && w->depth == 1 && strcmp(name, LOST_FOUND) == 0) {
		err = ordfs_lookup(w->fs, dir, LOST_FOUND, &copy); /* mkfs made it */
		if (err)
			err = cannot_copy(w, err);
		else
			err = set_owner(w, copy, owner_of(w, st, false));
	} else if (!err) {
		struct ordfs_cred cred = owner_of(w, st, false);
		err = ordfs_mkdir(w->fs, dir, name, (uint16_t)(st->st_mode & 0777), &cred, &copy);
		if (err)
			err = cannot_copy(w, err);
		else
			w->stats->inodes++;
	}
	if (err) {
		close(fd);
		if (copy)
			inode_put(w->fs, copy);
		return err;
	}
	uint32_t ino = copy->ino;
	inode_put(w->fs, copy);
	return push_dir(w, fd, &now, ino);
}

/* The top frame's directory is done: its attributes, then back to its
 * parent (whose descriptor, when it was closed, is found again through
 * "..": it must be the directory the walk came from). */
static int leave_dir(struct walk *w)
{
	struct frame *f = top(w);
	struct inode *copy;
	int err = inode_get(w->fs, f->copy, &copy);
	if (err)
		return cannot_copy(w, err);
	if (w->depth == 1) /* mkfs made it: the owner may differ */
		err = set_owner(w, copy, owner_of(w, &f->st, true));
	if (!err) {
		struct xsrc src = { .fd = w->dir_fd };
		err = copy_xattrs(w, &src, copy);
	}
	if (!err)
		err = set_final(w, copy, &f->st, false);
	inode_put(w->fs, copy);
	if (err)
		return err;

	struct frame *parent = w->depth > 1 ? &w->frames[w->depth - 2] : NULL;
	if (parent && parent->fd < 0) {
		buf_truncate(&w->path, parent->path_len);
		int fd = open_noatime(f->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		struct stat st;
		if (fd < 0)
			err = cannot_read(w, fd);
		else if (fstat(fd, &st) != 0)
			err = cannot_read(w, -errno);
		else if (st.st_dev != parent->st.st_dev || st.st_ino != parent->st.st_ino)
			err = changed(w);
		if (err && fd >= 0)
			close(fd);
		if (!err)
			parent->fd = fd;
	}
	frame_free(f);
	w->depth--;
	w->dir_fd = w->depth ? top(w)->fd : -1;
	if (w->depth)
		buf_truncate(&w->path, top(w)->path_len);
	return err;
}

/* ---- the whole tree ---------------------------------------------------------- */

/* One entry of the top frame's directory. */
static int copy_entry(struct walk *w, const char *name)
{
	struct frame *f = top(w);
	buf_truncate(&w->path, f->path_len);
	int err = buf_append(&w->path, "/", 1);
	if (!err)
		err = buf_append(&w->path, name, strlen(name));
	if (err)
		return fail(w, err, "out of memory");
	if (strlen(name) > ORDFS_NAME_MAX)
		return fail(w, -ENAMETOOLONG, "cannot copy %s: name longer than 255 bytes",
			    here(w));

	struct stat st;
	if (fstatat(w->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return cannot_read(w, -errno);
	if (w->p->skip_set && st.st_dev == w->p->skip_dev && st.st_ino == w->p->skip_ino)
		return 0; /* the image being made */

	struct inode *dir;
	err = inode_get(w->fs, f->copy, &dir);
	if (err)
		return cannot_copy(w, err);
	if (S_ISDIR(st.st_mode)) {
		err = enter_dir(w, dir, name, &st);
		inode_put(w->fs, dir);
		return err;
	}

	/* A further name of a file already copied is a link to the copy. */
	uint32_t linked = st.st_nlink > 1 ? link_find(&w->links, st.st_dev, st.st_ino) : 0;
	struct inode *copy = NULL;
	if (linked) {
		err = inode_get(w->fs, linked, &copy);
		if (!err)
			err = ordfs_link(w->fs, copy, dir, name);
		if (err)
			err = cannot_copy(w, err);
		else
			w->stats->links++;
	} else if (S_ISREG(st.st_mode)) {
		err = copy_file(w, dir, name, &st, &copy);
	} else {
		err = copy_special(w, dir, name, &st, &copy);
	}
	if (!err && !linked && st.st_nlink > 1 &&
	    link_add(&w->links, st.st_dev, st.st_ino, copy->ino))
		err = fail(w, -ENOMEM, "out of memory at %s", here(w));
	if (copy)
		inode_put(w->fs, copy);
	inode_put(w->fs, dir);
	return err;
}

static int walk_tree(struct walk *w)
{
	const char *src = w->p->source;
	size_t len = strlen(src);
	while (len > 1 && src[len - 1] == '/')
		len--; /* "tree/" is shown as "tree/x", not "tree//x" */
	if (len == 1 && src[0] == '/')
		len = 0; /* "/" shows its entries as "/x" */
	int err = buf_append(&w->path, src, len);
	if (err)
		return fail(w, err, "out of memory");

	int fd = open_noatime(AT_FDCWD, src, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		buf_truncate(&w->path, 0);
		buf_append(&w->path, src, strlen(src));
		return cannot_read(w, fd);
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return cannot_read(w, -errno);
	}
	err = push_dir(w, fd, &st, ORDFS_ROOT_INO);
	while (!err && w->depth > 0) {
		struct frame *f = top(w);
		if (f->next < f->count) {
			const char *name = f->names + f->offs[f->next++];
			err = copy_entry(w, name);
		} else {
			buf_truncate(&w->path, f->path_len);
			err = leave_dir(w);
		}
	}
	return err;
}

int ordfs_mkfs_populate(struct blockdev *bd, const struct mkfs_populate *p,
			struct mkfs_populate_stats *stats, char **why)
{
	struct mkfs_populate_stats dummy;
	struct walk w = { .p = p, .stats = stats ? stats : &dummy, .dir_fd = -1, .why = why };
	*why = NULL;
	memset(w.stats, 0, sizeof(*w.stats));
	w.proc_ok = access("/proc/self/fd", X_OK) == 0;
	w.data = malloc(COPY_CHUNK);
	w.xvalue = malloc(XATTR_VALUE_MAX);
	if (!w.data || !w.xvalue) {
		free(w.data);
		free(w.xvalue);
		return fail(&w, -ENOMEM, "out of memory");
	}

	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0; /* commits when the journal fills, and at unmount */
	const char *mwhy = "";
	int err = ordfs_mount(bd, &opts, &w.fs, &mwhy);
	if (err) {
		fail(&w, err, "cannot mount the new filesystem: %s", mwhy);
	} else {
		err = walk_tree(&w);
		int uerr = ordfs_unmount(w.fs);
		if (!err && uerr)
			err = fail(&w, uerr, "cannot unmount the new filesystem: %s",
				   strerror(-uerr));
	}
	while (w.depth > 0)
		frame_free(&w.frames[--w.depth]);
	free(w.frames);
	free(w.path.p);
	free(w.shown[0].p);
	free(w.shown[1].p);
	free(w.xnames.p);
	free(w.links.slots);
	free(w.data);
	free(w.xvalue);
	return err;
}
