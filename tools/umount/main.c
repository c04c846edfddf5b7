/*
 * umount.ordfs - the umount(8) helper for ordfs mounts: unmounts, then
 * waits until the daemon has written everything back and closed the image.
 *
 * Why: the kernel does not wait for a FUSE daemon at umount.  umount(2)
 * returns as soon as the mount is gone, while the daemon is still writing
 * back, committing and marking the image clean; an `fsck` or a second
 * mount started right then would find the image busy or mid-update.  The
 * daemon holds an exclusive flock on the image for as long as it has it
 * open (src/daemon/main.c), so "the image is clean and closed" is "that
 * lock can be taken".
 *
 * umount(8) runs /sbin/umount.ordfs MOUNTPOINT [-nlfvr] [-N ns] [-t type]
 * for mounts its table (utab) gives helper=ordfs (the daemon records that
 * when it runs as root, src/daemon/utab.c), and umount.fuse.ordfs (a link
 * to it) where it knows the type fuse.ordfs (the daemon names its mounts
 * fsname=IMAGE, subtype=ordfs).  Rules:
 *  - the image is found in /proc/self/mountinfo (the mount's source) and
 *    opened before the unmount, so its lock can be waited for even if the
 *    path is replaced meanwhile;
 *  - -l (lazy) detaches and does not wait (the daemon goes on while files
 *    are open); -f forces;
 *  - it waits only when the mount it removed was the last one of its FUSE
 *    connection: a bind mount of an ordfs file or directory (mount --bind)
 *    shares the original mount's device number (major:minor in mountinfo),
 *    and while another mount with that number remains, the daemon rightly
 *    goes on serving it, so the helper returns at once;
 *  - without privilege to unmount, fusermount3 -u does it;
 *  - an image on an NBD server has no flock: the helper connects to the
 *    export before the unmount and waits until the owner record the
 *    daemon holds (src/super/owner.h) says free, or names a process that
 *    has exited;
 *  - ORDFS_UMOUNT_TIMEOUT (seconds, default 600) bounds the wait; past it
 *    the exit status is 32 (umount's "failure") with a line that says the
 *    daemon still holds the image.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/mountinfo.h"
#include "blockdev/blockdev.h"
#include "super/owner.h"

#define EXIT_FAIL 32 /* umount(8)'s "umount failure" */

static const char *prog = "umount.ordfs";


/* How many mounts in this namespace have device number `dev` (the field
 * "major:minor" of mountinfo): every mount of one FUSE connection, bind
 * mounts included, has the same one.  -errno if mountinfo cannot be read. */
static int count_mounts_of_dev(const char *dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return -errno;
	char line[3 * PATH_MAX];
	int count = 0;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor ... */
		char *save = NULL;
		char *t = strtok_r(line, " ", &save);
		for (int i = 0; t && i < 2; i++)
			t = strtok_r(NULL, " ", &save);
		if (t && strcmp(t, dev) == 0)
			count++;
	}
	fclose(f);
	return count;
}

static int run_fusermount(const char *target, bool lazy)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-z", "--", target, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "--", target, (char *)NULL);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What the helper waits for: the daemon has let go of the image.  Returns
 * 1 when it has, 0 not yet, or a negative errno (cannot tell). */
struct release_check {
	int fd;              /* an image file: its flock can be taken */
	struct blockdev *nbd; /* an NBD export: its owner record is free */
};

static int released(const struct release_check *r)
{
	if (r->nbd) {
		bool held = false;
		char who[256];
		int err = owner_describe(r->nbd, &held, who, sizeof(who));
		if (err)
			return err;
		/* a holder of this host that has exited let go too */
		return !held || !owner_holder_runs(r->nbd);
	}
	if (flock(r->fd, LOCK_EX | LOCK_NB) == 0) {
		flock(r->fd, LOCK_UN);
		return 1;
	}
	return errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
}

/* Without -v a wait is announced only once it is long enough to puzzle a
 * person: umount(8) of a kernel filesystem prints nothing, and scripts
 * compare its output (xfstests' generic/051 failed on the line when a
 * busy machine made a release after a shutdown take over 2 s). */
#define TELL_WAIT_AFTER_S 10.0

/* Waits until the daemon has written everything back and let go of the
 * image, at most ORDFS_UMOUNT_TIMEOUT seconds. */
