/*
 * file.c - block device backend over an image file or a host block device.
 *
 * Owns: the image file descriptor.  Rules: pread/pwrite are retried on EINTR
 * and on short transfers; a read past the end is -EIO; flush is fdatasync
 * (ordfs never changes the image's metadata; its size changes only from
 * outside, when the host extends the file, and fdatasync writes a size
 * that reading written data back needs); discard punches a hole in an
 * image file (the file keeps its size and shrinks on the host) or is
 * BLKDISCARD on a device.  refresh_size asks fstat (an image file) or
 * BLKGETSIZE64 (a block device) again, one refresh at a time (refresh_lock:
 * two refreshes racing would otherwise let the older answer look like a
 * shrink); the added bytes need nothing readied, the descriptor reaches
 * them already.
 * With BLOCKDEV_DIRECT_BULK a second descriptor opened O_DIRECT takes the
 * large aligned writes; the kernel keeps the two coherent (a direct write
 * writes back and drops cached pages of its range), and fdatasync on the
 * first descriptor flushes the device for both.  A direct write the
 * filesystem under the image refuses (EINVAL) turns direct I/O off for
 * good and is done buffered.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/fs.h>

#include "blockdev.h"
#include "hostfs.h"
#include "../lock/lock.h"

struct file_dev {
	struct blockdev bd;
	int fd;
	int direct_fd;     /* O_DIRECT, for bulk writes; -1: none (or turned off) */
	int direct_fd_owned; /* the same descriptor, kept for close */
	bool is_device;
	bool write_behind; /* BLOCKDEV_WRITE_BEHIND */
	char *path;        /* absolute (image files) */
	struct hostfs host; /* image files */
	struct ordfs_mutex refresh_lock; /* one refresh_size at a time */
};

static struct file_dev *to_file(struct blockdev *bd)
{
	return (struct file_dev *)bd;
}

/* Moves len bytes at off with pread or pwrite on fd, retrying EINTR and
 * short transfers; never past the end of the device. */
static int transfer(struct blockdev *bd, int fd, void *buf, size_t len, uint64_t off,
		    bool write)
{
	uint8_t *p = buf;
	uint64_t size = blockdev_size(bd);

	if (off > size || len > size - off)
		return -EIO;
	while (len > 0) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int file_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	return transfer(bd, to_file(bd)->fd, buf, len, off, false);
}

static bool direct_ok(const struct file_dev *f, const void *buf, size_t len, uint64_t off)
{
	const uint64_t align = BLOCKDEV_DIRECT_ALIGN;
	return __atomic_load_n(&f->direct_fd, __ATOMIC_RELAXED) >= 0 &&
	       len >= BLOCKDEV_DIRECT_MIN && len % align == 0 && off % align == 0 &&
	       (uintptr_t)buf % align == 0;
}

/* An error of the host filesystem under an image file: ENOSPC is noted
 * (hostfs.h).  Returns err. */
static int host_error(struct file_dev *f, int err)
{
	return f->is_device ? err : hostfs_note(&f->host, err);
}

static int file_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct file_dev *f = to_file(bd);
	if (direct_ok(f, buf, len, off)) {
		int err = transfer(bd, f->direct_fd, (void *)buf, len, off, true);
		if (err != -EINVAL)
			return host_error(f, err);
		/* Not for this filesystem or device: buffered from now on
		 * (the descriptor stays open until destroy: no race with a
		 * concurrent direct write). */
		__atomic_store_n(&f->direct_fd, -1, __ATOMIC_RELAXED);
	}
	int err = transfer(bd, f->fd, (void *)buf, len, off, true);
	/* A hint: failure (e.g. on a device) changes nothing but timing. */
	if (!err && f->write_behind)
		(void)sync_file_range(f->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
	return host_error(f, err);
}

/* A host that allocates at writeback (delayed allocation) may say ENOSPC
 * only here, for a write that had returned 0. */
static int file_flush(struct blockdev *bd)
{
	if (fdatasync(to_file(bd)->fd) < 0)
		return host_error(to_file(bd), -errno);
	return 0;
}

static void file_destroy(struct blockdev *bd)
{
	struct file_dev *f = to_file(bd);
	if (f->direct_fd_owned >= 0)
		close(f->direct_fd_owned);
	close(f->fd);
	free(f->path);
	ordfs_mutex_destroy(&f->refresh_lock);
	free(bd);
}

/* The file keeps its size; the range reads as zeros. */
static int punch_hole(struct file_dev *f, uint64_t off, uint64_t len)
{
	return fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			 (off_t)len) == 0 ? 0 : -errno;
}

static int file_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct file_dev *f = to_file(bd);
	uint64_t size = blockdev_size(bd);
	if (off > size || len > size - off)
		return -EIO;
	if (f->is_device) {
		uint64_t range[2] = { off, len };
		return ioctl(f->fd, BLKDISCARD, range) == 0 ? 0 : -errno;
	}
	return punch_hole(f, off, len);
}

/* A hole reads as zeros (a device: BLKZEROOUT).  A file keeps its size. */
static int file_write_zeroes(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct file_dev *f = to_file(bd);
	if (f->is_device) {
		uint64_t range[2] = { off, len };
		return ioctl(f->fd, BLKZEROOUT, range) == 0 ? 0 : -EOPNOTSUPP;
	}
	int err = punch_hole(f, off, len);
	return err == -ENOSYS ? -EOPNOTSUPP : err;
}

