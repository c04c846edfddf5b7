/*
 * ops.h - filesystem operations: the calls the FUSE glue, mkfs and the tests
 * make.  Everything behind these lives in the core library, callable
 * without a mount.
 *
 * Rules:
 *  - Every operation is atomic with respect to crashes: it runs in one
 *    journal handle (or a chain protected by the orphan list, for truncate).
 *  - Operations return 0 / a byte count or a negative errno and leave no
 *    half-done state behind.
 *  - Inode arguments are held references (inode_get); returned inodes carry
 *    a new reference the caller drops with inode_put.
 */
#ifndef ORDFS_OPS_H
#define ORDFS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/format.h"

struct ordfs;
struct ordfs_options;
struct inode;

struct ordfs_cred {
	uint32_t uid, gid;
};

/* ---- namespace (namei/) ------------------------------------------------- */

int ordfs_lookup(struct ordfs *fs, struct inode *dir, const char *name,
		 struct inode **out);
/* Looks up a '/'-separated path from the root ("" or "/" is the root);
 * -ENAMETOOLONG past PATH_MAX, else ordfs_lookup's errors. */
int ordfs_lookup_path(struct ordfs *fs, const char *path, struct inode **out);
int ordfs_mkdir(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		const struct ordfs_cred *cred, struct inode **out);
/* Creates a regular file (or another non-directory type via mode). */
int ordfs_create(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		 const struct ordfs_cred *cred, struct inode **out);
/* Regular files, FIFOs, sockets and device nodes (rdev for the last two). */
int ordfs_mknod(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		uint32_t rdev, const struct ordfs_cred *cred, struct inode **out);
/* As the three calls above, for a caller that leaves the umask to the
 * filesystem (FUSE_CAP_DONT_MASK): umask clears bits of mode only when dir
 * has no default ACL; with one, the new inode inherits from it instead
 * (acl.h).  The plain calls are these with umask 0.  All of them give a new
 * inode in a directory with a default ACL its ACLs, in the same handle. */
int ordfs_mkdir_umask(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		      uint32_t umask, const struct ordfs_cred *cred, struct inode **out);
int ordfs_create_umask(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		       uint32_t umask, const struct ordfs_cred *cred, struct inode **out);
int ordfs_mknod_umask(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		      uint32_t rdev, uint32_t umask, const struct ordfs_cred *cred,
		      struct inode **out);
/* Targets of 1..ORDFS_SYMLINK_MAX bytes (-ENAMETOOLONG beyond). */
int ordfs_symlink(struct ordfs *fs, struct inode *dir, const char *name, const char *target,
		  const struct ordfs_cred *cred, struct inode **out);
/* Copies up to size bytes of the target (no NUL); returns the bytes copied. */
ssize_t ordfs_readlink(struct ordfs *fs, struct inode *link, char *buf, size_t size);
/* A new name for a non-directory (-EPERM for directories, -EMLINK past
 * ORDFS_LINK_MAX links). */
int ordfs_link(struct ordfs *fs, struct inode *inode, struct inode *newdir,
	       const char *newname);
int ordfs_unlink(struct ordfs *fs, struct inode *dir, const char *name);
int ordfs_rmdir(struct ordfs *fs, struct inode *dir, const char *name);
int ordfs_rename(struct ordfs *fs, struct inode *olddir, const char *oldname,
		 struct inode *newdir, const char *newname, unsigned flags);

/* Lists a directory from cookie (0 = start) under its lock; see dir.h for
 * the callback and cookie rules ("." and ".." are not included). */
typedef int (*ordfs_emit_fn)(void *ctx, const char *name, size_t len, uint32_t ino,
			     uint8_t dtype, uint64_t next_cookie);
int ordfs_readdir(struct ordfs *fs, struct inode *dir, uint64_t cookie, ordfs_emit_fn emit,
		  void *ctx);

/* Entries that name directories (namei/namei.c, design/locking.md): a
 * directory named by an entry of dir must be neither dir itself nor the
 * root, and its '..' must be dir.  ordfs_lookup, rename, unlink and rmdir
 * check it; ordfs_check_entry is the same check for a caller that holds a
 * reference to the inode an entry named (readdirplus), called with no
 * inode locked: 0, -EUCLEAN (damage: the thread's corruption note says
 * which), or -EAGAIN (the name no longer names child: a rename meanwhile). */
