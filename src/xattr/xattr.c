/*
 * xattr.c - the extended attribute block (xattr.h): the steps of
 * setxattr, getxattr, listxattr and removexattr (file/xattr.c takes the
 * locks and retries), and what create, chmod, eviction and the checker
 * need.
 *
 * Owns: each inode's one ORDFS_BT_XATTR block.  Layout (format.h), after
 * the 24-byte common header (owner = the inode):
 *
 *   off size field
 *    24  2  count     entries in the block, >= 1
 *    26  2  used      bytes of the entry area in use, a multiple of 4
 *    28  4  reserved  zero
 *    32     entries, back to back; the rest of the area is written as
 *           zeros (not checked when read)
 *
 *   entry: 0 u8 namespace (ORDFS_XATTR_NS_*), 1 u8 name length, 2 u16 value
 *   length, 4 the name without its prefix, then the value, zero-padded to a
 *   multiple of 4 bytes.  The two ACL namespaces have no name (length 0),
 *   the others 1..255 bytes without NUL.
 *
 *   Order: by namespace, then by name bytes (memcmp over the shorter name,
 *   a name before its extensions), strictly increasing: no duplicates.
 *
 * Rules kept:
 *  - The block exists exactly while the inode has an attribute: the first
 *    set allocates it (alloc_blocks, charged to d.blocks), removing the last
 *    attribute frees it (ALLOC_METADATA: journal_forget, revoke [J6]; the
 *    block is reusable once that free commits [J5]).  A new block never
 *    comes out of the metadata reserve (room_for_new_block).
 *  - Verify on every use, not just on the first read: header, type, block
 *    number, checksum, owner, then the entry structure above; a failure is
 *    -EUCLEAN and nothing is changed, and no field is trusted before it is
 *    bounds-checked.  The live buffer's checksum is recomputed after every
 *    change (the commit computes it again on its copy, JWA_CSUM_HDR), so a
 *    block that is only cached verifies too.
 *  - Prepare, then apply: under the inode lock the block is read, verified
 *    and the new entry area is built in a scratch buffer, so -EEXIST,
 *    -ENODATA and -ENOSPC are decided before the handle starts.  In the
 *    handle, write access (or the new block) comes first; a failure after
 *    the first change aborts the journal rather than commit half of it.
 *  - Locking: the callers hold inode->lock (shared for get and list,
 *    exclusive for set and remove); the steps start their own handles and
 *    nothing here waits for a commit while holding one [J8].
 *  - Attribute changes write the inode without INODE_WRITE_DATASYNC: as on
 *    Linux, fdatasync need not make them durable, fsync does (sync_tid).
 *  - The two ACL namespaces hold acl.h's compact form, checked as part of
 *    the block on every use; a change can set the mode in the same handle
 *    (file/xattr.c says what the system calls do with them).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "xattr.h"
#include "acl.h"
#include "fs.h"
#include "inode/inode.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "cache/bcache.h"
#include "journal/journal.h"
#include "lock/lock.h"

#define XATTR_PAD 4u

/* Name prefixes, indexed by namespace - 1.  The ACL namespaces are whole
 * names ("exact"); the others need at least one byte after the prefix. */
static const struct {
	const char *prefix;
	uint8_t prefix_len;
	bool exact;
} xattr_ns[] = {
	[ORDFS_XATTR_NS_USER - 1] = { "user.", 5, false },
	[ORDFS_XATTR_NS_TRUSTED - 1] = { "trusted.", 8, false },
	[ORDFS_XATTR_NS_SECURITY - 1] = { "security.", 9, false },
	[ORDFS_XATTR_NS_POSIX_ACL_ACCESS - 1] = { "system.posix_acl_access", 23, true },
	[ORDFS_XATTR_NS_POSIX_ACL_DEFAULT - 1] = { "system.posix_acl_default", 24, true },
};
#define XATTR_NS_COUNT (sizeof(xattr_ns) / sizeof(xattr_ns[0]))

