/*
 * remount_client.c - see remount_client.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include "remount_client.h"
#include "base/mountinfo.h"
#include "../ordfs_ioctl.h"

/* The kernel's per-mount flags a remount keeps or sets (mount(2)). */
struct kernel_flag {
	const char *name;
	unsigned long flag;
	bool set; /* the name sets the flag (else clears it) */
};
static const struct kernel_flag kernel_flags[] = {
	{ "nosuid", MS_NOSUID, true },	 { "suid", MS_NOSUID, false },
	{ "nodev", MS_NODEV, true },	 { "dev", MS_NODEV, false },
	{ "noexec", MS_NOEXEC, true },	 { "exec", MS_NOEXEC, false },
	{ "sync", MS_SYNCHRONOUS, true }, { "async", MS_SYNCHRONOUS, false },
	{ "dirsync", MS_DIRSYNC, true },
};

/* libfuse's and mount.fuse3's options, which mount(8) repeats from the
 * mount's superblock options: never passed to the daemon from there. */
static const char *const fuse_echo_prefix[] = {
	"user_id=", "group_id=", "rootmode=", "max_read=", "blksize=", "fd=",
	"fsname=", "subtype=", NULL,
};
static const char *const fuse_echo[] = { "default_permissions", "allow_other", "remount", NULL };

static const char *const atime_options[] = {
	"relatime", "norelatime", "strictatime", "atime", "noatime",
	"nodiratime", "diratime", "lazytime", "nolazytime", NULL,
};

static bool in_list(const char *const *list, const char *opt)
{
	for (; *list; list++)
		if (strcmp(*list, opt) == 0)
			return true;
	return false;
}

static bool prefix_in(const char *const *list, const char *opt)
{
	for (; *list; list++)
		if (strncmp(opt, *list, strlen(*list)) == 0)
			return true;
	return false;
}

/* Is opt one of the comma-separated options in list? */
static bool has_option(const char *list, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && strncmp(p, opt, n) == 0)
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

static int append(char *list, size_t size, const char *opt)
{
	size_t used = strlen(list);
	if (used + strlen(opt) + 2 > size)
		return -E2BIG;
	if (used)
		strcat(list, ",");
	strcat(list, opt);
	return 0;
}

/* The kernel's flags for the mount now, from its per-mount options (ro
 * and the access-time flags apart). */
static unsigned long flags_of(const char *mount_opts)
{
	unsigned long flags = 0;
	for (size_t i = 0; i < sizeof(kernel_flags) / sizeof(kernel_flags[0]); i++)
		if (kernel_flags[i].set && has_option(mount_opts, kernel_flags[i].name))
			flags |= kernel_flags[i].flag;
	return flags;
}

/* The kernel's access-time flags for the ordfs options in force (the
 * daemon's reply: "rw,data=ordered,...,relatime,nodiratime,..."). */
static unsigned long atime_flags_of(const char *in_force)
{
	unsigned long flags = MS_RELATIME;
	if (has_option(in_force, "noatime"))
		flags = MS_NOATIME;
	else if (has_option(in_force, "strictatime"))
		flags = MS_STRICTATIME;
	if (has_option(in_force, "nodiratime"))
		flags |= MS_NODIRATIME;
	if (has_option(in_force, "lazytime"))
		flags |= MS_LAZYTIME;
	return flags;
}

/* ORDFS_IOC_REMOUNT on the mountpoint: 0, or -errno with the reason. */
static int ask_daemon(const char *mountpoint, const char *opts, char *reply, size_t replylen)
{
	struct ordfs_remount r;
	memset(&r, 0, sizeof(r));
	snprintf(r.opts, sizeof(r.opts), "%s", opts);
	int fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		snprintf(reply, replylen, "%.900s: %s", mountpoint, strerror(errno));
		return err;
	}
	int rc = ioctl(fd, ORDFS_IOC_REMOUNT, &r);
	int err = rc < 0 ? -errno : 0;
	close(fd);
	r.reply[sizeof(r.reply) - 1] = '\0';
	if (err == -ENOTTY)
		snprintf(reply, replylen, "the daemon serving %.900s cannot remount (an older ordfs?)",
			 mountpoint);
	else if (err == -EPERM && !r.reply[0])
		snprintf(reply, replylen, "only root or the user who mounted it may remount %.900s",
			 mountpoint);
	else if (err && !r.reply[0])
		snprintf(reply, replylen, "%s", strerror(-err));
	else
		snprintf(reply, replylen, "%s", r.reply);
	return err;
}