int ordfs_check_entry(struct ordfs *fs, struct inode *dir, const char *name, size_t len,
		      struct inode *child);
/* The parent of directory dir ("..") with a reference; the root's is the
 * root.  -ENOTDIR, or -EUCLEAN if '..' names dir itself or no directory. */
int ordfs_lookup_parent(struct ordfs *fs, struct inode *dir, struct inode **out);
/* What the last -EUCLEAN of this thread's namespace operations met (one
 * line naming the directory and the inode), or NULL; taking it clears it.
 * The daemon passes it to errors= (ordfs_report_error) as its log line. */
const char *ordfs_take_corruption_note(void);

/* ---- attributes (file/attr.c) ------------------------------------------ */

#define ORDFS_SET_MODE 0x01u
#define ORDFS_SET_UID 0x02u
#define ORDFS_SET_GID 0x04u
#define ORDFS_SET_SIZE 0x08u
#define ORDFS_SET_ATIME 0x10u
#define ORDFS_SET_MTIME 0x20u
#define ORDFS_SET_ATIME_NOW 0x40u /* with ORDFS_SET_ATIME: use the current time */
#define ORDFS_SET_MTIME_NOW 0x80u

struct ordfs_setattr {
	unsigned valid;
	uint16_t mode;
	uint32_t uid, gid;
	uint64_t size;
	struct ordfs_timespec atime, mtime;
};

struct ordfs_statfs {
	uint32_t block_size, name_max;
	uint64_t blocks, blocks_free, blocks_avail;
	uint64_t inodes, inodes_free;
};

struct stat;
void ordfs_getattr(struct ordfs *fs, struct inode *inode, struct stat *st);
int ordfs_setattr(struct ordfs *fs, struct inode *inode, const struct ordfs_setattr *sa);
void ordfs_statfs(struct ordfs *fs, struct ordfs_statfs *out);

/* ---- permissions (xattr/acl_inode.c) ------------------------------------ */

/* Linux's permission check (generic_permission) of a caller for want, a
 * mask of R_OK, W_OK, X_OK: the owner by the mode's owner bits; others by
 * the access ACL when there is one and the mode's group bits are not all
 * zero, else by the group or other bits; then uid 0 passes as with
 * CAP_DAC_OVERRIDE (execute only where some execute bit is set, except on
 * directories).  struct ordfs_cred has no supplementary groups: they come
 * as groups[0..ngroups) (NULL and 0 for none) and count as in_group_p
 * counts them.  0, -EACCES, or the error of reading the ACL (-EUCLEAN,
 * -EIO, -ENOMEM).  Mode changes keep the ACL in step: setting an access
 * ACL sets the mode, chmod rewrites the ACL (setxattr, setattr). */
int ordfs_permission(struct ordfs *fs, struct inode *inode, const struct ordfs_cred *cred,
		     const uint32_t *groups, uint32_t ngroups, unsigned want);

/* ---- file data (file/) ------------------------------------------------- */

/* write(2).  A file flagged i refuses it, one flagged a takes only
 * appends (ordfs_write_by); with S the data is durable (ordfs_fsync)
 * before it returns. */
ssize_t ordfs_write(struct ordfs *fs, struct inode *inode, const void *buf, size_t len,
		    uint64_t off);
/* How a write came (ordfs_write_by): */
#define ORDFS_WRITE_APPEND 0x1u /* an O_APPEND write: allowed on an append-only
				   file, where it lands at the end whatever off */
#define ORDFS_WRITE_CACHED 0x2u /* the kernel writing back pages it cached
				   (-o writeback_cache, shared mappings), from
				   writes it let through: on an append-only file
				   allowed as written (at off) */
ssize_t ordfs_write_by(struct ordfs *fs, struct inode *inode, const void *buf, size_t len,
		       uint64_t off, unsigned how);
ssize_t ordfs_read(struct ordfs *fs, struct inode *inode, void *buf, size_t len,
		   uint64_t off);
