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
 *  - New data is what a handle makes reachable: blocks it maps (ALLOC),
 *    blocks it marks written (CONVERT), and the bytes of a written block
 *    that a raised size exposes (EXTEND: the partly filled last block of a
 *    file being appended to; the size change makes them reachable exactly
 *    as an allocation does).  Written in place, it must be durable before
 *    the commit record of the handle that exposes it.  ALLOC and CONVERT
 *    are ordered in data=writeback too: their blocks' old contents are
 *    another file's (freed) or garbage (preallocated), and no mode may
 *    show those.  EXTEND exposes only the file's own block, whose bytes
 *    past the old end are zeros (file_zero_eof_block, truncate), so
 *    data=writeback leaves it unordered: a crash may show zeros there.
 *  - When someone waits for little new data that must be ordered, it is
 *    logged with the handle that exposes it: the commit then makes nothing
 *    outside the log reachable and needs no flush before its commit
 *    record (F1), one flush per fsync instead of two.  Overwrites inside
 *    the size on disk are not logged: they need no ordering (as in jbd2).
 */
#include "route.h"

bool wb_route_ordered(enum wb_route r, enum journal_data_mode mode)
{
	switch (r) {
	case WB_ALLOC_IN_PLACE:
	case WB_CONVERT_IN_PLACE:
		return true;
	case WB_EXTEND_IN_PLACE:
		return mode == JOURNAL_DATA_ORDERED;
	default:
		return false;
	}
}

enum wb_route wb_route_choose(const struct wb_route_facts *f)
{
	enum wb_route in_place = f->delayed     ? WB_ALLOC_IN_PLACE
				 : f->unwritten ? WB_CONVERT_IN_PLACE
				 : f->extends   ? WB_EXTEND_IN_PLACE
						: WB_OVERWRITE_IN_PLACE;
	bool log = f->mode == JOURNAL_DATA_JOURNAL || f->cached ||
		   (f->waited && f->small && wb_route_ordered(in_place, f->mode));
	if (!log)
		return in_place;
	switch (in_place) {
	case WB_ALLOC_IN_PLACE: return WB_ALLOC_LOGGED;
	case WB_CONVERT_IN_PLACE: return WB_CONVERT_LOGGED;
	case WB_EXTEND_IN_PLACE: return WB_EXTEND_LOGGED;
	default: return WB_OVERWRITE_LOGGED;
	}
}

bool wb_route_logged(enum wb_route r)
{
	return r == WB_ALLOC_LOGGED || r == WB_OVERWRITE_LOGGED || r == WB_CONVERT_LOGGED ||
	       r == WB_EXTEND_LOGGED;
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
	case WB_EXTEND_IN_PLACE: return "extend in place";
	case WB_EXTEND_LOGGED: return "extend logged";
	}
	return "?";
}
