/*
 * owner.c - the owner record: claim, heartbeat, release (owner.h says the
 * rules).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "owner.h"
#include "../blockdev/blockdev.h"
#include "../format/format.h"
#include "../base/ordfs_assert.h"
#include "../lock/lock.h"

struct owner_claim {
	struct blockdev *bd;      /* where the heartbeat writes */
	struct ordfs_owner rec;   /* what we wrote last */
	uint8_t before[ORDFS_OWNER_SIZE]; /* the sector before the claim */
	struct owner_opts opts;
	struct ordfs_mutex mu;    /* LOCK_OWNER: the fields below */
	pthread_cond_t cv;
	pthread_t thread;
	bool running, stopping, lost;
	bool paused;              /* owner_pause: the heartbeat waits for owner_resume */
};

bool owner_record_fits(uint64_t dev_size, uint64_t block_count, uint32_t block_size)
{
	if (dev_size < ORDFS_OWNER_SIZE || block_count == 0)
		return false;
	uint64_t backup_end = (block_count - 1) * (uint64_t)block_size + ORDFS_SB_SIZE;
	return dev_size - ORDFS_OWNER_SIZE >= backup_end;
}

static uint64_t record_off(const struct blockdev *bd)
{
	return blockdev_size(bd) - ORDFS_OWNER_SIZE;
}

/* 0 with *valid false for a sector that holds no record. */
static int read_record(struct blockdev *bd, struct ordfs_owner *rec, bool *valid)
{
	uint8_t raw[ORDFS_OWNER_SIZE];
	int err = blockdev_read(bd, raw, sizeof(raw), record_off(bd));
	if (err)
		return err;
	*valid = ordfs_owner_decode(raw, rec) == 0;
	return 0;
}