static uint64_t file_next_data(struct blockdev *bd, uint64_t off)
{
	struct file_dev *f = to_file(bd);
	if (f->is_device)
		return off;
	off_t next = lseek(f->fd, (off_t)off, SEEK_DATA);
	if (next < 0)
		return errno == ENXIO ? blockdev_size(bd) : off; /* ENXIO: no data after off */
	return (uint64_t)next < off ? off : (uint64_t)next;
}

/* [off, result) may hold data (image files only: sparse). */
static uint64_t file_next_hole(struct blockdev *bd, uint64_t off)
{
	uint64_t size = blockdev_size(bd);
	off_t next = lseek(to_file(bd)->fd, (off_t)off, SEEK_HOLE);
	if (next < 0)
		return errno == ENXIO ? size : off; /* unknown: a hole, to be safe */
	if ((uint64_t)next > size)
		return size;
	return (uint64_t)next < off ? off : (uint64_t)next;
}

static int file_allocate(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct file_dev *f = to_file(bd);
	uint64_t size = blockdev_size(bd);
	if (off > size || len > size - off)
		return -EIO;
	if (fallocate(f->fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	int err = errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return host_error(f, err);
}

static int file_space(void *ctx, struct hostfs_space *out)
{
	struct statfs sf;
	if (fstatfs(((struct file_dev *)ctx)->fd, &sf) != 0)
		return -errno;
	uint64_t unit = sf.f_frsize ? (uint64_t)sf.f_frsize : (uint64_t)sf.f_bsize;
	out->size = (uint64_t)sf.f_blocks * unit;
	out->free = (uint64_t)sf.f_bavail * unit;
	return 0;
}

static int file_host(struct blockdev *bd, struct blockdev_host *out, bool fresh)
{
	struct file_dev *f = to_file(bd);
	memset(out, 0, sizeof(*out));
	out->image = f->path;
	out->image_size = blockdev_size(bd);
	struct stat st;
	if (fresh && fstat(f->fd, &st) == 0)
		out->image_allocated = (uint64_t)st.st_blocks * 512u;
	hostfs_state(&f->host, fresh, out);
	return 0;
}

static void file_host_refused(struct blockdev *bd)
{
	hostfs_note(&to_file(bd)->host, -ENOSPC);
}

/* The size of what fd opens: a regular file's, or a block device's. */
static int device_size(int fd, bool *is_device, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	*is_device = S_ISBLK(st.st_mode);
	if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	return -EINVAL;
}

static int file_refresh_size(struct blockdev *bd, uint64_t *size)
{
	struct file_dev *f = to_file(bd);
	bool is_device;
	uint64_t now = 0;
	ordfs_mutex_lock(&f->refresh_lock);
	int err = device_size(f->fd, &is_device, &now);
	if (!err && now < blockdev_size(bd))
		err = -EUCLEAN; /* cut under us: keep the size we had */
	if (!err)
		*size = blockdev_grow_size(bd, now);
	ordfs_mutex_unlock(&f->refresh_lock);
	return err;
}

static const struct blockdev_ops file_ops = {
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.destroy = file_destroy,
	.discard = file_discard,
	.write_zeroes = file_write_zeroes,
	.next_data = file_next_data,
	.refresh_size = file_refresh_size,
};

/* An image file: the same, and what a sparse device has. */
static const struct blockdev_ops image_file_ops = {
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.destroy = file_destroy,
	.discard = file_discard,
	.write_zeroes = file_write_zeroes,
	.next_data = file_next_data,
	.next_hole = file_next_hole,
	.allocate = file_allocate,
	.host = file_host,
	.host_refused = file_host_refused,
	.refresh_size = file_refresh_size,
};

int blockdev_file_open(const char *path, unsigned flags, struct blockdev **out)
{
	int fd = open(path, ((flags & BLOCKDEV_READONLY) ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	uint64_t size = 0;
	bool is_device = false;
	int err = device_size(fd, &is_device, &size);
	if (err) {
		close(fd);
		return err;
	}

	struct file_dev *f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->is_device = is_device;
	f->bd.ops = f->is_device ? &file_ops : &image_file_ops;
	f->bd.size = size;
	f->bd.sparse = !f->is_device;
	f->fd = fd;
	f->direct_fd = f->direct_fd_owned = -1;
	ordfs_mutex_init(&f->refresh_lock, LOCK_BLOCKDEV_REFRESH, "device size refresh lock");
	if (!f->is_device) {
		char abs[PATH_MAX];
		f->path = strdup(realpath(path, abs) ? abs : path);
		if (!f->path) {
			close(fd);
			ordfs_mutex_destroy(&f->refresh_lock);
			free(f);
			return -ENOMEM;
		}
		hostfs_init(&f->host, f->path, file_space, f);
	}
	if ((flags & BLOCKDEV_DIRECT_BULK) && !(flags & BLOCKDEV_READONLY))
		f->direct_fd = f->direct_fd_owned = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	f->write_behind = (flags & BLOCKDEV_WRITE_BEHIND) != 0;
	*out = &f->bd;
	return 0;
}

int blockdev_file_fd(struct blockdev *bd)
{
	return to_file(bd)->fd;
}

int blockdev_host_lock(struct blockdev *bd, int op)
{
	if (bd->ops != &file_ops && bd->ops != &image_file_ops)
		return 0;
	return flock(to_file(bd)->fd, op | LOCK_NB) == 0 ? 0 : -errno;
}