/* The same without touching atime: the kernel filling a page for a
 * partial write (-o writeback_cache), not a program reading. */
ssize_t ordfs_read_for_write(struct ordfs *fs, struct inode *inode, void *buf, size_t len,
			     uint64_t off);
/* truncate(2): -EPERM on a file flagged i or a. */
int ordfs_truncate(struct ordfs *fs, struct inode *inode, uint64_t size);
/* True if the kernel may keep serving the file's (or directory's) data
 * from its cache through a new open: no read could change its atime now
 * under the mount's policy (atime_reads_may_be_cached), or the filesystem
 * is read-only.  Otherwise the open drops the cache, so the read that
 * must update atime reaches the filesystem. */
bool ordfs_open_keeps_cache(struct ordfs *fs, struct inode *inode);

/* copy_file_range(2) within the filesystem (file/copy_range.c): copies
 * up to len bytes of src from off_in to dst at off_out inside the image,
 * as a write of dst (pages, delayed allocation, the write routes), so
 * nothing crosses the FUSE connection.  Whole source blocks that are
 * holes stay holes where dst has a hole too.  Returns the bytes copied:
 * fewer than len when the source ends first (0 from at or past its
 * EOF).  Errors as the kernel's generic checks: -EINVAL for overlapping
 * ranges in one file or a non-regular file, -EISDIR, -EOVERFLOW (a
 * position plus len wraps), -EFBIG; -EPERM when dst's flags refuse a
 * write (i, a); -EROFS, -ENOSPC, -EIO.  dst's set-ID bits are the
 * caller's to drop (ordfs_drop_privs); with S on dst the copy is durable
 * before it returns. */
ssize_t ordfs_copy_range(struct ordfs *fs, struct inode *src, uint64_t off_in,
			 struct inode *dst, uint64_t off_out, size_t len);

/* ---- file flags (file/flags.c; the rules: inode/iflags.h) ---------------- */

/* The inode's file flags: ORDFS_FL_* (format.h), the Linux FS_*_FL values,
 * what FS_IOC_GETFLAGS answers and lsattr shows. */
uint32_t ordfs_get_flags(struct ordfs *fs, struct inode *inode);
/* Who changes flags (ordfs_set_flags): NULL means a privileged caller. */
struct ordfs_flags_caller {
	uint32_t uid;
	bool cap_fowner;          /* CAP_FOWNER: as the owner of any file */
	bool cap_linux_immutable; /* CAP_LINUX_IMMUTABLE: may change i and a */
	bool cap_sys_resource;    /* may change j (ext4: CAP_SYS_RESOURCE) */
};
/* Gives the flags in mask the values they have in flags and keeps the
 * others: FS_IOC_SETFLAGS passes mask ~0 (every flag, so one ordfs does
 * not keep is -EOPNOTSUPP), FS_IOC_FSSETXATTR IFLAGS_XFLAG_MASK (D and j
 * have no xflag and stay).  -EPERM: not the owner nor CAP_FOWNER, i or a
 * changed without CAP_LINUX_IMMUTABLE, j changed without
 * cap_sys_resource, or an immutable inode's other flags changed;
 * -EOPNOTSUPP: a flag not kept,
 * or not for the inode's type (iflags_allowed); -EROFS.  One journaled
 * inode update that sets ctime (and first the file's dirty pages written
 * back when j changes); committed before it returns when S is set before
 * or after.  Nothing changes on failure. */
int ordfs_set_flags(struct ordfs *fs, struct inode *inode, uint32_t flags, uint32_t mask,
		    const struct ordfs_flags_caller *caller);
/* May the file be opened with these open(2) flags?  -EPERM when its file
 * flags refuse it (Linux's may_open): i with write access or O_TRUNC; a
 * with O_TRUNC, or write access without O_APPEND. */
int ordfs_open_check(struct ordfs *fs, struct inode *inode, int open_flags);

/* ---- durability (flush/sync.c) ----------------------------------------- */

/* Makes the file's data and the metadata needed to reach it durable
 * (directories: their entries).  Failures are recorded in the inode's
 * errseq as well as returned. */
