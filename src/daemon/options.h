/*
 * options.h - the daemon's command line and mount options.
 *
 * Owns: turning `ordfs IMAGE MOUNTPOINT [-o opts] [-f] [-d] [-s]` into a
 * struct daemon_options, validating every option before anything is
 * opened.  Options ordfs understands are consumed; the generic mount
 * options mount.fuse3 forwards and libfuse's own are passed through to
 * libfuse; anything else is an error.  Pure: no I/O, unit-tested.
 */
#ifndef ORDFS_DAEMON_OPTIONS_H
#define ORDFS_DAEMON_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "../fs.h"
#include "transport/transport.h"

/* Cold sequential reads of a 256 MiB file (dd bs=1M after drop_caches,
 * medians of five): 128 KiB (the kernel's default) 0.25 s, 1 MiB 0.13 s,
 * 4 MiB 0.11 s.  The kernel grows the window only for sequential reads,
 * so random reads do not pay for it. */
#define DAEMON_DEFAULT_READ_AHEAD_KB 4096u

struct daemon_options {
	const char *image;
	const char *mountpoint;
	bool foreground;
	bool debug;
	bool single_thread;
	bool show_help, show_version;
	struct ordfs_options fs;
	/* The kernel's readahead window for the mount in KiB (0: the kernel's
	 * default; readahead.c). */
	unsigned read_ahead_kb;
	unsigned nbd_timeout_ms;  /* an NBD request's limit; 0: the backend's default */
	bool nbd_nofua;           /* -o nofua: no FUA even where the server has it */
	bool read_ahead_given; /* on the command line or in the image */
	/* The kernel holds written data and sends it later (FUSE's writeback
	 * cache; off by default: design/caches.md, "Writes through the
	 * kernel"). */
	bool writeback_cache;
	/* -o io_uring=off|auto|on: how requests reach the daemon
	 * (transport/transport.h); auto by default. */
	enum transport_uring_mode io_uring;
	/* Comma-separated options for libfuse (always includes
	 * default_permissions, see options.c). */
	char fuse_opts[PATH_MAX + 1024];
	/* The mount's source as /proc/mounts shows it (fsname=). */
	char source[PATH_MAX];
};

/* Parses argv.  0 on success; otherwise a negative errno and a one-line
 * reason in err (without a trailing newline). */
int daemon_parse_args(int argc, char **argv, struct daemon_options *out, char *err,
		      size_t errlen);

/* The same, on top of the image's default mount options (the
 * superblock's mount_opts: ordfs options only); the command line wins. */
int daemon_parse_args_over(int argc, char **argv, const char *image_defaults,
			   struct daemon_options *out, char *err, size_t errlen);

/* Is this `ordfs IMAGE MOUNTPOINT -o ...,remount,...` (mount(8) asking,
 * through mount.fuse3, to remount)?  Then true, the mountpoint, and every
 * -o list joined in opts. */
bool daemon_args_remount(int argc, char **argv, const char **mountpoint, char *opts,
			 size_t optslen);

/* Parses one -o string into out (may be called several times). */
int daemon_parse_mount_opts(const char *opts, struct daemon_options *out, char *err,
			    size_t errlen);

#endif
