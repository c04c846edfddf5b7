/*
 * xattr.h - extended attributes, internal API (the public calls are in
 * ops.h, "extended attributes").
 *
 * Owns: an inode's ORDFS_BT_XATTR block (format.h, "extended attributes"):
 * one block per inode, pointed at by inode.xattr_block, charged as one
 * block in inode.blocks and marked in the block bitmap like any metadata
 * block.  The block exists exactly while the inode has at least one
 * attribute: the last removal frees it.
 *
 * Rules:
 *  - Names follow Linux: "user.", "trusted.", "security." plus a name of
 *    at least one byte, or exactly "system.posix_acl_access" /
 *    "system.posix_acl_default".  The whole name is at most
 *    ORDFS_XATTR_NAME_MAX bytes, a value at most ORDFS_XATTR_SIZE_MAX; all
 *    of an inode's attributes must fit its one block (-ENOSPC).
 *  - The public calls take inode->lock themselves (shared for get/list,
 *    exclusive for set/remove) and start their handle after it.  The calls
 *    below document their own locking.
 *  - Every use of the block verifies it (header, checksum, owner, entry
 *    structure): -EUCLEAN, and nothing is changed.
 *  - Permissions are the caller's business (the kernel checks them above
 *    FUSE: trusted.* needs CAP_SYS_ADMIN, user.* only on regular files and
 *    directories); the core stores any valid name on any inode type,
 *    except the two ACL names, whose values and inode types follow acl.h
 *    (setting one also sets the mode, in the same handle).
 *
 * Design: docs/design/xattrs-acls.md.
 */
#ifndef ORDFS_XATTR_H
#define ORDFS_XATTR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ordfs;
struct handle;
struct inode;

#define ORDFS_XATTR_NAME_MAX 255u   /* Linux XATTR_NAME_MAX: the full name */
#define ORDFS_XATTR_SIZE_MAX 65536u /* Linux XATTR_SIZE_MAX: -E2BIG beyond */

/* ---- the operations' steps (file/xattr.c takes the locks) --------------- */

/* A parsed attribute name. */
struct xname {
	uint8_t ns;
	uint8_t len;       /* bytes after the prefix */
	const char *name;  /* after the prefix */
};

/* What a set or a remove asks for. */
struct xchange {
	struct xname key;
	bool remove;
	bool absent_ok;    /* removing an absent attribute is not -ENODATA */
	const void *value;
	uint32_t vlen;
	int flags;
	bool set_mode;     /* an ACL change: the mode changes with it */
	uint16_t mode;
};


/* Parses a full attribute name ("user.x", "system.posix_acl_access"):
 * -EOPNOTSUPP for an unknown namespace, -EINVAL/-ERANGE for a bad name. */
int xattr_name_parse(const char *full, struct xname *out);
/* False for the ACL namespaces (nameless, whole names). */
bool xattr_ns_has_name(uint8_t ns);
/* Plans, then applies in one handle (-EEXIST, -ENODATA, -ENOSPC decided
 * before it starts).  inode->lock held exclusively, no handle. */
int xattr_change_locked(struct ordfs *fs, struct inode *inode, const struct xchange *c);
/* getxattr of a parsed name (an ACL in the Linux xattr form).
 * inode->lock held (shared is enough). */
ssize_t xattr_get_locked(struct ordfs *fs, struct inode *inode, const struct xname *k,
			 void *value, size_t size);
/* listxattr: the full names, NUL-terminated, or their size if size is 0.
 * inode->lock held (shared is enough). */
ssize_t xattr_list_locked(struct ordfs *fs, struct inode *inode, char *list, size_t size);


/* Credits of a handle that changes an inode's attributes: the xattr block,
 * the bitmap blocks of allocating or freeing it, the inode. */
uint32_t xattr_credits(struct ordfs *fs);

/* Frees the inode's xattr block, if it has one, under h: clears
 * d.xattr_block, takes the block off d.blocks and writes the inode.  For
 * freeing an unlinked inode (eviction, orphan processing); the caller holds
 * inode->lock exclusively and a handle with xattr_credits() to spare.
 * The block's header (magic, type, block number, owner) must be right, or
 * it is not freed: -EUCLEAN with nothing changed.  Any other error may come
 * after the bitmap changed: the caller must abort the journal then. */
int xattr_free_block_locked(struct ordfs *fs, struct handle *h, struct inode *inode);

/* For the checker: 0 if the inode has no xattr block or its block is sound
 * (as every use verifies it), -EUCLEAN if not, or another negative errno
 * (I/O).  Takes inode->lock shared; call without it.  The checker claims
 * d.xattr_block itself (one block, counted in d.blocks). */
int xattr_verify(struct ordfs *fs, struct inode *inode);
/* xattr_verify, and when the block fails because an ACL value in it is
 * malformed (acl.h), *acl_why (if not NULL) says how; NULL otherwise. */
int xattr_verify_acl(struct ordfs *fs, struct inode *inode, const char **acl_why);

/* ---- the ACL namespaces (nameless: ORDFS_XATTR_NS_POSIX_ACL_*) ----------- */

/* The stored (compact) value of namespace ns, a malloc'd copy, or -ENODATA.
 * inode->lock held, shared or exclusive. */
int xattr_get_ns_locked(struct ordfs *fs, struct inode *inode, uint8_t ns, uint8_t **value,
			uint32_t *len);
/* Replaces the existing value of namespace ns under h (-ENODATA if there is
 * none), for a change the caller makes in the same handle (chmod).
 * inode->lock held exclusively; h has xattr_credits() to spare.  An error
 * before the first change leaves everything as it was; one after it aborts
 * the journal.  Sets ctime and writes the inode. */
int xattr_set_ns_handle(struct ordfs *fs, struct handle *h, struct inode *inode, uint8_t ns,
			const void *value, uint32_t len);

/* A nameless attribute of a new inode. */
struct xattr_ns_value {
	uint8_t ns;
	const void *value;
	uint32_t len;
};
/* 0 if vals (in increasing namespace order) fit one block, else -ENOSPC;
 * before the handle. */
int xattr_new_fits(struct ordfs *fs, const struct xattr_ns_value *vals, unsigned n);
/* Gives a new inode (no attributes yet, not visible to anyone but the
 * caller) its block holding vals, under h with xattr_credits() to spare.
 * The block comes out of one block the caller reserved (alloc_reserve):
 * on success the reservation is used up; on failure the caller still holds
 * it, and nothing changed unless the journal had to be aborted.  Sets
 * d.xattr_block and d.blocks; the caller writes the inode. */
int xattr_init_new_locked(struct ordfs *fs, struct handle *h, struct inode *inode,
			  const struct xattr_ns_value *vals, unsigned n);

#endif