static int write_record(struct blockdev *bd, const struct ordfs_owner *rec)
{
	uint8_t raw[ORDFS_OWNER_SIZE];
	ordfs_owner_encode(rec, raw);
	return blockdev_write(bd, raw, sizeof(raw), record_off(bd));
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void describe(const struct ordfs_owner *rec, char *why, size_t why_len)
{
	snprintf(why, why_len, "%s (pid %u on %s, heartbeat %llu s ago)",
		 rec->program[0] ? rec->program : "an unknown program", rec->pid,
		 rec->host[0] ? rec->host : "an unknown host",
		 (unsigned long long)((uint64_t)time(NULL) > rec->time
					      ? (uint64_t)time(NULL) - rec->time : 0));
}

static void my_host(char host[ORDFS_OWNER_HOST_LEN + 1])
{
	memset(host, 0, ORDFS_OWNER_HOST_LEN + 1);
	if (gethostname(host, ORDFS_OWNER_HOST_LEN) != 0)
		strcpy(host, "?");
	host[ORDFS_OWNER_HOST_LEN] = '\0';
}

/* Does pid name a process of this host that has not exited (a zombie,
 * killed but not yet reaped, has)? */
static bool process_runs(pid_t pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true; /* no /proc: kill() said it exists */
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')'. */
	const char *paren = strrchr(buf, ')');
	return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

/* Is the record's holder a process of this host (one whose pid can be
 * checked)? */
static bool held_here(const struct ordfs_owner *rec)
{
	char host[ORDFS_OWNER_HOST_LEN + 1];
	my_host(host);
	return strcmp(host, rec->host) == 0 && rec->pid != 0;
}

/* Is a held record's holder alive?  A holder on this host is checked by
 * its pid; any other by watching its heartbeat.  *rec becomes the record
 * as read last. */
static int holder_alive(struct blockdev *bd, struct ordfs_owner *rec, bool *alive)
{
	if (held_here(rec) && !process_runs((pid_t)rec->pid)) {
		*alive = false;
		return 0;
	}
	unsigned interval = rec->interval_ms ? rec->interval_ms : OWNER_DEFAULT_INTERVAL_MS;
	if (interval > OWNER_MAX_INTERVAL_MS)
		interval = OWNER_MAX_INTERVAL_MS;
	sleep_ms(2 * interval + 1000);
	struct ordfs_owner again;
	bool valid;
	int err = read_record(bd, &again, &valid);
	if (err)
		return err;
	*alive = !valid || again.state != rec->state || again.seq != rec->seq ||
		 again.nonce != rec->nonce;
	if (valid)
		*rec = again; /* the holder as it is now, for the message */
	return 0;
}

int owner_claim(struct blockdev *bd, const struct owner_opts *opts, struct owner_claim **out,
		char *why, size_t why_len)
{
	struct ordfs_owner rec;
	bool valid;
	uint8_t before[ORDFS_OWNER_SIZE];
	int err = blockdev_read(bd, before, sizeof(before), record_off(bd));
	if (!err)
		err = read_record(bd, &rec, &valid);
	if (err) {
		snprintf(why, why_len, "cannot read the owner record: %s", strerror(-err));
		return err;
	}
	if (valid && rec.state == ORDFS_OWNER_HELD) {
		bool alive = true;
		err = holder_alive(bd, &rec, &alive);
		if (err) {
			snprintf(why, why_len, "cannot read the owner record: %s", strerror(-err));
			return err;
		}
		if (alive) {
			char who[200];
			describe(&rec, who, sizeof(who));
			snprintf(why, why_len, "image is in use by %s", who);
			return -EBUSY;
		}
	}

	struct owner_claim *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	c->opts = *opts;
	memcpy(c->before, before, sizeof(before));
	if (!c->opts.interval_ms)
		c->opts.interval_ms = OWNER_DEFAULT_INTERVAL_MS;
	if (c->opts.interval_ms > OWNER_MAX_INTERVAL_MS)
		c->opts.interval_ms = OWNER_MAX_INTERVAL_MS;
	c->bd = bd;
	c->rec.state = ORDFS_OWNER_HELD;
	if (getrandom(&c->rec.nonce, sizeof(c->rec.nonce), 0) != sizeof(c->rec.nonce))
		c->rec.nonce = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c->rec.seq = (valid ? rec.seq : 0) + 1;
	c->rec.pid = (uint32_t)getpid();
	c->rec.interval_ms = c->opts.interval_ms;
	c->rec.time = (uint64_t)time(NULL);
	snprintf(c->rec.program, sizeof(c->rec.program), "%s", opts->program);
	my_host(c->rec.host);
	ordfs_mutex_init(&c->mu, LOCK_OWNER, "owner record heartbeat lock");
	pthread_cond_init(&c->cv, NULL);

	err = write_record(bd, &c->rec);
	if (!err)
		err = blockdev_flush(bd);
	if (!err && c->opts.settle_ms) {
		sleep_ms(c->opts.settle_ms);
		err = read_record(bd, &rec, &valid);
		if (!err && (!valid || rec.nonce != c->rec.nonce)) {
			char who[200];
			if (valid)
				describe(&rec, who, sizeof(who));
			snprintf(why, why_len, "image is in use by %s (claimed at the same time)",
				 valid ? who : "another claimer");
			owner_abandon(c);
			return -EBUSY;
		}
	}
	if (err) {
		snprintf(why, why_len, "cannot write the owner record: %s", strerror(-err));
		owner_abandon(c);
		return err;
	}
	*out = c;
	return 0;
}

static void *heartbeat_main(void *arg)
{
	struct owner_claim *c = arg;
	ordfs_mutex_lock(&c->mu);
	while (!c->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += c->opts.interval_ms / 1000u;
		ts.tv_nsec += (long)(c->opts.interval_ms % 1000u) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		ordfs_cond_timedwait(&c->cv, &c->mu, &ts);
		if (c->stopping)
			break;
		ordfs_mutex_unlock(&c->mu);

		struct ordfs_owner rec;
		bool valid;
		bool lost = false;
		if (read_record(c->bd, &rec, &valid) == 0) {
			if (valid && rec.nonce == c->rec.nonce && rec.state == ORDFS_OWNER_HELD) {
				c->rec.seq++;
				c->rec.time = (uint64_t)time(NULL);
				(void)write_record(c->bd, &c->rec); /* a failure: next round */
			} else {
				lost = true;
			}
		}

		ordfs_mutex_lock(&c->mu);
		if (lost) {
			c->lost = true;
			ordfs_mutex_unlock(&c->mu);
			if (c->opts.lost)
				c->opts.lost(c->opts.lost_ctx);
			ordfs_mutex_lock(&c->mu);
			break;
		}
	}
	ordfs_mutex_unlock(&c->mu);
	return NULL;
}

void owner_set_device(struct owner_claim *c, struct blockdev *bd)
{
	if (!c)
		return;
	ORDFS_ASSERT(!c->running);
	c->bd = bd;
}

int owner_start(struct owner_claim *c)
{
	ORDFS_ASSERT(c->bd && !c->running);
	/* After a fork the holder is this process: say so at once (the parent
	 * that claimed exits, and a dead pid on this host is a stale claim). */
	if (c->rec.pid != (uint32_t)getpid()) {
		c->rec.pid = (uint32_t)getpid();
		c->rec.seq++;
		c->rec.time = (uint64_t)time(NULL);
		int err = write_record(c->bd, &c->rec);
		if (!err)
			err = blockdev_flush(c->bd);
		if (err)
			return err;
	}
	c->stopping = false;
	if (pthread_create(&c->thread, NULL, heartbeat_main, c) != 0)
		return -EAGAIN;
	c->running = true;
	return 0;
}

static void stop(struct owner_claim *c)
{
	if (!c->running)
		return;
	ordfs_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->cv);
	ordfs_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	c->running = false;
}

void owner_pause(struct owner_claim *c)
{
	if (!c || !c->running)
		return;
	stop(c);
	c->paused = true;
}

int owner_resume(struct owner_claim *c)
{
	if (!c || !c->paused)
		return 0;
	c->paused = false;
	if (c->lost) /* another claimer's record: never written over */
		return -EBUSY;
	c->rec.seq++;
	c->rec.time = (uint64_t)time(NULL);
	int err = write_record(c->bd, &c->rec);
	if (!err)
		err = blockdev_flush(c->bd);
	/* The heartbeat runs again whatever happened: where the record could
	 * not be written at the new end it finds none there and calls `lost`,
	 * as for any record it cannot prove is ours.  Without a heartbeat
	 * (no thread) the claim would lapse unseen: lost now. */
	int e2 = owner_start(c);
	if (e2) {
		c->lost = true;
		if (c->opts.lost)
			c->opts.lost(c->opts.lost_ctx);
	}
	return err ? err : e2;
}

void owner_abandon(struct owner_claim *c)
{
	if (!c)
		return;
	stop(c);
	pthread_cond_destroy(&c->cv);
	ordfs_mutex_destroy(&c->mu);
	free(c);
}

/* Stops the heartbeat and, if the record is still ours (not lost to
 * another claimer), writes sector over it and flushes; frees c. */
static void finish(struct owner_claim *c, const uint8_t sector[ORDFS_OWNER_SIZE])
{
	stop(c);
	struct ordfs_owner rec;
	bool valid;
	if (!c->lost && c->bd && read_record(c->bd, &rec, &valid) == 0 && valid &&
	    rec.nonce == c->rec.nonce &&
	    blockdev_write(c->bd, sector, ORDFS_OWNER_SIZE, record_off(c->bd)) == 0)
		(void)blockdev_flush(c->bd);
	owner_abandon(c);
}

void owner_release(struct owner_claim *c)
{
	if (!c)
		return;
	uint8_t raw[ORDFS_OWNER_SIZE];
	stop(c); /* the heartbeat writes c->rec: stopped before it changes */
	c->rec.state = ORDFS_OWNER_FREE;
	c->rec.seq++;
	c->rec.time = (uint64_t)time(NULL);
	ordfs_owner_encode(&c->rec, raw);
	finish(c, raw);
}

void owner_undo(struct owner_claim *c)
{
	if (c)
		finish(c, c->before);
}

int owner_describe(struct blockdev *bd, bool *held, char *why, size_t why_len)
{
	struct ordfs_owner rec;
	bool valid;
	int err = read_record(bd, &rec, &valid);
	if (err)
		return err;
	*held = valid && rec.state == ORDFS_OWNER_HELD;
	if (*held)
		describe(&rec, why, why_len);
	return 0;
}

int owner_take(struct blockdev *bd, uint64_t block_count, uint32_t block_size,
	       const struct owner_opts *opts, bool start, struct owner_claim **out, char *why,
	       size_t why_len)
{
	*out = NULL;
	bool nbd = blockdev_is_nbd(bd);
	if (!owner_record_fits(blockdev_size(bd), block_count, block_size)) {
		if (!nbd)
			return 0;
		snprintf(why, why_len, "no room for the owner record at the end of the export "
			 "(1 KiB blocks fill it): make the filesystem one block smaller than the "
			 "export");
		return -ENOSPC;
	}
	struct owner_opts o = *opts;
	if (nbd && !o.settle_ms)
		o.settle_ms = OWNER_NBD_SETTLE_MS;
	int err = owner_claim(bd, &o, out, why, why_len);
	if (err)
		return err;
	if (start && (err = owner_start(*out)) != 0) {
		snprintf(why, why_len, "cannot start the owner record's heartbeat");
		owner_release(*out);
		*out = NULL;
	}
	return err;
}

bool owner_holder_runs(struct blockdev *bd)
{
	struct ordfs_owner rec;
	bool valid;
	if (read_record(bd, &rec, &valid) != 0 || !valid || rec.state != ORDFS_OWNER_HELD)
		return false;
	return held_here(&rec) && process_runs((pid_t)rec.pid);
}
