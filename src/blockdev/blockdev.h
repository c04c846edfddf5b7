/*
 * blockdev.h - the one interface through which all image I/O goes.
 *
 * Owns: the block device vtable and its backends:
 *   - file:   a regular file or block device (pread/pwrite/fdatasync);
 *   - mem:    an in-memory image for unit tests;
 *   - record: a wrapper that counts reads, writes and flushes, can log every
 *             write and flush, and can hold a flush on a latch so a test can
 *             check what proceeds while the disk is "busy";
 *   - overlay: a copy-on-write view that keeps writes in memory and never
 *             touches what it wraps (fsck -n replays into one);
 *   - nbd:    an export of an NBD server, through libnbd (nbd.c);
 *   - hostsim: a host filesystem of a given size under an image (tests of a
 *             sparse image on a host that fills up, hostsim.c).
 *
 * A sparse image file (struct blockdev.sparse) also answers for the host
 * filesystem that holds it (hostfs.h): where its holes are, host space
 * allocated ahead of writes (so a full host is an ENOSPC of the one asking
 * for the space, never of a later write or flush), and whether the host
 * is full.
 *
 * Rules:
 *  - Offsets and lengths are in bytes; callers do whole-block I/O, but the
 *    interface does not assume it (torn-write tests need sectors).
 *  - read/write transfer everything or fail: 0 or a negative errno.  Reading
 *    past the end of the device is -EIO, never a short read.
 *  - flush makes every completed write durable (a barrier) or fails.
 *  - All functions are thread-safe; backends do their own locking.
 *  - The size only grows while a device is open, and only through
 *    blockdev_refresh_size: it is read with blockdev_size() (an atomic
 *    load), never as bd->size, and set once at open before the device is
 *    shared, then only by blockdev_grow_size().  A device grows after what
 *    it wraps, so a wrapper's size is never past its inner device's: every
 *    byte below a device's size is readable and writable through it.
 *
 * Design: docs/design/README.md (the layers), flush.md (the flush guard),
 * allocation.md (the host of a sparse image), nbd.md.
 */
#ifndef ORDFS_BLOCKDEV_H
#define ORDFS_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>

struct blockdev;
struct blockdev_host;

struct blockdev_ops {
	int (*read)(struct blockdev *bd, void *buf, size_t len, uint64_t off);
	int (*write)(struct blockdev *bd, const void *buf, size_t len, uint64_t off);
	int (*flush)(struct blockdev *bd);
	void (*destroy)(struct blockdev *bd);
	/* Optional: the bytes [off, off + len) are no longer needed; reads of
	 * them may return zeros from now on (a hole in an image file, a
	 * BLKDISCARD on a device).  NULL: not supported. */
	int (*discard)(struct blockdev *bd, uint64_t off, uint64_t len);
	/* Optional: a write that is durable when it returns (Force Unit
	 * Access), without making other writes durable.  Only set where the
	 * device does it natively (struct blockdev.fua). */
	int (*write_fua)(struct blockdev *bd, const void *buf, size_t len, uint64_t off);
	/* Optional: [off, off + len) reads as zeros from now on, without
	 * sending the zeros (a hole punched in a file, BLKZEROOUT, NBD
	 * WRITE_ZEROES).  Not durable until a flush, like a write. */
	int (*write_zeroes)(struct blockdev *bd, uint64_t off, uint64_t len);
	/* Optional: the first offset >= off that may hold data; everything
	 * in [off, that) reads as zeros (SEEK_DATA in an image file). */
	uint64_t (*next_data)(struct blockdev *bd, uint64_t off);
	/* Optional (sparse devices): the first offset >= off that lies in a
	 * hole, or the size (SEEK_HOLE).  Space allocated ahead of writes
	 * (allocate) may read as a hole: the host answers for written data. */
	uint64_t (*next_hole)(struct blockdev *bd, uint64_t off);
	/* Optional (sparse devices): the host gives [off, off + len) its space
	 * now, without changing a byte (fallocate FALLOC_FL_KEEP_SIZE), so
	 * writes there need no new host space.  -ENOSPC when the host has
	 * none. */
	int (*allocate)(struct blockdev *bd, uint64_t off, uint64_t len);
	/* Optional (sparse devices): the host filesystem (struct
	 * blockdev_host); with fresh, statfs/fstat now, else what is cached. */
	int (*host)(struct blockdev *bd, struct blockdev_host *out, bool fresh);
	/* Optional (sparse devices): the filesystem refused space because the
	 * host has none left for it: as an ENOSPC from the host (hostfs.h). */
	void (*host_refused)(struct blockdev *bd);
	/* Optional: blockdev_refresh_size's work.  A backend asks its device
	 * and, where it grew, makes the added bytes usable first and then
	 * raises the size (blockdev_grow_size); a wrapper refreshes what it
	 * wraps and then takes that device's size.  *size: the size found.
	 * NULL: -EOPNOTSUPP (the backend cannot tell: mem). */
	int (*refresh_size)(struct blockdev *bd, uint64_t *size);
};

