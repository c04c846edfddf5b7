/*
 * logfile.c - reads what the daemon's recording device streamed
 * (ORDFS_TEST_RECORD, format in blockdev.h) and the base image beside it.
 * Rules: the file is untrusted; a short or malformed last event ends the
 * log (a daemon killed mid-event leaves one).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "format/endian_le.h"

int crash_read_file(const char *path, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!buf || got != (size_t)st.st_size) {
		free(buf);
		return buf ? -EIO : -ENOMEM;
	}
	*data = buf;
	*size = got;
	return 0;
}

int crash_read_stream(const char *path, struct blockdev_event **out, size_t *count)
{
	uint8_t *raw;
	size_t size;
	int err = crash_read_file(path, &raw, &size);
	if (err)
		return err;
	struct blockdev_event *ev = NULL;
	size_t n = 0, cap = 0, pos = 0;
	while (size - pos >= BLOCKDEV_STREAM_HDR) {
		const uint8_t *h = raw + pos;
		uint32_t type = le_get32(h + 4);
		uint64_t len = le_get64(h + 16);
		if (le_get32(h) != BLOCKDEV_STREAM_MAGIC || type > BD_EV_MARK ||
		    len > size - pos - BLOCKDEV_STREAM_HDR)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct blockdev_event *v = realloc(ev, cap * sizeof(*v));
			if (!v) {
				err = -ENOMEM;
				break;
			}
			ev = v;
		}
		uint8_t *data = malloc(len + 1);
		if (!data) {
			err = -ENOMEM;
			break;
		}
		memcpy(data, h + BLOCKDEV_STREAM_HDR, len);
		data[len] = 0;
		ev[n++] = (struct blockdev_event){ (enum blockdev_event_type)type, le_get64(h + 8),
						   (size_t)len, data };
		pos += BLOCKDEV_STREAM_HDR + len;
	}
	free(raw);
	if (err) {
		crash_free_stream(ev, n);
		return err;
	}
	*out = ev;
	*count = n;
	return 0;
}

void crash_free_stream(struct blockdev_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ev[i].data);
	free(ev);
}