/* A decoded entry (pointers into the block). */
struct xentry {
	uint8_t ns;
	uint8_t namelen;
	uint16_t vlen;
	const uint8_t *name;  /* the value follows the name */
};

/* One operation's view of an inode's attributes: its verified block, or
 * none (b == NULL, used == count == 0). */
struct xview {
	struct buf *b;
	const uint8_t *area;
	uint32_t used, count;
};

/* The block's next contents, decided before the handle starts. */
struct xplan {
	bool drop;         /* the last attribute goes: free the block */
	bool keep;         /* the block stays as it is (only the mode changes) */
	uint8_t *area;     /* otherwise the new entry area (scratch) */
	uint32_t used, count;
	bool set_mode;     /* an ACL change: the inode's mode becomes `mode` */
	uint16_t mode;
};

/* ---- names -------------------------------------------------------------- */

static bool ns_known(uint8_t ns)
{
	return ns >= 1 && ns <= XATTR_NS_COUNT;
}

bool xattr_ns_has_name(uint8_t ns)
{
	return !xattr_ns[ns - 1].exact;
}

/* Linux's rules (fs/xattr.c): an empty or too long name is -ERANGE, a
 * known prefix with nothing after it -EINVAL, anything else -EOPNOTSUPP. */
int xattr_name_parse(const char *full, struct xname *out)
{
	if (!full)
		return -EINVAL;
	size_t len = strnlen(full, ORDFS_XATTR_NAME_MAX + 1);
	if (len == 0 || len > ORDFS_XATTR_NAME_MAX)
		return -ERANGE;
	for (uint8_t i = 0; i < XATTR_NS_COUNT; i++) {
		size_t plen = xattr_ns[i].prefix_len;
		if (len < plen || memcmp(full, xattr_ns[i].prefix, plen) != 0)
			continue;
		if (xattr_ns[i].exact && len != plen)
			continue;
		if (!xattr_ns[i].exact && len == plen)
			return -EINVAL;
		out->ns = (uint8_t)(i + 1);
		out->len = (uint8_t)(len - plen);
		out->name = full + plen;
		return 0;
	}
	return -EOPNOTSUPP;
}

/* ---- entries ------------------------------------------------------------ */

static uint32_t xent_size(uint32_t namelen, uint32_t vlen)
{
	return (ORDFS_XATTR_ENTRY_FIXED + namelen + vlen + XATTR_PAD - 1) & ~(XATTR_PAD - 1);
}

static void xent_decode(const uint8_t *p, struct xentry *e)
{
	e->ns = p[0];
	e->namelen = p[1];
	e->vlen = le_get16(p + 2);
	e->name = p + ORDFS_XATTR_ENTRY_FIXED;
}

/* Only for an entry known to lie inside its block. */
static const uint8_t *xent_value(const struct xentry *e)
{
	return e->name + e->namelen;
}

/* Writes an entry and its zero padding; vlen fits (the caller checked). */
static void xent_encode(uint8_t *p, const struct xname *k, const void *value, uint32_t vlen)
{
	uint32_t size = xent_size(k->len, vlen);

	memset(p, 0, size);
	p[0] = k->ns;
	p[1] = k->len;
	le_put16(p + 2, (uint16_t)vlen);
	memcpy(p + ORDFS_XATTR_ENTRY_FIXED, k->name, k->len);
	if (vlen)
		memcpy(p + ORDFS_XATTR_ENTRY_FIXED + k->len, value, vlen);
}