struct blockdev {
	const struct blockdev_ops *ops;
	/* Bytes.  Read it with blockdev_size(): it grows under readers
	 * (blockdev_refresh_size). */
	uint64_t size;
	/* write_fua is native and cheaper than a write and a flush (an NBD
	 * server that offers FUA); wrappers copy it from what they wrap. */
	bool fua;
	/* Set by blockdev_fence: every write, flush and discard fails. */
	bool fenced;
	/* An image file on a host filesystem that keeps holes: next_hole,
	 * allocate and host work; wrappers copy it from what they wrap. */
	bool sparse;
};

/* The host filesystem holding a sparse image (hostfs.h decides `full`). */
struct blockdev_host {
	const char *image;        /* the image's absolute path (the device's
				     own string, valid while it is open) */
	uint64_t image_size;      /* bytes the image claims (its size) */
	uint64_t image_allocated; /* bytes the host holds for it (st_blocks) */
	uint64_t host_size;       /* the host filesystem's size, bytes */
	uint64_t host_free;       /* its space for unprivileged writers (f_bavail) */
	/* "The host is full": an ENOSPC from it in the last
	 * HOSTFS_ENOSPC_MEMORY_S seconds, or less free than
	 * hostfs_full_threshold(host_size). */
	bool full;
	bool enospc_recent;       /* the first of those */
};

/* The device's size in bytes now (it only grows while open: see
 * blockdev_refresh_size).  Safe from any thread.  Acquire, paired with
 * blockdev_grow_size's release: a thread that sees the new size also sees
 * what the backend set up for the added bytes before raising it (NBD: the
 * connection that serves them), so an offset checked against it is one
 * the device serves. */
static inline uint64_t blockdev_size(const struct blockdev *bd)
{
	return __atomic_load_n(&bd->size, __ATOMIC_ACQUIRE);
}

/* Asks the device for its size now (an image file extended on the host, a
 * block device or NBD export resized) and, if it grew, makes the added
 * bytes readable and writable through bd and every wrapper above it.
 * *size: the size bd has afterwards.  The size never shrinks while open:
 * a device found smaller than bd's size is -EUCLEAN with nothing changed
 * (someone cut the image under a mounted filesystem).  -EOPNOTSUPP where
 * the backend cannot tell (mem: its size is fixed).  Thread-safe against
 * concurrent reads and writes. */
int blockdev_refresh_size(struct blockdev *bd, uint64_t *size);

/* For backends (refresh_size): raises bd's size to size if that is more
 * (atomically: concurrent raises keep the largest), with a release store
 * made after the backend readied the added bytes.  Returns the size bd has
 * afterwards.  Never lowers it. */
uint64_t blockdev_grow_size(struct blockdev *bd, uint64_t size);

/* From now on nothing more is written to bd, through any wrapper: writes,
 * flushes and discards fail with -EROFS (another writer owns the image). */
static inline void blockdev_fence(struct blockdev *bd)
{
	__atomic_store_n(&bd->fenced, true, __ATOMIC_RELEASE);
}

static inline bool blockdev_fenced(struct blockdev *bd)
{
	return __atomic_load_n(&bd->fenced, __ATOMIC_ACQUIRE);
}

static inline int blockdev_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	return bd->ops->read(bd, buf, len, off);
}

static inline int blockdev_write(struct blockdev *bd, const void *buf, size_t len,
				 uint64_t off)
{
	return blockdev_fenced(bd) ? -EROFS : bd->ops->write(bd, buf, len, off);
}

static inline int blockdev_flush(struct blockdev *bd)
{
	return blockdev_fenced(bd) ? -EROFS : bd->ops->flush(bd);
}

/* -EOPNOTSUPP where the backend cannot discard. */
static inline int blockdev_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	if (blockdev_fenced(bd))
		return -EROFS;
	return bd->ops->discard ? bd->ops->discard(bd, off, len) : -EOPNOTSUPP;
}

/* The first offset >= off that may hold data: [off, result) is known to
 * read as zeros.  off itself where the device cannot tell. */
static inline uint64_t blockdev_next_data(struct blockdev *bd, uint64_t off)
{
	return bd->ops->next_data && off < blockdev_size(bd) ? bd->ops->next_data(bd, off) : off;
}

