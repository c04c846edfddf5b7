/*
 * route.h - where a run of dirty pages goes at writeback: the rules of
 * DESIGN.md, "Write routes", as one function of the facts that decide
 * them (tests/unit/test_wb_route.c checks it against a table of them).
 *
 * Rules (the reasons are in route.c and DESIGN.md):
 *  - A page over a hole is allocated (ALLOC), a page over an unwritten
 *    extent is converted (CONVERT), any other page overwrites its block
 *    (OVERWRITE).
 *  - The data goes through the log, not in place, when: data=journal; the
 *    block has a cached buffer (coherence, every mode); or, in
 *    data=ordered, someone waits for little data (LOG_SMALL_BYTES) and the
 *    block is new to the file (ALLOC or CONVERT).
 */
#ifndef ORDFS_WRITEBACK_ROUTE_H
#define ORDFS_WRITEBACK_ROUTE_H

#include <stdbool.h>

#include "journal/journal.h"

/* New data an fsync waits for, up to this much, is logged in data=ordered.
 * Logging costs a second write of the data at checkpoint; the flush it
 * saves costs more than writing 64 KiB here (bench B1/B8). */
#define LOG_SMALL_BYTES (64u << 10)

enum wb_route {
	WB_ALLOC_IN_PLACE,     /* claim blocks, write the data, then map [J1] */
	WB_ALLOC_LOGGED,       /* claim blocks, log the data with the mapping */
	WB_OVERWRITE_IN_PLACE, /* write over the mapped block */
	WB_OVERWRITE_LOGGED,   /* log the data in a handle of its own */
	WB_CONVERT_IN_PLACE,   /* write over the unwritten block, then mark it
				  written (ordered like an allocation [J1]) */
	WB_CONVERT_LOGGED,     /* log the data, then mark it written */
};

struct wb_route_facts {
	enum journal_data_mode mode;
	bool waited;    /* someone waits for the commit (fsync) */
	bool small;     /* the pages written back are at most LOG_SMALL_BYTES */
	bool delayed;   /* the page is over a hole (holds a reservation) */
	bool unwritten; /* the page is over an unwritten extent */
	bool cached;    /* the block has a buffer in the metadata cache */
};

enum wb_route wb_route_choose(const struct wb_route_facts *f);
/* True for the routes that put the data in the log. */
bool wb_route_logged(enum wb_route r);
/* The route's name, for tests and logs. */
const char *wb_route_name(enum wb_route r);

#endif
