/*
 * acl.h - POSIX access control lists (system.posix_acl_access and
 * system.posix_acl_default), with Linux's (and ext4's) rules.
 *
 * Owns: the three forms of an ACL and the rules that tie an ACL to the
 * inode's mode:
 *  - the Linux xattr form, which setfacl/getfacl and the kernel exchange
 *    through the xattr calls: le32 version (2), then 8-byte entries
 *    (le16 tag, le16 perm, le32 id), in the order USER_OBJ, USER..., GROUP_OBJ,
 *    GROUP..., MASK, OTHER;
 *  - the compact form stored as the value of an ORDFS_XATTR_NS_POSIX_ACL_*
 *    entry in the xattr block (FORMAT.md, "ACL values"; declared here, the
 *    one place in code):
 *
 *      off size field
 *        0  1  version, ACL_DISK_VERSION (1)
 *        1  1  mask perm, or ACL_DISK_NO_MASK (0xff)
 *        2  1  user_obj perm
 *        3  1  group_obj perm
 *        4  1  other perm
 *        5  1  reserved, zero
 *        6  2  U, named-user entries
 *        8  2  G, named-group entries
 *       10     U entries then G entries, 5 bytes each: le32 id, u8 perm;
 *              ids strictly increasing within each list, never 0xffffffff
 *      length exactly 10 + 5 * (U + G); a perm is 0..7; a mask is
 *      required when U + G > 0, and always in an access ACL (one without
 *      a mask says no more than the mode and is never stored);
 *
 *  - struct acl, the canonical in-memory form both decode to.
 *
 * Rules:
 *  - Values from a caller (Linux form) are validated as Linux's
 *    posix_acl_from_xattr + posix_acl_valid do, and more strictly: named
 *    entries sorted by id without duplicates.  -EOPNOTSUPP for a version
 *    other than 2, -EINVAL for anything else malformed.  A header with no
 *    entries (or an empty value) means "no ACL", as on Linux.
 *  - Stored values are untrusted: acl_disk_problem() checks every field
 *    before anything is used, and the xattr block verifier calls it on
 *    every use (a malformed value makes the block -EUCLEAN).
 *  - An access ACL that says no more than the mode is never stored (as
 *    Linux's posix_acl_update_mode); its USER_OBJ, MASK (or GROUP_OBJ) and
 *    OTHER always equal the mode's permission bits: setting it sets the
 *    mode, chmod rewrites them, in the same handle.
 *  - Default ACLs only on directories; no ACL at all on symlinks.
 *  - Permission evaluation is Linux's acl_permission_check with
 *    posix_acl_permission, including its shortcut: an inode whose group
 *    bits (the mask) are all zero is judged by its mode alone.
 */
#ifndef ORDFS_ACL_H
#define ORDFS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ordfs;
struct handle;
struct inode;
struct ordfs_cred;

/* ---- the compact on-disk form ------------------------------------------- */

#define ACL_DISK_VERSION 1u
#define ACL_DISK_HDR 10u
#define ACL_DISK_ENTRY 5u
#define ACL_DISK_NO_MASK 0xffu

/* ---- the Linux xattr form (<linux/posix_acl_xattr.h>) ------------------- */

#define ACL_XATTR_VERSION 2u
#define ACL_XATTR_HDR 4u
#define ACL_XATTR_ENTRY 8u
#define ACL_UNDEFINED_ID 0xffffffffu

enum acl_tag {
	ACL_TAG_USER_OBJ = 0x01,
	ACL_TAG_USER = 0x02,
	ACL_TAG_GROUP_OBJ = 0x04,
	ACL_TAG_GROUP = 0x08,
	ACL_TAG_MASK = 0x10,
	ACL_TAG_OTHER = 0x20,
};

/* want bits of a permission check (R_OK, W_OK, X_OK; Linux's MAY_*). */
#define ACL_READ 4u
#define ACL_WRITE 2u
#define ACL_EXECUTE 1u

/* ---- the in-memory form --------------------------------------------------- */

struct acl_named {
	uint32_t id;
	uint8_t perm;
};

/* An ACL in canonical order.  named[0..nusers) are the named users,
 * named[nusers..nusers+ngroups) the named groups, each strictly increasing
 * by id.  has_mask is true whenever there are named entries. */
struct acl {
	uint8_t user_obj, group_obj, other, mask;
	bool has_mask;
	uint32_t nusers, ngroups;
	struct acl_named named[];
};

/* A new ACL with room for n named entries (counts zero), or NULL. */
struct acl *acl_alloc(uint32_t n);
struct acl *acl_dup(const struct acl *acl);
void acl_free(struct acl *acl);

/* Linux form -> struct acl.  *out is NULL for "no ACL" (size 0 or a
 * header without entries).  -EINVAL, -EOPNOTSUPP, -ENOMEM. */
int acl_from_xattr(const void *value, size_t size, struct acl **out);
/* struct acl -> Linux form: the length; the bytes are written to buf
 * unless size is 0; -ERANGE if size is too small. */
ssize_t acl_to_xattr(const struct acl *acl, void *buf, size_t size);

