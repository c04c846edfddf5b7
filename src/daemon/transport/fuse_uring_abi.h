/*
 * fuse_uring_abi.h - the parts of the FUSE kernel interface that the
 * daemon's io_uring transport (transport/uring_pool.c) and the transport
 * probe (bench/uring_probe/) need and that Debian 12's <linux/fuse.h>
 * (protocol 7.38) lacks: the FUSE_INIT_EXT flag (7.36) and
 * FUSE-over-io_uring (7.42, Linux 6.14).
 *
 * Written for this program from the kernel's interface as documented in
 * include/uapi/linux/fuse.h and Documentation/filesystems/fuse-io-uring.rst
 * (names and values are the ABI and must match).  Every definition is
 * guarded, so a newer <linux/fuse.h> that has them wins; the static
 * assertions below check the sizes either way.
 */
#ifndef ORDFS_FUSE_URING_ABI_H
#define ORDFS_FUSE_URING_ABI_H

#include <linux/fuse.h>
#include <stdint.h>

/* INIT flag: the init_in/init_out flags2 words are valid (7.36). */
#ifndef FUSE_INIT_EXT
#define FUSE_INIT_EXT (1u << 30)
#endif

/*
 * INIT flag bit 41, i.e. bit 9 of flags2: the server answers requests
 * through io_uring commands on the /dev/fuse file.  The kernel offers it in
 * init_in only while /sys/module/fuse/parameters/enable_uring is on.
 */
#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING (1ull << 41)
#endif

#ifndef FUSE_URING_IN_OUT_HEADER_SZ
/* Sizes of the two header areas at the start of a ring entry's header
 * buffer. */
#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ 128

/* The kernel's and the server's per-request words in the header buffer. */
struct fuse_uring_ent_in_out {
	uint64_t flags;
	/* kernel -> server: the id to quote in COMMIT_AND_FETCH */
	uint64_t commit_id;
	/* both ways: bytes used in the payload buffer */
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

/*
 * The header buffer (iovec 0 of a REGISTER): fuse_in_header on the way in
 * and fuse_out_header on the way out share in_out; op_in holds the
 * request's first argument (the opcode's fixed header, e.g. fuse_read_in;
 * nothing for LOOKUP or UNLINK); the rest of the arguments (names, write
 * data) and the whole reply (all output arguments) go in the payload
 * buffer (iovec 1).
 */
struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ];
	char op_in[FUSE_URING_OP_IN_OUT_SZ];
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

/* sqe->cmd_op of an IORING_OP_URING_CMD on the /dev/fuse file. */
enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	/* hand an entry (header + payload buffers) to the kernel; completes
	 * when a request is in it */
	FUSE_IO_URING_CMD_REGISTER = 1,
	/* the reply to commit_id is in the entry; completes with the next
	 * request in it */
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* In the SQE's 80-byte command area (IORING_SETUP_SQE128). */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
#endif

_Static_assert(sizeof(struct fuse_uring_ent_in_out) == 32, "fuse_uring_ent_in_out is 32 bytes");
_Static_assert(sizeof(struct fuse_uring_req_header) == 288, "fuse_uring_req_header is 288 bytes");
_Static_assert(sizeof(struct fuse_uring_cmd_req) == 24, "fuse_uring_cmd_req is 24 bytes");
_Static_assert(sizeof(struct fuse_uring_cmd_req) <= 80, "the SQE128 command area has 80 bytes");
_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header is 40 bytes");
_Static_assert(sizeof(struct fuse_init_in) == 64, "fuse_init_in has flags2 (7.36)");
_Static_assert(sizeof(struct fuse_init_out) == 64, "fuse_init_out has flags2 (7.36)");

#endif