/* The first offset >= off in a hole: [off, result) may hold data.  The
 * size where the device cannot tell (no holes known). */
static inline uint64_t blockdev_next_hole(struct blockdev *bd, uint64_t off)
{
	uint64_t size = blockdev_size(bd);
	if (off >= size)
		return size;
	return bd->ops->next_hole ? bd->ops->next_hole(bd, off) : size;
}

/* Host space for [off, off + len) now (sparse devices): 0, -ENOSPC when
 * the host has none, -EOPNOTSUPP where the device has no host. */
static inline int blockdev_allocate(struct blockdev *bd, uint64_t off, uint64_t len)
{
	if (blockdev_fenced(bd))
		return -EROFS;
	return bd->ops->allocate ? bd->ops->allocate(bd, off, len) : -EOPNOTSUPP;
}

/* The host filesystem of a sparse image: 0, or -EOPNOTSUPP for a device
 * without one.  Without fresh it costs no system call (hostfs.h: statfs
 * at most once a second). */
static inline int blockdev_host(struct blockdev *bd, struct blockdev_host *out, bool fresh)
{
	return bd->ops->host ? bd->ops->host(bd, out, fresh) : -EOPNOTSUPP;
}

/* The filesystem answered ENOSPC because the host of a sparse image has
 * no room left (not the device: it was not asked): counts as an ENOSPC
 * from the host (the episode's log line, "full"). */
static inline void blockdev_host_refused(struct blockdev *bd)
{
	if (bd->ops->host_refused)
		bd->ops->host_refused(bd);
}

/* Is the host filesystem of a sparse image full?  false for other devices. */
static inline bool blockdev_host_full(struct blockdev *bd)
{
	struct blockdev_host h;
	return bd->sparse && blockdev_host(bd, &h, false) == 0 && h.full;
}

/* Makes [off, off + len) read as zeros: the device's own way where it has
 * one, else by writing zeros. */
int blockdev_write_zeroes(struct blockdev *bd, uint64_t off, uint64_t len);

/* Writes and makes that write durable: FUA where the device has it, else
 * a write and a flush. */
static inline int blockdev_write_fua(struct blockdev *bd, const void *buf, size_t len,
				     uint64_t off)
{
	if (blockdev_fenced(bd))
		return -EROFS;
	if (bd->fua && bd->ops->write_fua)
		return bd->ops->write_fua(bd, buf, len, off);
	int err = blockdev_write(bd, buf, len, off);
	return err ? err : blockdev_flush(bd);
}

/* Closes the backend (a record wrapper does not close what it wraps). */
static inline void blockdev_destroy(struct blockdev *bd)
{
	if (bd)
		bd->ops->destroy(bd);
}

/* ---- file backend ----------------------------------------------------- */

#define BLOCKDEV_READONLY 0x1u
/* Start the host's writeback of every write at once (sync_file_range
 * SYNC_FILE_RANGE_WRITE): written data does not pile up dirty in the host
 * page cache, so a flush (fdatasync) has only the last writes to wait
 * for, not everything a heavy writer left there; a writer faster than the
 * disk is held back at its own writes.  Durability still needs a flush. */
#define BLOCKDEV_WRITE_BEHIND 0x2u
/* Writes of at least BLOCKDEV_DIRECT_MIN bytes with buffer, offset and
 * length aligned to BLOCKDEV_DIRECT_ALIGN bypass the host page cache
 * (O_DIRECT): bulk file data goes to the disk as it is written instead of
 * lying dirty in the host page cache, where a flush (fdatasync) for
 * somebody's commit would have to wait for all of it.  Smaller writes
 * (metadata, the log, small data) stay buffered.  Falls back to buffered
 * writes where the host refuses O_DIRECT. */
#define BLOCKDEV_DIRECT_BULK 0x4u
#define BLOCKDEV_DIRECT_MIN (64u << 10)
#define BLOCKDEV_DIRECT_ALIGN 4096u
/* A device that cannot flush is accepted (nobarrier): flush is a no-op.
 * Without it, opening such a device fails with -EOPNOTSUPP (NBD). */
#define BLOCKDEV_NO_FLUSH_OK 0x8u
/* Do not use FUA even where the device offers it (NBD: -o nofua). */
#define BLOCKDEV_NO_FUA 0x10u

/* Opens an image file or block device.  Returns 0 or a negative errno.
 * blockdev_refresh_size asks fstat (a file) or BLKGETSIZE64 (a device). */