int ordfs_fsync(struct ordfs *fs, struct inode *inode, bool datasync);
/* Writes back all dirty data, commits and flushes (ordfsctl sync). */
int ordfs_sync(struct ordfs *fs);

/* ---- remount (mount/remount.c) ------------------------------------------- */

/* Changes the options of a mounted filesystem to `want` (a copy of
 * ordfs_options_in_force with changes): ro/rw, commit=, barrier, discard,
 * errors=, flush_error=, the atime modes and journal_ioprio.  Anything
 * else that differs is refused with -EINVAL and a reason in *why, and
 * nothing changes; a failed ro or rw transition is undone and returned
 * with its reason. */
int ordfs_remount(struct ordfs *fs, const struct ordfs_options *want, const char **why);
/* The options in force now (what a remount changed included). */
void ordfs_options_in_force(struct ordfs *fs, struct ordfs_options *out);

/* ---- online grow (mount/grow_online.c) ----------------------------------- */

/* Grows the mounted filesystem fs to new_count blocks (its device made
 * that large by the caller: blockdev_refresh_size) and commits and
 * checkpoints the grow before it returns (grow_online.c).  *old_count:
 * the size before.  0 also when ordfs_grow_target(new_count) is the size
 * already (nothing to do; but a grow that committed and could not finish
 * before, its space not yet the allocator's, is finished first).
 * -EINVAL/-EFBIG (ordfs_grow_geometry's refusals, or a device too small),
 * -EROFS (not writable), or an I/O error; *why says it in one line. */
int ordfs_grow_online(struct ordfs *fs, uint64_t new_count, uint64_t *old_count,
		      const char **why);

/* ---- shutdown (mount/shutdown.c) ----------------------------------------- */

/* What FS_IOC_SHUTDOWN's flags ask for (linux/fs.h FS_SHUTDOWN_FLAGS_*,
 * ext4's EXT4_GOING_FLAGS_*): write back and commit everything first, only
 * commit the journal, or nothing. */
enum ordfs_shutdown_how {
	ORDFS_SHUTDOWN_SYNC = 0,
	ORDFS_SHUTDOWN_LOGFLUSH = 1,
	ORDFS_SHUTDOWN_NOLOGFLUSH = 2,
};
/* Shuts the filesystem down, as ext4 does: from its return on nothing
 * more reaches the image and every operation fails with EIO; the next
 * mount replays the journal.  0 (also when it was shut down already). */
int ordfs_shutdown(struct ordfs *fs, enum ordfs_shutdown_how how);
/* Has it been shut down? */
bool ordfs_is_shut_down(struct ordfs *fs);

/* ---- discard (alloc/discard.c) ------------------------------------------- */

/* Discards every free block of the image (fstrim); *trimmed: the bytes.
 * -EOPNOTSUPP if the backend cannot discard. */
int ordfs_trim(struct ordfs *fs, uint64_t *trimmed);
/* The journal's release callback: discards (-o discard), then gives the
 * blocks back to the allocator. */
void ordfs_release_freed(void *fs, uint64_t start, uint32_t len);

/* One open file description's cursor into the file's write errors. */
struct ordfs_file {
	uint32_t wb_since; /* errseq_t */
};
/* At open: an error no one has seen yet stays visible to this opener. */
void ordfs_file_open(struct inode *inode, struct ordfs_file *f);
/* fsync through an open file description: reports each write error of
 * the file to this description exactly once (and any failure of this
 * fsync itself). */
int ordfs_file_fsync(struct ordfs *fs, struct inode *inode, struct ordfs_file *f,
		     bool datasync);

/* ---- space (file/fallocate.c) ----------------------------------------- */

/* fallocate(2), mode from <linux/falloc.h> (also in <fcntl.h>):
 * 0 or FALLOC_FL_KEEP_SIZE preallocates the holes as unwritten extents
 * (reads as zeros); FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE unmaps;
 * FALLOC_FL_ZERO_RANGE [| FALLOC_FL_KEEP_SIZE] makes the range read as zeros,
 * preallocated.  Without KEEP_SIZE the size grows to off + len.  Errors:
 * -EINVAL (len 0, off or len negative as off_t), -EOPNOTSUPP (other modes,
 * PUNCH_HOLE without KEEP_SIZE or with ZERO_RANGE), -EISDIR, -ESPIPE (FIFO),
 * -ENODEV (other non-regular), -EFBIG (off + len past 2^62), -EROFS,
 * -ENOSPC (nothing changed if the holes could not fit; see file/fallocate.c). */
