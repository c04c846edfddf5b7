/*
 * test_hooks.h - the daemon's test hooks, present only in a build
 * configured with -Dtest_hooks=true (meson defines ORDFS_TEST_HOOKS for
 * the daemon then; see test_hooks.c for what they do).
 *
 * Without the option the calls below are stubs: the ORDFS_TEST_*
 * environment variables are ignored and the ORDFS_IOC_TEST_* ioctls get
 * ENOTTY, so the installed daemon contains none of the hook code.
 */
#ifndef ORDFS_TEST_HOOKS_H
#define ORDFS_TEST_HOOKS_H

#include <errno.h>
#include <stddef.h>

struct blockdev;
struct daemon_ctx;

#ifdef ORDFS_TEST_HOOKS
/* Reads the ORDFS_TEST_* variables.  When one is set, wraps image_bd in a
 * recording device set up for it (dc->test_faults, dc->test_record) and
 * makes *bd that device; otherwise *bd = image_bd.  0, or -1 if the device
 * could not be set up (nothing to free then but image_bd). */
int test_hooks_setup(struct daemon_ctx *dc, struct blockdev *image_bd, struct blockdev **bd);
/* Answers an ORDFS_IOC_TEST_* ioctl: 0 or a negative errno; -ENOTTY for
 * any other cmd, or a hook the daemon was not started with. */
int test_hooks_ioctl(struct daemon_ctx *dc, unsigned cmd, const void *in, size_t in_size);
/* ORDFS_TEST_LOG=PATH: the file a detached daemon keeps as its stderr and
 * writes its messages to (appended), instead of /dev/null and syslog; a
 * test machine often has no syslog, and a daemon's last words (an
 * internal-error line, a sanitizer report) must reach the test's log.
 * An open descriptor, or -1 without the variable (or if PATH cannot be
 * opened: the daemon then detaches as it would anyway). */
int test_hooks_detached_log(void);
#else
static inline int test_hooks_setup(struct daemon_ctx *dc, struct blockdev *image_bd,
				   struct blockdev **bd)
{
	(void)dc;
	*bd = image_bd;
	return 0;
}

static inline int test_hooks_ioctl(struct daemon_ctx *dc, unsigned cmd, const void *in,
				   size_t in_size)
{
	(void)dc;
	(void)cmd;
	(void)in;
	(void)in_size;
	return -ENOTTY;
}

static inline int test_hooks_detached_log(void)
{
	return -1;
}
#endif

#endif