int blockdev_file_open(const char *path, unsigned flags, struct blockdev **out);
/* The file descriptor, for fallocate. */
int blockdev_file_fd(struct blockdev *bd);
/* The host's lock on an image file (flock(2) with op, LOCK_NB implied):
 * 0, -EWOULDBLOCK while another holds it, or -errno.  0 for a device no
 * host lock reaches (NBD): the owner record (super/owner.h) excludes
 * other users there. */
int blockdev_host_lock(struct blockdev *bd, int op);

/* ---- NBD backend (nbd.c) ---------------------------------------------- */

#define BLOCKDEV_NBD_DEFAULT_TIMEOUT_MS 30000u

/* Is name an NBD URI (nbd://, nbds://, nbd+unix://, nbd+vsock:// ...)? */
bool blockdev_is_nbd_uri(const char *name);
/* Connects to the export named by uri (libnbd's URI syntax).  flags:
 * BLOCKDEV_READONLY, BLOCKDEV_NO_FLUSH_OK, BLOCKDEV_NO_FUA.  A request the server does not
 * answer within timeout_ms (0: the default), or that finds no connection
 * for that long, fails with -EIO.  On failure *why holds one line.
 * blockdev_refresh_size opens a new connection (a server tells the size
 * at the handshake only) and, if the export grew, moves the device to it
 * without failing a request (nbd.c); -EIO when no connection can be made
 * or the server now offers less than at open (read-only, no flush, FUA,
 * trim or zero it had, a smaller request size). */
int blockdev_nbd_open(const char *uri, unsigned flags, unsigned timeout_ms,
		      struct blockdev **out, char *why, size_t why_len);
bool blockdev_is_nbd(const struct blockdev *bd);
struct blockdev_nbd_info {
	bool can_flush, can_fua, can_trim;
	bool connected;
	uint64_t reconnects;
};
void blockdev_nbd_info(struct blockdev *bd, struct blockdev_nbd_info *out);

/* ---- any image by name (open.c) --------------------------------------- */

/* Opens an image: an NBD URI, else a file or block device path.  flags as
 * for the backends (the file-only ones are ignored for NBD).  On failure
 * *why holds one line (the errno's text for files). */
int blockdev_open_image(const char *name, unsigned flags, unsigned nbd_timeout_ms,
			struct blockdev **out, char *why, size_t why_len);

/* ---- memory backend --------------------------------------------------- */

/* A fixed size: blockdev_refresh_size is -EOPNOTSUPP. */
int blockdev_mem_create(uint64_t size, struct blockdev **out);
/* Wraps a copy of existing image bytes. */
int blockdev_mem_from(const void *image, uint64_t size, struct blockdev **out);
/* Direct access to the bytes (tests only: corrupt, compare, snapshot). */
uint8_t *blockdev_mem_bytes(struct blockdev *bd);

/* ---- copy-on-write overlay --------------------------------------------- */

/* Wraps base (not owned): reads see base with the overlay's writes on top;
 * writes stay in memory, per block of block_size; flush is a no-op.  A
 * size refresh refreshes base and takes its size. */
int blockdev_overlay_create(struct blockdev *base, uint32_t block_size, struct blockdev **out);
/* Blocks written through the overlay so far. */
uint64_t blockdev_overlay_blocks(struct blockdev *bd);

/* ---- a simulated host filesystem (hostsim.c, tests) ------------------- */

/* Wraps inner (not owned) as an image file on a host filesystem of
 * capacity bytes that backs the image in 4 KiB pages: a page holding a
 * non-zero byte of inner now is backed; a write into unbacked pages backs
 * them, or fails with -ENOSPC (writing nothing) when the host has no room
 * left; allocate backs pages without data; discard and write_zeroes
 * unback whole pages.  next_data/next_hole see written pages as data
 * (allocated but unwritten pages are holes, as on tmpfs and ext4).  The
 * device is sparse: host() reports the model, with hostfs.h's rules.
 * Its lock is a leaf (never held over a call to inner): stack it above
 * wrappers that hold theirs over calls down (the recording device).  A
 * size refresh refreshes inner; the pages added are unbacked (a hole). */
int blockdev_hostsim_create(struct blockdev *inner, uint64_t capacity, struct blockdev **out);
void blockdev_hostsim_set_capacity(struct blockdev *bd, uint64_t capacity);
struct blockdev_hostsim_counts {
	uint64_t backed_bytes;   /* host space the image holds now */
	uint64_t enospc;         /* writes and allocations refused */
	uint64_t write_enospc;   /* of them, writes (a write that needed new
				    host space it did not get) */
	uint64_t allocate_calls; /* allocate requests */
	uint64_t punched_bytes;  /* given back by discard / write_zeroes */
};
void blockdev_hostsim_counts(struct blockdev *bd, struct blockdev_hostsim_counts *out);
/* Is the 4 KiB page holding byte off backed? */
bool blockdev_hostsim_backed(struct blockdev *bd, uint64_t off);

