/*
 * extents.c - where one inode's blocks are, read straight from an ordfs
 * image (a file, or an NBD URI through libnbd), independently of the
 * project's code: only docs/FORMAT.md's layout is used.
 *
 * Built by bench/scale/run at run time (cc -O2 ... -lnbd).  FUSE has no
 * FIEMAP, so filefrag cannot show this through the mount, and dump.ordfs
 * prints no per-inode map.  Run it on an unmounted (clean) image.
 *
 *   extents IMAGE INODE
 *
 * prints one line of key=value pairs: the filesystem's block_count and
 * data_start, the inode's size, the extent tree's depth (the root's depth
 * field: 0 = all extents in the inode), the number of tree blocks per
 * level, the number of extents (leaf records), the data blocks they map,
 * the lowest and highest physical block mapped, and the highest block as
 * a fraction of block_count.  For a directory also the root of its
 * B+tree: leaf or index, its records, and how many blocks a lookup reads
 * (the index levels + the leaf).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

static int fd = -1;
static struct nbd_handle *nbd;

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static void fail(const char *what)
{
	fprintf(stderr, "extents: %s\n", what);
	exit(1);
}

static void read_at(void *buf, size_t len, uint64_t off)
{
	if (nbd) {
		if (nbd_pread(nbd, buf, len, off, 0) != 0)
			fail(nbd_get_error());
		return;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n <= 0)
			fail(n == 0 ? "short read" : strerror(errno));
		done += (size_t)n;
	}
}

enum { MAX_DEPTH = 16, NODE_MAGIC = 0xf30a, HDR = 24, NODE_HDR = 8, REC = 24 };

static uint32_t bs;
static uint64_t nodes_at[MAX_DEPTH + 1];
static uint64_t extents, mapped, unwritten, pmin = UINT64_MAX, pmax, lmax;
static uint64_t first_pblk; /* physical block of logical block 0, 0 = unmapped */

/* Walks the node at p (node header first); depth_expected guards loops. */
static void walk(const uint8_t *p, unsigned depth_expected, uint8_t *scratch_levels)
{
	if (get16(p) != NODE_MAGIC)
		fail("bad extent node magic");
	unsigned entries = get16(p + 2), depth = get16(p + 6);
	if (depth != depth_expected || depth > MAX_DEPTH)
		fail("bad extent node depth");
	nodes_at[depth]++;
	for (unsigned i = 0; i < entries; i++) {
		const uint8_t *r = p + NODE_HDR + (size_t)i * REC;
		if (depth == 0) {
			uint64_t l = get64(r), pb = get64(r + 8);
			uint32_t len = get32(r + 16), flags = get32(r + 20);
			extents++;
			if (l == 0)
				first_pblk = pb;
			mapped += len;
			if (flags & 1)
				unwritten += len;
			if (pb < pmin)
				pmin = pb;
			if (pb + len - 1 > pmax)
				pmax = pb + len - 1;
			if (l + len - 1 > lmax)
				lmax = l + len - 1;
		} else {
			uint8_t *blk = scratch_levels + (size_t)(depth - 1) * bs;
			read_at(blk, bs, get64(r + 8) * bs);
			walk(blk + HDR, depth - 1, scratch_levels);
		}
	}
}

/* A directory's B+tree: logical block 0 is its root (FORMAT.md,
 * "Directories"); a lookup reads one block per level down to a leaf. */
static void print_dir_root(uint8_t *blk, uint64_t pblk)
{
	read_at(blk, bs, pblk * bs);
	unsigned type = get16(blk + 4), count = get16(blk + 24), level = get16(blk + 26);
	if (type == 5)
		printf(" dir_root=index dir_root_records=%u dir_lookup_blocks=%u", count, level + 1);
	else if (type == 4)
		printf(" dir_root=leaf dir_root_records=%u dir_lookup_blocks=1", count);
	else
		printf(" dir_root=type%u", type);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: extents IMAGE INODE\n");
		return 2;
	}
	if (strncmp(argv[1], "nbd", 3) == 0) {
		nbd = nbd_create();
		if (!nbd || nbd_connect_uri(nbd, argv[1]) != 0)
			fail(nbd_get_error());
	} else if ((fd = open(argv[1], O_RDONLY)) < 0) {
		fail(strerror(errno));
	}
	uint8_t sb[512];
	read_at(sb, sizeof(sb), 0);
	if (get32(sb) != 0x5344524f)
		fail("not an ordfs image (superblock magic)");
	bs = 1u << get32(sb + 20);
	uint64_t block_count = get64(sb + 24), table = get64(sb + 80), data_start = get64(sb + 88);
	uint32_t inode_count = get32(sb + 32);
	uint32_t ino = (uint32_t)strtoul(argv[2], NULL, 0);
	if (ino < 1 || ino > inode_count)
		fail("inode number out of range");

	uint8_t inode[256];
	uint64_t per_block = bs / 256;
	read_at(inode, sizeof(inode), (table + (ino - 1) / per_block) * bs + (ino - 1) % per_block * 256);
	if (get16(inode) == 0)
		fail("inode is free");
	uint8_t *scratch = malloc((size_t)bs * MAX_DEPTH);
	if (!scratch)
		fail("out of memory");
	unsigned depth = get16(inode + 112 + 6);
	walk(inode + 112, depth, scratch);

	printf("ino=%u block_size=%u block_count=%" PRIu64 " data_start=%" PRIu64
	       " size=%" PRIu64 " depth=%u",
	       ino, bs, block_count, data_start, get64(inode + 16), depth);
	for (unsigned d = depth; d-- > 0;)
		printf(" blocks_level%u=%" PRIu64, d, nodes_at[d]);
	printf(" extents=%" PRIu64 " mapped=%" PRIu64 " unwritten=%" PRIu64, extents, mapped,
	       unwritten);
	if (extents)
		printf(" pmin=%" PRIu64 " pmax=%" PRIu64 " pmax_frac=%.6f lmax=%" PRIu64, pmin,
		       pmax, (double)pmax / (double)block_count, lmax);
	if ((get16(inode) & 0170000) == 0040000 && first_pblk)
		print_dir_root(scratch, first_pblk);
	printf("\n");
	free(scratch);
	if (nbd) {
		nbd_shutdown(nbd, 0);
		nbd_close(nbd);
	}
	return 0;
}
