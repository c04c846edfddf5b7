/*
 * route.c - the choice of write route (route.h).
 *
 * Why each rule:
 *  - data=journal logs every block: no data is written in place, it
 *    reaches home at checkpoint.
 *  - A block with a cached buffer is written through the log in every
 *    mode: a pinned older copy would otherwise be checkpointed over the
 *    newer bytes, and the cache would serve stale ones.  A block with no
 *    cached buffer has no copy in the live log (journal_forget relies on
 *    the same fact), so in place is safe for it.
 *  - data=ordered logs new blocks (delayed, or unwritten extents) when
 *    someone waits for little data: the commit then makes nothing outside
 *    the log reachable and needs no flush before its commit record (F1),
 *    one flush per fsync instead of two.  Overwrites of written blocks
 *    are not logged: they need no ordering (as in jbd2).
 */
#include "route.h"

enum wb_route wb_route_choose(const struct wb_route_facts *f)
{
	bool new_block = f->delayed || f->unwritten;
	bool log = f->mode == JOURNAL_DATA_JOURNAL || f->cached ||
		   (new_block && f->waited && f->small && f->mode == JOURNAL_DATA_ORDERED);
	if (f->delayed)
		return log ? WB_ALLOC_LOGGED : WB_ALLOC_IN_PLACE;
	if (f->unwritten)
		return log ? WB_CONVERT_LOGGED : WB_CONVERT_IN_PLACE;
	return log ? WB_OVERWRITE_LOGGED : WB_OVERWRITE_IN_PLACE;
}

bool wb_route_logged(enum wb_route r)
{
	return r == WB_ALLOC_LOGGED || r == WB_OVERWRITE_LOGGED || r == WB_CONVERT_LOGGED;
}

const char *wb_route_name(enum wb_route r)
{
	switch (r) {
	case WB_ALLOC_IN_PLACE: return "alloc in place";
	case WB_ALLOC_LOGGED: return "alloc logged";
	case WB_OVERWRITE_IN_PLACE: return "overwrite in place";
	case WB_OVERWRITE_LOGGED: return "overwrite logged";
	case WB_CONVERT_IN_PLACE: return "convert in place";
	case WB_CONVERT_LOGGED: return "convert logged";
	}
	return "?";
}