/* ---- recording wrapper ------------------------------------------------ */

/* BD_EV_MARK: a label the workload put in the log (blockdev_record_mark):
 * data holds the NUL-terminated text, len its length. */
enum blockdev_event_type { BD_EV_WRITE, BD_EV_FLUSH, BD_EV_MARK };

struct blockdev_event {
	enum blockdev_event_type type;
	uint64_t off;
	size_t len;
	uint8_t *data; /* copy of the written bytes (writes only) */
};

struct blockdev_counts {
	uint64_t reads, writes, flushes, discards;
	uint64_t bytes_read, bytes_written;
	uint64_t fua_writes; /* of the writes, those with FUA (set_fua) */
};

/* Wraps `inner` (not owned).  With log_writes, every write and flush is kept
 * in an event log readable with blockdev_record_events().  A size refresh
 * refreshes inner and takes its size (not counted or logged). */
int blockdev_record_create(struct blockdev *inner, bool log_writes, struct blockdev **out);

/* Also appends every write, flush and mark to fd (owned from now on) as it
 * happens, in device order; with log_writes off, only there.  Format, per
 * event, little-endian: u32 BLOCKDEV_STREAM_MAGIC, u32 type
 * (blockdev_event_type), u64 offset, u64 length, then length bytes (the
 * data written, or a mark's text).  A process killed mid-event leaves a
 * short last event, which readers drop. */
#define BLOCKDEV_STREAM_MAGIC 0x474f4c43u /* "CLOG" */
#define BLOCKDEV_STREAM_HDR 24u
int blockdev_record_stream(struct blockdev *bd, int fd);
void blockdev_record_counts(struct blockdev *bd, struct blockdev_counts *out);
/* With on, the device offers FUA (struct blockdev.fua), as an NBD server
 * may: a FUA write is counted, written, and made durable by a flush of the
 * inner device that is neither counted nor logged.  The event log does not
 * model it (a test of flush counts only; wrappers made after see it). */
void blockdev_record_set_fua(struct blockdev *bd, bool on);
void blockdev_record_reset_counts(struct blockdev *bd);
/* The event log; valid until the next write or flush or destroy. */
const struct blockdev_event *blockdev_record_events(struct blockdev *bd, size_t *count);
void blockdev_record_clear_events(struct blockdev *bd);
/* Puts label in the event log between the writes before and after it
 * ("fsync of f returned"); nothing without log_writes. */
int blockdev_record_mark(struct blockdev *bd, const char *label);

/* Latch: while armed, every flush blocks before reaching the inner device
 * until the latch is released.  wait_blocked waits until at least n flushes
 * are blocked on it (returns 0, or -ETIMEDOUT after timeout_ms). */
void blockdev_record_latch_arm(struct blockdev *bd);
void blockdev_record_latch_release(struct blockdev *bd);
int blockdev_record_latch_wait_blocked(struct blockdev *bd, unsigned n, unsigned timeout_ms);

/* Latch controlled from outside the process (mounted tests): every flush
 * waits while the file at path exists. */
int blockdev_record_latch_file(struct blockdev *bd, const char *path);

/* Fault injection, deterministic by count: the nth write (or flush) from
 * now (1 = the next one) fails with err; nth 0 disarms.  A persistent
 * fault breaks the device: from then on every write and flush fails with
 * err until blockdev_record_heal().  A failed write writes nothing. */
struct blockdev_fault {
	uint64_t nth;
	int err;          /* negative errno */
	bool persistent;
};
void blockdev_record_fault(struct blockdev *bd, enum blockdev_event_type op,
			   const struct blockdev_fault *f);
/* Transient shorthands. */
void blockdev_record_fail_write(struct blockdev *bd, uint64_t nth, int err);
void blockdev_record_fail_flush(struct blockdev *bd, uint64_t nth, int err);
/* Disarms both faults and repairs a broken device. */
void blockdev_record_heal(struct blockdev *bd);
uint64_t blockdev_record_faults_fired(struct blockdev *bd);
/* With on, a failing flush also loses every write since the last
 * successful flush: the bytes they overwrote come back. */
void blockdev_record_drop_unflushed(struct blockdev *bd, bool on);
/* With drop_unflushed on: loses every write since the last successful
 * flush now, as a power cut would. */
void blockdev_record_power_cut(struct blockdev *bd);

#endif
