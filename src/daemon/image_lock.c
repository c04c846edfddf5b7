/*
 * image_lock.c - taking an image's lock, waiting for an exiting daemon
 * (image_lock.h).
 */
#include <errno.h>
#include <sys/file.h>
#include <unistd.h>

#include "image_lock.h"
#include "base/mountinfo.h"
#include "../blockdev/blockdev.h"

int image_lock_wait(struct blockdev *bd, const char *image, unsigned timeout_ms)
{
	for (unsigned waited = 0;; waited += 50) {
		int err = blockdev_host_lock(bd, LOCK_EX);
		if (err != -EWOULDBLOCK)
			return err;
		if (waited >= timeout_ms || mountinfo_image_mounted(image))
			return -EBUSY;
		usleep(50 * 1000);
	}
}
