/*
 * transport.h - how the daemon's requests arrive and its replies leave:
 * the one seam between libfuse's session (the lowlevel operations and reply
 * functions, fuse_ops.c) and the kernel.
 *
 * Two ways, chosen by -o io_uring=off|auto|on:
 *  - /dev/fuse: libfuse's own multi-threaded loop reads requests from the
 *    device and writes the replies to it (io_uring=off: nothing of this
 *    seam is installed, the session is as libfuse made it);
 *  - FUSE over io_uring (Linux 6.14+, while the fuse module's enable_uring
 *    is on): per-CPU queues of requests in memory shared with the kernel,
 *    served by uring_pool.c.  libfuse 3.14 (Debian 12) has no io_uring of
 *    its own, so the session gets custom I/O (fuse_session_custom_io):
 *    requests taken from the rings are handed to
 *    fuse_session_process_buf, and their replies are caught on their way
 *    out and put back in the ring entry they came in.  /dev/fuse is still
 *    served: INIT, FORGET, INTERRUPT and the replies to notifications
 *    come there, and the kernel falls back to it when a registration is
 *    refused.
 *
 * With libfuse >= 3.18 (which has io_uring itself) a third implementation
 * of these functions would hand the job to libfuse; the callers would not
 * change.
 *
 * Order of calls (main.c): transport_new before fuse_session_mount;
 * transport_start once the filesystem is mounted and before the daemon
 * tells its parent the mount is live (it answers INIT, so io_uring=on can
 * still fail the mount); transport_serve; transport_stop before the
 * filesystem is unmounted (no handler runs after it returns);
 * transport_destroy after fuse_session_unmount and before
 * fuse_session_destroy.
 */
#ifndef ORDFS_DAEMON_TRANSPORT_H
#define ORDFS_DAEMON_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fuse_session;

enum transport_uring_mode {
	TRANSPORT_URING_OFF,  /* /dev/fuse only, libfuse's loop untouched */
	TRANSPORT_URING_AUTO, /* io_uring when the kernel offers it (the default) */
	TRANSPORT_URING_ON,   /* io_uring or no mount */
};

/* "off", "auto", "on" -> the mode; -1 for anything else.  (Inline: the
 * option parser is linked into mkfs.ordfs and tune tools too.) */
static inline int transport_uring_mode_parse(const char *s)
{
	if (strcmp(s, "off") == 0)
		return TRANSPORT_URING_OFF;
	if (strcmp(s, "auto") == 0)
		return TRANSPORT_URING_AUTO;
	if (strcmp(s, "on") == 0)
		return TRANSPORT_URING_ON;
	return -1;
}

struct transport_stats {
	bool uring;           /* requests come through the rings */
	char why_not[128];    /* when not: why (empty with io_uring=off) */
	uint32_t queues;      /* the kernel's queues (one per possible CPU) */
	uint32_t threads;     /* ring threads serving them, all queues */
	uint32_t threads_peak_queue; /* most threads one queue has had */
	uint64_t ring_requests; /* requests answered through the rings */
	uint64_t dev_requests;  /* requests read from /dev/fuse (not counted
				   with io_uring=off) */
};

struct transport;

/* Sets the transport up for a session that is not mounted yet.  With a
 * mode other than off the session gets custom I/O; with on, what can be
 * known before mounting is checked (the fuse module's enable_uring, a
 * ring with 128-byte submissions).  0, or -1 with the reason in why. */
int transport_new(struct fuse_session *se, enum transport_uring_mode mode, bool single_thread,
		  struct transport **out, char *why, size_t why_len);

/* The session is mounted: answers INIT (taking the rings into use when the
 * kernel offers them and they could be set up) before the loop runs.  0;
 * or -1 with the reason in why when the mount must fail (io_uring=on and
 * no rings, or INIT could not be answered).  Nothing to do with off. */
int transport_start(struct transport *t, char *why, size_t why_len);

/* Serves until the mount ends or a signal ends the loop; returns what
 * fuse_session_loop(_mt) returned. */
int transport_serve(struct transport *t);

/* Stops the ring threads, each after the request it is handling: no
 * handler runs once this returns. */
void transport_stop(struct transport *t);

/* Frees the rings and buffers (the connection is gone or going). */
void transport_destroy(struct transport *t);

void transport_get_stats(struct transport *t, struct transport_stats *out);

#endif
