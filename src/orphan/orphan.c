/*
 * orphan.c - the orphan list on disk and in memory (see orphan.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "fs.h"
#include "inode/inode.h"
#include "orphan.h"
#include "base/ordfs_assert.h"
#include "lock/lock.h"

static int set_orphan_head(struct ordfs *fs, struct handle *h, uint32_t ino)
{
	ordfs_mutex_lock(&fs->sb_lock);
	uint32_t old = fs->sb.orphan_head;
	fs->sb.orphan_head = ino;
	int err = ordfs_write_super_journaled(fs, h);
	if (err)
		fs->sb.orphan_head = old;
	ordfs_mutex_unlock(&fs->sb_lock);
	return err;
}

static void set_next_orphan_field(struct inode *inode, uint32_t next)
{
	ordfs_mutex_lock(&inode->raw_lock);
	inode->d.next_orphan = next;
	ordfs_mutex_unlock(&inode->raw_lock);
}

/* The list in memory agrees with the one on disk at its head. */
static void assert_head_agrees(struct ordfs *fs)
{
	ORDFS_ASSERT(fs->orphan_first ? fs->sb.orphan_head == fs->orphan_first->ino
				      : fs->sb.orphan_head == 0);
}

uint32_t orphan_head(struct ordfs *fs)
{
	ordfs_mutex_lock(&fs->orphan_lock);
	uint32_t ino = fs->sb.orphan_head;
	ordfs_mutex_unlock(&fs->orphan_lock);
	return ino;
}

int orphan_add(struct ordfs *fs, struct handle *h, struct inode *inode)
{
	ordfs_mutex_lock(&fs->orphan_lock);
	ORDFS_ASSERT_CHEAP(!inode->on_orphan_list);
	assert_head_agrees(fs);
	struct inode *first = fs->orphan_first;
	uint32_t old_flags = inode->d.flags;
	set_next_orphan_field(inode, first ? first->ino : 0);
	inode->d.flags |= ORDFS_INODE_ORPHAN;
	int err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	if (!err)
		err = set_orphan_head(fs, h, inode->ino);
	if (err) {
		set_next_orphan_field(inode, 0);
		inode->d.flags = old_flags;
	} else {
		inode->orphan_prev = NULL;
		inode->orphan_next = first;
		if (first)
			first->orphan_prev = inode;
		fs->orphan_first = inode;
		__atomic_store_n(&inode->on_orphan_list, true, __ATOMIC_RELEASE);
		__atomic_store_n(&fs->orphan_count, fs->orphan_count + 1, __ATOMIC_RELEASE);
	}
	ordfs_mutex_unlock(&fs->orphan_lock);
	return err;
}

uint32_t orphan_count(struct ordfs *fs)
{
	return __atomic_load_n(&fs->orphan_count, __ATOMIC_ACQUIRE);
}

int orphan_remove(struct ordfs *fs, struct handle *h, struct inode *inode)
{
	int err = 0;

	ordfs_mutex_lock(&fs->orphan_lock);
	if (inode->on_orphan_list) {
		struct inode *prev = inode->orphan_prev, *next = inode->orphan_next;
		uint32_t next_ino = next ? next->ino : 0;
		ORDFS_ASSERT(inode->d.next_orphan == next_ino);
		ORDFS_ASSERT(prev ? prev->orphan_next == inode : fs->orphan_first == inode);
		if (prev)
			err = inode_write_next_orphan(fs, h, prev, next_ino);
		else
			err = set_orphan_head(fs, h, next_ino);
		if (!err) {
			if (prev)
				prev->orphan_next = next;
			else
				fs->orphan_first = next;
			if (next)
				next->orphan_prev = prev;
			inode->orphan_prev = inode->orphan_next = NULL;
			__atomic_store_n(&inode->on_orphan_list, false, __ATOMIC_RELEASE);
			ORDFS_ASSERT_CHEAP(fs->orphan_count > 0);
			__atomic_store_n(&fs->orphan_count, fs->orphan_count - 1, __ATOMIC_RELEASE);
		}
		assert_head_agrees(fs);
	}
	if (!err) {
		set_next_orphan_field(inode, 0);
		inode->d.flags &= ~ORDFS_INODE_ORPHAN;
	}
	ordfs_mutex_unlock(&fs->orphan_lock);
	return err;
}

int orphan_list_load(struct ordfs *fs, struct inode ***out, uint32_t *count)
{
	uint32_t n = 0, cap = 0;
	struct inode **held = NULL, *tail = NULL;
	int err = 0;

	ordfs_mutex_lock(&fs->orphan_lock);
	ORDFS_ASSERT_CHEAP(fs->orphan_first == NULL);
	for (uint32_t ino = fs->sb.orphan_head; ino;) {
		if (n >= fs->sb.inode_count) {
			err = -EUCLEAN; /* longer than there are inodes: a loop */
			break;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct inode **grown = realloc(held, cap * sizeof(*held));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			held = grown;
		}
		struct inode *inode;
		err = inode_get(fs, ino, &inode);
		if (err) {
			if (err == -ENOENT)
				err = -EUCLEAN; /* a free inode on the list */
			break;
		}
		if (inode->on_orphan_list) {
			inode_put_flags(fs, inode, INODE_PUT_NO_EVICT);
			err = -EUCLEAN; /* named twice: a loop */
			break;
		}
		held[n++] = inode;
		inode->orphan_prev = tail;
		inode->orphan_next = NULL;
		if (tail)
			tail->orphan_next = inode;
		else
			fs->orphan_first = inode;
		tail = inode;
		__atomic_store_n(&inode->on_orphan_list, true, __ATOMIC_RELEASE);
		__atomic_store_n(&fs->orphan_count, fs->orphan_count + 1, __ATOMIC_RELEASE);
		ino = inode->d.next_orphan;
	}
	if (err) {
		/* Forget the partial list; the mount fails and frees the cache. */
		for (uint32_t i = 0; i < n; i++) {
			held[i]->orphan_prev = held[i]->orphan_next = NULL;
			__atomic_store_n(&held[i]->on_orphan_list, false, __ATOMIC_RELEASE);
		}
		fs->orphan_first = NULL;
		__atomic_store_n(&fs->orphan_count, 0, __ATOMIC_RELEASE);
	}
	ordfs_mutex_unlock(&fs->orphan_lock);
	if (err) {
		for (uint32_t i = 0; i < n; i++)
			inode_put_flags(fs, held[i], INODE_PUT_NO_EVICT);
		free(held);
		return err;
	}
	*out = held;
	*count = n;
	return 0;
}