/* What is wrong with a stored value of namespace ns (4 or 5) on an inode
 * of this mode, or NULL. */
const char *acl_disk_problem(uint8_t ns, uint16_t mode, const uint8_t *value, size_t len);
/* Compact form -> struct acl (checked: -EUCLEAN if malformed). */
int acl_from_disk(const uint8_t *value, size_t len, struct acl **out);
size_t acl_disk_size(const struct acl *acl);
void acl_to_disk(const struct acl *acl, uint8_t *out);
/* The compact form in a malloc'd buffer (*out, *len). */
int acl_encode_disk(const struct acl *acl, uint8_t **out, uint32_t *len);

/* ---- the rules between an ACL and the mode (pure) ------------------------- */

/* Sets the permission bits of *mode from the ACL (USER_OBJ, MASK or
 * GROUP_OBJ, OTHER); true if the mode says everything the ACL says (no
 * mask, no named entries), so no ACL needs storing. */
bool acl_equiv_mode(const struct acl *acl, uint16_t *mode);
/* chmod: USER_OBJ, MASK (or GROUP_OBJ without a mask) and OTHER from the
 * new mode's permission bits. */
void acl_chmod(struct acl *acl, uint16_t mode);
/* A new inode's access ACL from its directory's default ACL (a copy the
 * caller owns): the create mode limits USER_OBJ, MASK (or GROUP_OBJ) and
 * OTHER, and the ACL limits the mode's permission bits in turn.  True if
 * the result still needs storing (not equivalent to the mode). */
bool acl_create_masq(struct acl *acl, uint16_t *mode);

/* posix_acl_permission: may a caller with fsuid uid, fsgid gid and
 * supplementary groups (groups may be NULL when ngroups is 0) have `want`
 * (ACL_READ | ACL_WRITE | ACL_EXECUTE) on an inode owned by owner_uid /
 * owner_gid?  0 or -EACCES. */
int acl_permission(const struct acl *acl, uint32_t owner_uid, uint32_t owner_gid, uint32_t uid,
		   uint32_t gid, const uint32_t *groups, uint32_t ngroups, unsigned want);

/* ---- an inode's ACLs (inode->lock held by the caller) --------------------- */

/* The inode's ACL of namespace ns, or *out NULL if it has none. */
int acl_get_locked(struct ordfs *fs, struct inode *inode, uint8_t ns, struct acl **out);

/* What a new inode gets from its directory (posix_acl_create). */
struct acl_inherit {
	uint16_t mode;          /* the new inode's mode */
	uint8_t *access;        /* compact values to store (malloc'd), or NULL */
	uint32_t access_len;
	uint8_t *def;
	uint32_t def_len;
};
/* For a new inode of `mode` in dir (dir->lock held): with a default ACL on
 * dir the inode inherits (the umask is not applied; directories also take
 * the default ACL itself), without one mode loses the umask bits.  Symlinks
 * get neither.  Free with acl_inherit_release. */
int acl_inherit_prepare(struct ordfs *fs, struct inode *dir, uint16_t mode, uint32_t umask,
			struct acl_inherit *out);
void acl_inherit_release(struct acl_inherit *ai);
/* True if the new inode has ACLs to store. */
bool acl_inherit_any(const struct acl_inherit *ai);

/* chmod: the inode's access ACL rewritten for new_mode (compact form,
 * malloc'd, same length as before), or *out NULL if it has none.
 * inode->lock held. */
int acl_chmod_prepare(struct ordfs *fs, struct inode *inode, uint16_t new_mode, uint8_t **out,
		      uint32_t *len);

/* setxattr/removexattr of an ACL (value NULL: remove), decided before the
 * handle: what to store and the mode afterwards. */
struct acl_set_plan {
	bool remove;        /* no attribute afterwards (absent is fine) */
	uint8_t *disk;      /* else the compact value (malloc'd) */
	uint32_t disk_len;
	uint16_t mode;      /* the inode's mode afterwards */
};
/* Linux's set_posix_acl for an inode of `mode`: -EOPNOTSUPP on symlinks,
 * -EACCES for a default ACL on a non-directory (removing one is a no-op),
 * the Linux form's errors. */
int acl_plan_set(uint8_t ns, uint16_t mode, const void *value, size_t size,
		 struct acl_set_plan *out);
void acl_plan_release(struct acl_set_plan *p);
/* in_group_p: is id the caller's gid or one of its groups? */
bool acl_in_group(uint32_t id, uint32_t gid, const uint32_t *groups, uint32_t ngroups);
struct ordfs_caller;
/* in_group_or_capable: may caller keep set-group-ID on a file of group gid
 * it changes (in that group, or holding CAP_FSETID)?  Linux's rule for
 * setting an access ACL and for writes (setattr_should_drop_sgid). */
bool acl_keeps_setgid(const struct ordfs_caller *caller, uint32_t gid);

/* getxattr of an ACL: the stored compact value in Linux form, with
 * getxattr's size rules (0 asks for the length, -ERANGE). */
ssize_t acl_disk_to_xattr(const uint8_t *disk, size_t len, void *buf, size_t size);

#endif
