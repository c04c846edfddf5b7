/*
 * kswitch.c - the fuse module's enable_uring parameter.  The probe turns it
 * on for a mount that asks for io_uring and puts back the value it found:
 * as soon as the mount's rings are registered (the connection keeps
 * io_uring once INIT has negotiated it), at exit, and from the drivers'
 * SIGINT/SIGTERM handlers (kswitch_restore is async-signal-safe).
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int saved = -1;	/* the value found before the first change */
static int registered;

int kswitch_get(void)
{
	int fd = open(ENABLE_URING_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char c = 0;
	ssize_t n = read(fd, &c, 1);
	close(fd);
	if (n != 1)
		return -1;
	return c == 'Y' || c == 'y' || c == '1';
}

static int kswitch_write(int on)
{
	int fd = open(ENABLE_URING_PATH, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, on ? "1" : "0", 1);
	int e = errno;
	close(fd);
	return n == 1 ? 0 : -e;
}

int kswitch_set(int on)
{
	int cur = kswitch_get();
	if (cur < 0)
		return -ENOENT;
	if (saved < 0) {
		saved = cur;
		if (!registered) {
			registered = 1;
			atexit(kswitch_restore);
		}
	}
	if (cur == !!on)
		return 0;
	return kswitch_write(on);
}

void kswitch_restore(void)
{
	int e = errno;
	if (saved >= 0)
		kswitch_write(saved);
	errno = e;
}

void kswitch_forget(void)
{
	saved = -1;
}