static int wait_released(const struct release_check *r, const char *image, bool verbose)
{
	const char *env = getenv("ORDFS_UMOUNT_TIMEOUT");
	double limit = env && *env ? strtod(env, NULL) : 600.0;
	double start = now();
	bool told = false;
	for (;;) {
		int done = released(r);
		if (done < 0) {
			fprintf(stderr, "%s: %s: cannot wait for the daemon: %s\n", prog, image,
				strerror(-done));
			return EXIT_FAIL;
		}
		if (done)
			return 0;
		double waited = now() - start;
		if (waited > limit) {
			fprintf(stderr, "%s: %s: unmounted, but the ordfs daemon still holds the "
				"image after %.0f s\n", prog, image, waited);
			return EXIT_FAIL;
		}
		if (!told && (verbose || waited > TELL_WAIT_AFTER_S)) {
			fprintf(stderr, "%s: waiting for the ordfs daemon to write back and release %s\n",
				prog, image);
			told = true;
		}
		usleep(10000);
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: %s MOUNTPOINT [-nlfvr] [-N NAMESPACE] [-t TYPE]\n"
		     "Unmounts an ordfs mount and waits until its daemon has written\n"
		     "everything back and closed the image (umount(8) runs it).\n"
		     "  -l  lazy: detach now, do not wait    -f  force\n"
		     "  -v  verbose                          -n, -r  accepted, no effect\n"
		     "ORDFS_UMOUNT_TIMEOUT=SECONDS bounds the wait (default 600).\n", prog);
}

int main(int argc, char **argv)
{
	const char *arg = NULL;
	bool lazy = false, force = false, verbose = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			printf("%s %s\n", prog, ORDFS_PACKAGE_VERSION);
			return 0;
		}
		if ((strcmp(a, "-N") == 0 || strcmp(a, "-t") == 0) && i + 1 < argc) {
			if (strcmp(a, "-N") == 0) {
				fprintf(stderr, "%s: -N (mount namespaces) is not supported\n", prog);
				return EXIT_FAIL;
			}
			i++;
			continue;
		}
		if (a[0] == '-' && a[1]) {
			for (const char *c = a + 1; *c; c++) {
				switch (*c) {
				case 'l': lazy = true; break;
				case 'f': force = true; break;
				case 'v': verbose = true; break;
				case 'n': case 'r': case 'i': case 'd': break;
				default:
					fprintf(stderr, "%s: unknown option '-%c'\n", prog, *c);
					usage(stderr);
					return EXIT_FAIL;
				}
			}
			continue;
		}
		if (arg) {
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
			return EXIT_FAIL;
		}
		arg = a;
	}
	if (!arg) {
		usage(stderr);
		return EXIT_FAIL;
	}
	char target[PATH_MAX];
	if (!realpath(arg, target))
		snprintf(target, sizeof(target), "%s", arg);
	char image[PATH_MAX], type[64], dev[64];
	int err = mountinfo_find(target, image, sizeof(image), type, sizeof(type), dev, sizeof(dev));
	if (err) {
		fprintf(stderr, "%s: %s: not mounted\n", prog, target);
		return EXIT_FAIL;
	}
	if (strcmp(type, "fuse.ordfs") != 0)
		fprintf(stderr, "%s: %s: a %s mount, not fuse.ordfs; unmounting without waiting\n",
			prog, target, type);
	bool ours = strcmp(type, "fuse.ordfs") == 0;
	struct blockdev *nbd = NULL;
	if (ours && blockdev_is_nbd_uri(image)) {
		char why[300];
		if (blockdev_open_image(image, BLOCKDEV_READONLY, 0, &nbd, why, sizeof(why)) != 0)
			fprintf(stderr, "%s: %s: cannot reach the export (%s); unmounting without "
				"waiting\n", prog, image, why);
		ours = false; /* no file to open: nbd says when it is released */
	}
	int fd = ours ? open(image, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 && ours)
		fprintf(stderr, "%s: %s: cannot open the image (%s); unmounting without waiting\n",
			prog, image, strerror(errno));

	int flags = (lazy ? MNT_DETACH : 0) | (force ? MNT_FORCE : 0);
	if (umount2(target, flags) != 0) {
		int e = errno;
		if (e != EPERM || run_fusermount(target, lazy) != 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, target, strerror(e));
			if (fd >= 0)
				close(fd);
			blockdev_destroy(nbd);
			return EXIT_FAIL;
		}
	}
	if (verbose)
		fprintf(stderr, "%s: %s unmounted\n", prog, target);
	int status = 0;
	if ((fd >= 0 || nbd) && !lazy) {
		/* Another mount of the same connection (a bind mount, or the
		 * original under a removed bind) keeps the daemon serving:
		 * waiting for it to close the image would wait for its
		 * unmount.  Only the last mount's removal ends the daemon. */
		int others = count_mounts_of_dev(dev);
		if (others > 0) {
			if (verbose)
				fprintf(stderr, "%s: %d other mount%s of %s (device %s) remain%s; "
					"not waiting\n", prog, others, others == 1 ? "" : "s",
					image, dev, others == 1 ? "s" : "");
		} else {
			struct release_check r = { fd, nbd };
			status = wait_released(&r, image, verbose);
		}
	}
	if (fd >= 0)
		close(fd);
	blockdev_destroy(nbd);
	return status;
}