/* Order of (namespace, name) keys: see the top of the file. */
static int xkey_cmp(uint8_t ns_a, const void *a, uint32_t alen, uint8_t ns_b, const void *b,
		    uint32_t blen)
{
	if (ns_a != ns_b)
		return ns_a < ns_b ? -1 : 1;
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* ---- the block ---------------------------------------------------------- */

static uint32_t xarea_capacity(const struct ordfs *fs)
{
	return fs->block_size - ORDFS_XATTR_HDR;
}

/* What is wrong with the payload of an xattr block of an inode of this
 * mode, or NULL.  A malformed ACL value is also reported in *acl_why (if
 * not NULL). */
static const char *xpayload_problem(const uint8_t *blk, uint32_t block_size, uint16_t mode,
				    const char **acl_why)
{
	uint32_t count = le_get16(blk + 24), used = le_get16(blk + 26);
	const uint8_t *area = blk + ORDFS_XATTR_HDR;
	struct xentry prev = { 0 }, e;
	uint32_t n = 0;

	if (le_get32(blk + 28) != 0)
		return "reserved xattr header field is not zero";
	if (count == 0)
		return "xattr block without attributes";
	if (used > block_size - ORDFS_XATTR_HDR || used % XATTR_PAD)
		return "xattr used bytes out of range";
	for (uint32_t pos = 0; pos < used; n++) {
		/* used and pos are multiples of 4, so the fixed part fits */
		xent_decode(area + pos, &e);
		if (!ns_known(e.ns))
			return "xattr entry with an unknown namespace";
		if (xattr_ns_has_name(e.ns) ? e.namelen == 0 : e.namelen != 0)
			return "xattr entry name length wrong for its namespace";
		uint32_t size = xent_size(e.namelen, e.vlen);
		if (size > used - pos)
			return "xattr entry crosses the end of the used area";
		if (memchr(e.name, '\0', e.namelen))
			return "xattr entry name contains NUL";
		if (!xattr_ns_has_name(e.ns)) {
			const char *why = acl_disk_problem(e.ns, mode, xent_value(&e), e.vlen);
			if (why) {
				if (acl_why)
					*acl_why = why;
				return why;
			}
		}
		if (n > 0 && xkey_cmp(prev.ns, prev.name, prev.namelen, e.ns, e.name,
				      e.namelen) >= 0)
			return "xattr entries out of order or duplicated";
		prev = e;
		pos += size;
	}
	if (n != count)
		return "xattr entry count does not match the entries";
	return NULL;
}

static const char *xblock_problem(const struct ordfs *fs, const struct inode *inode,
				  const uint8_t *blk, uint64_t blockno, const char **acl_why)
{
	if (ordfs_block_verify(blk, fs->block_size, fs->csum_seed, ORDFS_BT_XATTR, blockno))
		return "bad xattr block header or checksum";
	if (ordfs_block_owner(blk) != inode->ino)
		return "xattr block owned by another inode";
	return xpayload_problem(blk, fs->block_size, inode->d.mode, acl_why);
}

static bool in_data_area(const struct ordfs *fs, uint64_t blockno)
{
	return blockno >= fs->sb.data_start && blockno < fs->sb.block_count - 1;
}

/* Reads and verifies the inode's block (if any).  inode->lock held.
 * acl_why (may be NULL): see xpayload_problem. */
static int xview_open_why(struct ordfs *fs, struct inode *inode, struct xview *v,
			  const char **acl_why)
{
	uint64_t blockno = inode->d.xattr_block;
	struct buf *b;

	memset(v, 0, sizeof(*v));
	if (blockno == 0)
		return 0;
	if (!in_data_area(fs, blockno) || inode->d.blocks == 0)
		return -EUCLEAN;
	int err = bcache_read(fs->cache, blockno, &b);
	if (err)
		return err;
	if (xblock_problem(fs, inode, b->data, blockno, acl_why)) {
		bcache_put(fs->cache, b);
		return -EUCLEAN;
	}
	v->b = b;
	v->area = b->data + ORDFS_XATTR_HDR;
	v->count = le_get16(b->data + 24);
	v->used = le_get16(b->data + 26);
	return 0;
}

static int xview_open(struct ordfs *fs, struct inode *inode, struct xview *v)
{
	return xview_open_why(fs, inode, v, NULL);
}

static void xview_close(struct ordfs *fs, struct xview *v)
{
	if (v->b)
		bcache_put(fs->cache, v->b);
	v->b = NULL;
}

/* 1 if k is present (*off at its entry), 0 if absent (*off where it would
 * go).  The area was verified, so the walk stays inside it. */
static int xview_find(const struct xview *v, const struct xname *k, uint32_t *off)
{
	uint32_t pos = 0;

	while (pos < v->used) {
		struct xentry e;
		xent_decode(v->area + pos, &e);
		int c = xkey_cmp(k->ns, k->name, k->len, e.ns, e.name, e.namelen);
		if (c == 0) {
			*off = pos;
			return 1;
		}
		if (c < 0)
			break;
		pos += xent_size(e.namelen, e.vlen);
	}
	*off = pos;
	return 0;
}

static uint32_t xview_entry_size(const struct xview *v, uint32_t off)
{
	struct xentry e;
	xent_decode(v->area + off, &e);
	return xent_size(e.namelen, e.vlen);
}

/* ---- planning ----------------------------------------------------------- */

/* The new area: the old one with [off, off + old) replaced by `add` bytes
 * written by the caller. */
static int plan_splice(const struct ordfs *fs, const struct xview *v, uint32_t off,
		       uint32_t old, uint32_t add, struct xplan *p)
{
	p->area = calloc(1, xarea_capacity(fs));
	if (!p->area)
		return -ENOMEM;
	if (off)
		memcpy(p->area, v->area, off);
	uint32_t tail = v->used - off - old;
	if (tail)
		memcpy(p->area + off + add, v->area + off + old, tail);
	p->used = v->used - old + add;
	return 0;
}

/* A new xattr block may not come out of the metadata reserve: that is
 * sized for the extent-tree blocks writeback of accepted data needs, and
 * xattr blocks (one per inode) are not bounded by it.  So, as ext4 keeps
 * its reserved clusters from xattr blocks, a first attribute needs a block
 * that delayed data could still have reserved.  A check, not a claim: a
 * race may let a few blocks through, never more than concurrent setters. */
static bool room_for_new_block(struct ordfs *fs)
{
	struct alloc_counts c;
	alloc_get_counts(fs->alloc, &c);
	return c.data_blocks > 0;
}

static int plan_set(struct ordfs *fs, const struct xview *v, const struct xname *k,
		    const void *value, uint32_t vlen, int flags, struct xplan *p)
{
	uint32_t off, old = 0;
	int found = xview_find(v, k, &off);

	if (found && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!found && (flags & XATTR_REPLACE))
		return -ENODATA;
	if (found)
		old = xview_entry_size(v, off);
	uint32_t add = xent_size(k->len, vlen), cap = xarea_capacity(fs);
	if (add > cap || v->used - old > cap - add)
		return -ENOSPC; /* all of an inode's attributes share one block */
	if (!v->b && !room_for_new_block(fs))
		return -ENOSPC;
	int err = plan_splice(fs, v, off, old, add, p);
	if (err)
		return err;
	xent_encode(p->area + off, k, value, vlen);
	p->count = v->count + (found ? 0u : 1u);
	return 0;
}

static int plan_remove(const struct ordfs *fs, const struct xview *v, const struct xname *k,
		       struct xplan *p)
{
	uint32_t off;

	if (!xview_find(v, k, &off))
		return -ENODATA;
	if (v->count == 1) {
		p->drop = true;
		return 0;
	}
	p->count = v->count - 1;
	return plan_splice(fs, v, off, xview_entry_size(v, off), 0, p);
}

/* ---- applying ----------------------------------------------------------- */

/* Gives back a block allocated in this handle that never joined the
 * transaction (a later step failed): its bit is cleared again and the
 * claim dropped, so nothing of it can commit. */
static void xblock_unallocate(struct ordfs *fs, struct handle *h, uint64_t blockno,
			      unsigned alloc_flags)
{
	int err = alloc_unmark_blocks(fs->alloc, h, blockno, 1);
	if (err) {
		journal_abort_half_done(fs->journal, err);
		return; /* the claim stays: the block is not handed out again */
	}
	alloc_unclaim_blocks(fs->alloc, blockno, 1, alloc_flags);
}

/* A new xattr block for inode, joined to h with its header set.
 * alloc_flags: 0, or ALLOC_FROM_RESERVATION (given back on failure). */
static int xblock_new(struct ordfs *fs, struct handle *h, struct inode *inode,
		      unsigned alloc_flags, struct buf **out)
{
	uint64_t blockno;
	uint32_t got;
	struct buf *b;

	int err = alloc_blocks(fs->alloc, h, 0, 1, alloc_flags, &blockno, &got);
	if (err)
		return err;
	err = bcache_get_new(fs->cache, blockno, &b);
	if (err) {
		xblock_unallocate(fs, h, blockno, alloc_flags);
		return err;
	}
	err = journal_get_write_access(h, b, JWA_CSUM_HDR);
	if (err) {
		bcache_put(fs->cache, b);
		xblock_unallocate(fs, h, blockno, alloc_flags);
		return err;
	}
	ordfs_block_hdr_init(b->data, ORDFS_BT_XATTR, inode->ino, blockno);
	*out = b;
	return 0;
}

/* Copies the planned area into the block (write access held). */
static void xblock_fill(struct ordfs *fs, uint8_t *blk, const struct xplan *p)
{
	le_put16(blk + 24, (uint16_t)p->count);
	le_put16(blk + 26, (uint16_t)p->used);
	le_put32(blk + 28, 0);
	memcpy(blk + ORDFS_XATTR_HDR, p->area, p->used);
	memset(blk + ORDFS_XATTR_HDR + p->used, 0, xarea_capacity(fs) - p->used);
	ordfs_block_csum_set(blk, fs->block_size, fs->csum_seed);
}

/* The inode after its attributes changed: ctime, and the mode an ACL
 * change brings (which fdatasync, as after chmod, waits for). */
static int write_changed_inode(struct ordfs *fs, struct handle *h, struct inode *inode,
			       const struct xplan *p)
{
	unsigned flags = 0;
	if (p->set_mode && p->mode != inode->d.mode) {
		inode->d.mode = p->mode;
		flags = INODE_WRITE_DATASYNC;
	}
	inode->d.ctime = ordfs_now();
	int err = inode_write(fs, h, inode, flags);
	return err ? journal_abort_half_done(fs->journal, err) : 0;
}

/* The last attribute went: free the block, uncharge it. */
static int apply_drop(struct ordfs *fs, struct handle *h, struct inode *inode,
		      const struct xplan *p)
{
	int err = alloc_free_blocks(fs->alloc, h, inode->d.xattr_block, 1, ALLOC_METADATA);
	if (err)
		return err == -EUCLEAN ? err : journal_abort_half_done(fs->journal, err);
	inode->d.xattr_block = 0;
	inode->d.blocks--;
	return write_changed_inode(fs, h, inode, p);
}

static int apply_plan(struct ordfs *fs, struct handle *h, struct inode *inode,
		      const struct xview *v, const struct xplan *p)
{
	struct buf *b = v->b;
	int err;

	if (p->drop)
		return apply_drop(fs, h, inode, p);
	if (p->keep)
		return write_changed_inode(fs, h, inode, p);
	if (b) {
		err = journal_get_write_access(h, b, JWA_CSUM_HDR);
		if (err)
			return err;
	} else {
		err = xblock_new(fs, h, inode, 0, &b);
		if (err)
			return err;
		inode->d.xattr_block = b->blockno;
		inode->d.blocks++;
	}
	xblock_fill(fs, b->data, p);
	if (b != v->b)
		bcache_put(fs->cache, b);
	return write_changed_inode(fs, h, inode, p);
}

/* Plans, then applies in one handle.  inode->lock held exclusively. */
int xattr_change_locked(struct ordfs *fs, struct inode *inode, const struct xchange *c)
{
	struct xview v;
	struct xplan p = { 0 };
	struct handle *h;

	int err = xview_open(fs, inode, &v);
	if (err)
		return err;
	if (c->remove)
		err = v.b ? plan_remove(fs, &v, &c->key, &p) : -ENODATA;
	else
		err = plan_set(fs, &v, &c->key, c->value, c->vlen, c->flags, &p);
	if (err == -ENODATA && c->absent_ok) {
		err = 0;
		p.keep = true;
	}
	p.set_mode = c->set_mode;
	p.mode = c->mode;
	if (!err && p.keep && !(c->set_mode && c->mode != inode->d.mode)) {
		xview_close(fs, &v);
		return 0; /* nothing to change */
	}
	if (!err)
		err = journal_start(fs->journal, xattr_credits(fs), &h);
	if (!err) {
		err = apply_plan(fs, h, inode, &v, &p);
		int serr = journal_stop(h);
		if (!err)
			err = serr;
	}
	free(p.area);
	xview_close(fs, &v);
	return err;
}

uint32_t xattr_credits(struct ordfs *fs)
{
	return 1 + alloc_credits(fs->alloc, 1) + INODE_WRITE_CREDITS;
}

ssize_t xattr_get_locked(struct ordfs *fs, struct inode *inode, const struct xname *k,
			 void *value, size_t size)
{
	struct xview v;
	uint32_t off;

	int err = xview_open(fs, inode, &v);
	if (err)
		return err;
	ssize_t r = -ENODATA;
	if (v.b && xview_find(&v, k, &off)) {
		struct xentry e;
		xent_decode(v.area + off, &e);
		r = e.vlen;
		if (!xattr_ns_has_name(k->ns))
			r = acl_disk_to_xattr(xent_value(&e), e.vlen, value, size);
		else if (size && size < e.vlen)
			r = -ERANGE;
		else if (size && e.vlen)
			memcpy(value, xent_value(&e), e.vlen);
	}
	xview_close(fs, &v);
	return r;
}

/* Bytes the full names take in a listxattr buffer, or copies them there. */
static size_t xview_list(const struct xview *v, char *out)
{
	size_t total = 0;

	for (uint32_t pos = 0; pos < v->used;) {
		struct xentry e;
		xent_decode(v->area + pos, &e);
		size_t plen = xattr_ns[e.ns - 1].prefix_len;
		if (out) {
			memcpy(out + total, xattr_ns[e.ns - 1].prefix, plen);
			memcpy(out + total + plen, e.name, e.namelen);
			out[total + plen + e.namelen] = '\0';
		}
		total += plen + e.namelen + 1;
		pos += xent_size(e.namelen, e.vlen);
	}
	return total;
}

ssize_t xattr_list_locked(struct ordfs *fs, struct inode *inode, char *list, size_t size)
{
	struct xview v;
	ssize_t r = xview_open(fs, inode, &v);
	if (r == 0) {
		size_t total = xview_list(&v, NULL);
		if (size && size < total)
			r = -ERANGE;
		else if (size)
			r = (ssize_t)xview_list(&v, list);
		else
			r = (ssize_t)total;
		xview_close(fs, &v);
	}
	return r;
}

/* ---- eviction and the checker (xattr.h) --------------------------------- */

int xattr_free_block_locked(struct ordfs *fs, struct handle *h, struct inode *inode)
{
	uint64_t blockno = inode->d.xattr_block;
	struct buf *b;

	if (blockno == 0)
		return 0;
	if (!in_data_area(fs, blockno))
		return -EUCLEAN;
	int err = bcache_read(fs->cache, blockno, &b);
	if (err)
		return err;
	/* Only the header: a block whose contents are damaged is still ours
	 * to free, one that another inode (or nothing) owns is not. */
	const uint8_t *blk = b->data;
	bool ours = le_get32(blk) == ORDFS_BLOCK_MAGIC && le_get16(blk + 4) == ORDFS_BT_XATTR &&
		    le_get64(blk + 16) == blockno && ordfs_block_owner(blk) == inode->ino;
	bcache_put(fs->cache, b);
	if (!ours)
		return -EUCLEAN;
	err = alloc_free_blocks(fs->alloc, h, blockno, 1, ALLOC_METADATA);
	if (err)
		return err;
	inode->d.xattr_block = 0;
	if (inode->d.blocks)
		inode->d.blocks--;
	return inode_write(fs, h, inode, 0);
}

int xattr_verify_acl(struct ordfs *fs, struct inode *inode, const char **acl_why)
{
	struct xview v;

	if (acl_why)
		*acl_why = NULL;
	ordfs_rwlock_rdlock(&inode->lock);
	int err = xview_open_why(fs, inode, &v, acl_why);
	if (!err)
		xview_close(fs, &v);
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}

int xattr_verify(struct ordfs *fs, struct inode *inode)
{
	return xattr_verify_acl(fs, inode, NULL);
}

/* ---- the ACL namespaces, for acl_inode.c, namei/ and file/ (xattr.h) -------- */

int xattr_get_ns_locked(struct ordfs *fs, struct inode *inode, uint8_t ns, uint8_t **value,
			uint32_t *len)
{
	struct xview v;
	struct xname k = { .ns = ns, .len = 0, .name = "" };
	uint32_t off;

	*value = NULL;
	*len = 0;
	if (!ns_known(ns) || xattr_ns_has_name(ns))
		return -EINVAL;
	int err = xview_open(fs, inode, &v);
	if (err)
		return err;
	err = -ENODATA;
	if (v.b && xview_find(&v, &k, &off)) {
		struct xentry e;
		xent_decode(v.area + off, &e);
		*value = malloc(e.vlen ? e.vlen : 1);
		err = *value ? 0 : -ENOMEM;
		if (!err) {
			memcpy(*value, xent_value(&e), e.vlen);
			*len = e.vlen;
		}
	}
	xview_close(fs, &v);
	return err;
}

int xattr_set_ns_handle(struct ordfs *fs, struct handle *h, struct inode *inode, uint8_t ns,
			const void *value, uint32_t len)
{
	struct xview v;
	struct xplan p = { 0 };
	struct xname k = { .ns = ns, .len = 0, .name = "" };

	if (!ns_known(ns) || xattr_ns_has_name(ns))
		return -EINVAL;
	int err = xview_open(fs, inode, &v);
	if (err)
		return err;
	if (!v.b)
		err = -ENODATA; /* a new block would need planning for space */
	else
		err = plan_set(fs, &v, &k, value, len, XATTR_REPLACE, &p);
	if (!err)
		err = apply_plan(fs, h, inode, &v, &p);
	free(p.area);
	xview_close(fs, &v);
	return err;
}

/* The entry area of a new inode's block holding vals, or -ENOSPC. */
static int new_area(struct ordfs *fs, const struct xattr_ns_value *vals, unsigned n,
		    struct xplan *p)
{
	uint32_t cap = xarea_capacity(fs), used = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!ns_known(vals[i].ns) || xattr_ns_has_name(vals[i].ns) ||
		    (i > 0 && vals[i - 1].ns >= vals[i].ns))
			return -EINVAL;
		uint32_t size = xent_size(0, vals[i].len);
		if (vals[i].len > ORDFS_XATTR_SIZE_MAX || size > cap - used)
			return -ENOSPC;
		used += size;
	}
	if (!p)
		return 0;
	p->area = calloc(1, cap);
	if (!p->area)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct xname k = { .ns = vals[i].ns, .len = 0, .name = "" };
		xent_encode(p->area + p->used, &k, vals[i].value, vals[i].len);
		p->used += xent_size(0, vals[i].len);
		p->count++;
	}
	return 0;
}

int xattr_new_fits(struct ordfs *fs, const struct xattr_ns_value *vals, unsigned n)
{
	return new_area(fs, vals, n, NULL);
}

int xattr_init_new_locked(struct ordfs *fs, struct handle *h, struct inode *inode,
			  const struct xattr_ns_value *vals, unsigned n)
{
	struct xplan p = { 0 };
	struct buf *b;

	if (inode->d.xattr_block)
		return -EEXIST;
	int err = new_area(fs, vals, n, &p);
	if (!err)
		err = xblock_new(fs, h, inode, ALLOC_FROM_RESERVATION, &b);
	if (!err) {
		xblock_fill(fs, b->data, &p);
		inode->d.xattr_block = b->blockno;
		inode->d.blocks++;
		bcache_put(fs->cache, b);
	}
	free(p.area);
	return err;
}