int ordfs_fallocate(struct ordfs *fs, struct inode *inode, int mode, uint64_t off,
		    uint64_t len);
/* lseek(2) with SEEK_DATA or SEEK_HOLE: the resulting offset, or -ENXIO (off
 * at or past EOF; for SEEK_DATA also no data after off), -EINVAL (other
 * whence, not a regular file).  Delayed and written data are data;
 * unwritten extents without pages are holes; EOF is a hole. */
off_t ordfs_seek_data_hole(struct ordfs *fs, struct inode *inode, uint64_t off, int whence);

/* ---- extended attributes (file/xattr.c) ------------------------------- */

/* Linux semantics (see xattr.h for the rules).  Names: "user.", "trusted.",
 * "security." + at least one byte, or exactly "system.posix_acl_access" /
 * "system.posix_acl_default"; -EOPNOTSUPP for any other, -EINVAL for a bare
 * prefix, -ERANGE for an empty name or one over 255 bytes.  Values over
 * 65536 bytes are -E2BIG; all of an inode's attributes share one block,
 * -ENOSPC beyond (nothing changed).  A damaged xattr block is -EUCLEAN. */

/* The two ACL names take and give Linux's ACL xattr form and keep the mode
 * in step (acl.h): -EINVAL for a malformed ACL, -EOPNOTSUPP for another
 * version or on a symlink, -EACCES for a default ACL on a non-directory;
 * an empty value (or a header without entries) removes, and removing an
 * absent ACL succeeds, as on ext4; XATTR_CREATE/XATTR_REPLACE do not
 * apply to them. */

/* flags: XATTR_CREATE (-EEXIST if present), XATTR_REPLACE (-ENODATA if
 * absent), from <sys/xattr.h>; -EROFS on a read-only mount. */
int ordfs_setxattr(struct ordfs *fs, struct inode *inode, const char *name, const void *value,
		   size_t size, int flags);
/* Who sets an attribute, for the rule Linux applies to access ACLs
 * (posix_acl_update_mode): the set-group-ID bit is cleared when the
 * caller is not in the file's group and lacks CAP_FSETID. */
struct ordfs_caller {
	struct ordfs_cred cred;
	const uint32_t *groups; /* supplementary groups, as ordfs_permission */
	uint32_t ngroups;
	bool cap_fsetid;
};
/* A change of the file's data by caller (fallocate, write): Linux drops
 * set-user-ID unless the caller holds CAP_FSETID, and set-group-ID when
 * group-executable or when the caller is neither in the file's group nor
 * holds CAP_FSETID (setattr_should_drop_sgid).  The kernel's FUSE fallback
 * knows only the group-executable case, so the daemon applies the rule.
 * Returns 1 if the mode changed, 0 if not, or a negative errno. */
int ordfs_drop_privs(struct ordfs *fs, struct inode *inode, const struct ordfs_caller *caller);
/* ordfs_setxattr on behalf of caller (NULL: a privileged caller). */
int ordfs_setxattr_by(struct ordfs *fs, struct inode *inode, const char *name,
		      const void *value, size_t size, int flags, const struct ordfs_caller *caller);
/* The value's length, copied to value unless size is 0; -ERANGE if size is
 * too small, -ENODATA if absent. */
ssize_t ordfs_getxattr(struct ordfs *fs, struct inode *inode, const char *name, void *value,
		       size_t size);
/* The full names, each NUL-terminated ("user.a\0trusted.b\0"), sorted by
 * namespace then name; returns their total length, copied to list unless
 * size is 0; -ERANGE if size is too small. */
ssize_t ordfs_listxattr(struct ordfs *fs, struct inode *inode, char *list, size_t size);
/* -ENODATA if absent; removing the last attribute frees the block. */
int ordfs_removexattr(struct ordfs *fs, struct inode *inode, const char *name);

#endif