static int kernel_remount(const char *mountpoint, unsigned long flags, char *err, size_t errlen)
{
	if (mount(NULL, mountpoint, NULL, MS_REMOUNT | flags, NULL) == 0)
		return 0;
	int e = -errno;
	snprintf(err, errlen, "the kernel refused to remount %s%s: %s", mountpoint,
		 flags & MS_RDONLY ? " read-only" : "",
		 e == -EBUSY ? "files are open for writing" : strerror(-e));
	return e;
}

int remount_client(const char *mountpoint, const char *opts, bool from_mount_helper, char *err,
		   size_t errlen)
{
	char mnt[PATH_MAX];
	if (!realpath(mountpoint, mnt)) {
		int e = -errno;
		snprintf(err, errlen, "%s: %s", mountpoint, strerror(errno));
		return e;
	}
	char type[64], mount_opts[512];
	if (mountinfo_find_options(mnt, type, sizeof(type), mount_opts, sizeof(mount_opts)) != 0 ||
	    strcmp(type, "fuse.ordfs") != 0) {
		snprintf(err, errlen, "%s is not an ordfs mount", mnt);
		return -EINVAL;
	}
	unsigned long kflags = flags_of(mount_opts);
	bool kernel_ro = has_option(mount_opts, "ro");
	int want_ro = -1; /* -1: not said */
	char to_daemon[1024] = "";
	char *copy = strdup(opts);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = 0;
	char *save = NULL;
	for (char *o = strtok_r(copy, ",", &save); o && !rc; o = strtok_r(NULL, ",", &save)) {
		const struct kernel_flag *kf = NULL;
		for (size_t i = 0; i < sizeof(kernel_flags) / sizeof(kernel_flags[0]); i++)
			if (strcmp(o, kernel_flags[i].name) == 0)
				kf = &kernel_flags[i];
		if (strcmp(o, "ro") == 0 || strcmp(o, "rw") == 0) {
			want_ro = o[1] == 'o';
		} else if (kf) {
			kflags = kf->set ? kflags | kf->flag : kflags & ~kf->flag;
		} else if (from_mount_helper &&
			   (in_list(fuse_echo, o) || prefix_in(fuse_echo_prefix, o))) {
			continue;
		} else if (from_mount_helper && in_list(atime_options, o) &&
			   has_option(mount_opts, o)) {
			continue; /* the kernel's flag as it is, repeated by mount(8) */
		} else {
			rc = append(to_daemon, sizeof(to_daemon), o);
		}
	}
	free(copy);
	if (!rc && want_ro >= 0)
		rc = append(to_daemon, sizeof(to_daemon), want_ro ? "ro" : "rw");
	if (rc) {
		snprintf(err, errlen, "the options are too long");
		return rc;
	}

	bool root = geteuid() == 0;
	bool going_ro = want_ro == 1 && !kernel_ro;
	if (root && going_ro) {
		rc = kernel_remount(mnt, kflags | MS_RDONLY | atime_flags_of(mount_opts), err,
				    errlen);
		if (rc)
			return rc;
	}
	char in_force[1024];
	rc = ask_daemon(mnt, to_daemon, in_force, sizeof(in_force));
	if (rc) {
		snprintf(err, errlen, "%s", in_force);
		if (root && going_ro) /* as it was */
			(void)mount(NULL, mnt, NULL, MS_REMOUNT | kflags | atime_flags_of(mount_opts),
				    NULL);
		return rc;
	}
	if (root) {
		unsigned long ro = want_ro == 1 || (want_ro == -1 && kernel_ro) ? MS_RDONLY : 0;
		rc = kernel_remount(mnt, kflags | ro | atime_flags_of(in_force), err, errlen);
		if (rc)
			return rc;
	}
	snprintf(err, errlen, "%s", in_force);
	return 0;
}
