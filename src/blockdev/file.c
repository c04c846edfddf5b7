/*
 * file.c - block device backend over an image file or a host block device.
 *
 * Owns: the image file descriptor.  Rules: pread/pwrite are retried on EINTR
 * and on short transfers; a read past the end is -EIO; flush is fdatasync
 * (the image's metadata, such as its size, never changes after mkfs, so
 * fdatasync is enough); discard punches a hole in an image file (the file
 * keeps its size and shrinks on the host) or is BLKDISCARD on a device.
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
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "blockdev.h"

struct file_dev {
	struct blockdev bd;
	int fd;
	int direct_fd;     /* O_DIRECT, for bulk writes; -1: none (or turned off) */
	int direct_fd_owned; /* the same descriptor, kept for close */
	bool is_device;
	bool write_behind; /* BLOCKDEV_WRITE_BEHIND */
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

	if (off > bd->size || len > bd->size - off)
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

static int file_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct file_dev *f = to_file(bd);
	if (direct_ok(f, buf, len, off)) {
		int err = transfer(bd, f->direct_fd, (void *)buf, len, off, true);
		if (err != -EINVAL)
			return err;
		/* Not for this filesystem or device: buffered from now on
		 * (the descriptor stays open until destroy: no race with a
		 * concurrent direct write). */
		__atomic_store_n(&f->direct_fd, -1, __ATOMIC_RELAXED);
	}
	int err = transfer(bd, f->fd, (void *)buf, len, off, true);
	/* A hint: failure (e.g. on a device) changes nothing but timing. */
	if (!err && f->write_behind)
		(void)sync_file_range(f->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
	return err;
}

static int file_flush(struct blockdev *bd)
{
	if (fdatasync(to_file(bd)->fd) < 0)
		return -errno;
	return 0;
}

static void file_destroy(struct blockdev *bd)
{
	struct file_dev *f = to_file(bd);
	if (f->direct_fd_owned >= 0)
		close(f->direct_fd_owned);
	close(f->fd);
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
	if (off > bd->size || len > bd->size - off)
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
		return errno == ENXIO ? bd->size : off; /* ENXIO: no data after off */
	return (uint64_t)next < off ? off : (uint64_t)next;
}

static const struct blockdev_ops file_ops = {
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.destroy = file_destroy,
	.discard = file_discard,
	.write_zeroes = file_write_zeroes,
	.next_data = file_next_data,
};

int blockdev_file_open(const char *path, unsigned flags, struct blockdev **out)
{
	int fd = open(path, ((flags & BLOCKDEV_READONLY) ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	struct stat st;
	uint64_t size = 0;
	int err = 0;
	if (fstat(fd, &st) < 0) {
		err = -errno;
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0)
			err = -errno;
	} else {
		err = -EINVAL;
	}
	if (err) {
		close(fd);
		return err;
	}

	struct file_dev *f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->bd.ops = &file_ops;
	f->bd.size = size;
	f->fd = fd;
	f->direct_fd = f->direct_fd_owned = -1;
	if ((flags & BLOCKDEV_DIRECT_BULK) && !(flags & BLOCKDEV_READONLY))
		f->direct_fd = f->direct_fd_owned = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	f->is_device = S_ISBLK(st.st_mode);
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
	if (bd->ops != &file_ops)
		return 0;
	return flock(to_file(bd)->fd, op | LOCK_NB) == 0 ? 0 : -errno;
}
