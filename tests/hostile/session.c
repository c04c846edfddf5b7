/*
 * session.c - an in-process FUSE session over the daemon's own lowlevel
 * operations table (ordfs_fuse_ops, src/daemon/fuse_ops.c): requests are
 * built in the kernel's wire format (linux/fuse.h: fuse_in_header and the
 * opcode's arguments) and handed to libfuse with
 * fuse_session_process_buf, which decodes them and calls the daemon's
 * handlers exactly as the /dev/fuse loop does; the replies are caught by
 * a custom writev (fuse_session_custom_io), as the daemon's io_uring
 * transport catches its own (src/daemon/transport/transport.c).
 *
 * Owns: the session, the request's unique ids and the reply buffer.
 * Rules: one request at a time on the calling thread (the handlers reply
 * before they return: every op of the table does); INIT first, as the
 * kernel sends it; notifications the daemon sends on its own (unique 0:
 * inval_inode) are dropped, as the kernel would apply them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hostile.h"
#include "daemon/fuse_ops.h"

#define REPLY_MAX (2u << 20)

struct h_session {
	struct fuse_session *se;
	uint64_t unique;
	int fd; /* /dev/null: the session's fd, never read or written */
};

/* The reply of the request in flight (one session per process). */
static uint8_t *reply_buf;
static size_t reply_len;
static bool replied;

static ssize_t cap_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)fd;
	(void)buf;
	(void)len;
	(void)userdata;
	return 0;
}

static ssize_t cap_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)fd;
	(void)userdata;
	size_t total = 0;
	for (int i = 0; i < count; i++)
		total += iov[i].iov_len;
	if (total < sizeof(struct fuse_out_header) || total > REPLY_MAX) {
		errno = EINVAL;
		return -1;
	}
	struct fuse_out_header out;
	memcpy(&out, iov[0].iov_base, sizeof(out)); /* libfuse: the header is iov[0] */
	if (out.unique == 0)
		return (ssize_t)total; /* a notification */
	size_t at = 0;
	for (int i = 0; i < count; i++) {
		memcpy(reply_buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	reply_len = total;
	replied = true;
	return (ssize_t)total;
}

static const struct fuse_custom_io cap_io = {
	.read = cap_read,
	.writev = cap_writev,
};

int h_request(struct h_session *s, uint32_t opcode, uint64_t nodeid, const void *a, size_t alen,
	      const void *b, size_t blen, const void *c, size_t clen, const uint8_t **out,
	      size_t *out_len)
{
	size_t len = sizeof(struct fuse_in_header) + alen + blen + clen;
	uint8_t *msg = malloc(len);
	if (!msg)
		return -ENOMEM;
	struct fuse_in_header in;
	memset(&in, 0, sizeof(in));
	in.len = (uint32_t)len;
	in.opcode = opcode;
	in.unique = ++s->unique;
	in.nodeid = nodeid;
	in.uid = 0;
	in.gid = 0;
	in.pid = (uint32_t)getpid();
	memcpy(msg, &in, sizeof(in));
	size_t at = sizeof(in);
	if (alen)
		memcpy(msg + at, a, alen);
	at += alen;
	if (blen)
		memcpy(msg + at, b, blen);
	at += blen;
	if (clen)
		memcpy(msg + at, c, clen);
	replied = false;
	reply_len = 0;
	struct fuse_buf buf = { .size = len, .flags = 0, .mem = msg, .fd = -1, .pos = 0 };
	fuse_session_process_buf(s->se, &buf);
	free(msg);
	if (out) {
		*out = reply_buf + sizeof(struct fuse_out_header);
		*out_len = 0;
	}
	if (!replied)
		return -ENOMSG;
	struct fuse_out_header oh;
	memcpy(&oh, reply_buf, sizeof(oh));
	if (out_len)
		*out_len = reply_len - sizeof(oh);
	return oh.error; /* 0 or a negative errno */
}

int h_session_new(struct daemon_ctx *dc, struct h_session **out)
{
	*out = NULL;
	if (!reply_buf) {
		reply_buf = malloc(REPLY_MAX);
		if (!reply_buf)
			return -ENOMEM;
	}
	struct h_session *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	char *argv[] = { "hostile", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	s->se = fuse_session_new(&args, &ordfs_fuse_ops, sizeof(ordfs_fuse_ops), dc);
	if (!s->se) {
		free(s);
		return -EIO;
	}
	dc->se = s->se;
	s->fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	int err = s->fd < 0 ? -errno : fuse_session_custom_io(s->se, &cap_io, s->fd);
	if (err == 0)
		s->fd = -1; /* the session's now: fuse_session_destroy closes it */
	if (err) {
		h_session_free(s);
		return err;
	}
	/* INIT, as a kernel of protocol 7.31 sends it */
	struct fuse_init_in init;
	memset(&init, 0, sizeof(init));
	init.major = FUSE_KERNEL_VERSION;
	init.minor = 31;
	init.max_readahead = 128 * 1024;
	init.flags = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_DO_READDIRPLUS |
		     FUSE_READDIRPLUS_AUTO | FUSE_EXPORT_SUPPORT | FUSE_DONT_MASK |
		     FUSE_IOCTL_DIR | FUSE_AUTO_INVAL_DATA | FUSE_ATOMIC_O_TRUNC;
	const uint8_t *r;
	size_t rlen;
	err = h_request(s, FUSE_INIT, 0, &init, sizeof(init), NULL, 0, NULL, 0, &r, &rlen);
	if (err) {
		h_session_free(s);
		return err;
	}
	*out = s;
	return 0;
}

void h_session_free(struct h_session *s)
{
	if (!s)
		return;
	if (s->se)
		fuse_session_destroy(s->se);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}
