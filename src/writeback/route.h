/*
 * route.h - where a run of dirty pages goes at writeback: the rules of
 * design/write-routes.md, "Write routes", as one function of the facts that
 * decide them (tests/unit/test_wb_route.c checks it against a table of
 * them).
 *
 * Rules (the reasons are in route.c and design/write-routes.md):
 *  - A page over a hole is allocated (ALLOC), a page over an unwritten
 *    extent is converted (CONVERT), a page over a written block that holds
 *    bytes past the size on disk extends the file (EXTEND), any other page
 *    overwrites its block (OVERWRITE).
 *  - ALLOC, CONVERT and EXTEND write new data: bytes the handle that maps,
 *    converts or raises the size makes reachable.  Written in place, that
 *    data must be durable before that handle commits (F1, or the writer's
 *    own flush); ALLOC and CONVERT in every mode (a freed block holds
 *    another file's bytes), EXTEND in data=ordered (data=writeback may show
 *    zeros there after a crash, never anyone else's bytes).
 *  - The data goes through the log, not in place, when: data=journal; the
 *    block has a cached buffer (coherence, every mode); or someone waits
 *    for little data (LOG_SMALL_BYTES) and it is new data that must be
 *    ordered (logging it costs less than F1).
 */
#ifndef ORDFS_WRITEBACK_ROUTE_H
#define ORDFS_WRITEBACK_ROUTE_H

#include <stdbool.h>

#include "journal/journal.h"

/* New data an fsync waits for, up to this much, is logged.  Logging costs
 * a second write of the data at checkpoint; the flush it saves costs more
 * than writing 64 KiB here (bench B1/B8). */
#define LOG_SMALL_BYTES (64u << 10)

enum wb_route {
	WB_ALLOC_IN_PLACE,     /* claim blocks, write the data, then map [J1] */
	WB_ALLOC_LOGGED,       /* claim blocks, log the data with the mapping */
	WB_OVERWRITE_IN_PLACE, /* write over the mapped block */
	WB_OVERWRITE_LOGGED,   /* log the data in a handle of its own */
	WB_CONVERT_IN_PLACE,   /* write over the unwritten block, then mark it
				  written (ordered like an allocation [J1]) */
	WB_CONVERT_LOGGED,     /* log the data, then mark it written */
	WB_EXTEND_IN_PLACE,    /* write over the written block, then raise the
				  size on disk over it (ordered in data=ordered) */
	WB_EXTEND_LOGGED,      /* log the data and raise the size in one handle */
};

struct wb_route_facts {
	enum journal_data_mode mode;
	bool waited;    /* someone waits for the commit (fsync) */
	bool small;     /* the pages written back are at most LOG_SMALL_BYTES */
	bool delayed;   /* the page is over a hole (holds a reservation) */
	bool unwritten; /* the page is over an unwritten extent */
	bool extends;   /* the page is over a written block and holds bytes at
			   or past the size on disk (d.size) */
	bool cached;    /* the block has a buffer in the metadata cache */
};

enum wb_route wb_route_choose(const struct wb_route_facts *f);
/* True for the routes that put the data in the log. */
bool wb_route_logged(enum wb_route r);
/* True when route r writes data in place that a later handle makes
 * reachable, so the data must be durable before that handle's commit
 * record (the commit's F1, or a flush by the writer first). */
bool wb_route_ordered(enum wb_route r, enum journal_data_mode mode);
/* The route's name, for tests and logs. */
const char *wb_route_name(enum wb_route r);

#endif
