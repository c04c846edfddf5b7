/*
 * utab_lines.h - reading the lines of libmount's utab (/run/mount/utab),
 * for the daemon's bookkeeping of its own line (utab.c).
 *
 * libmount writes the file and is the only writer the daemon uses
 * (utab.c); it exports no reader for it (its parser of the format is
 * private), so this one reads what utab.c needs to decide which lines
 * are stale: each line's source, target and userspace options.
 */
#ifndef ORDFS_DAEMON_UTAB_LINES_H
#define ORDFS_DAEMON_UTAB_LINES_H

#include <stdbool.h>

/* One line, its fields unescaped (valid during the call). */
struct utab_line {
	const char *source; /* SRC=, "" when absent */
	const char *target; /* TARGET=, "" when absent */
	const char *opts;   /* OPTS=, the userspace options: "helper=ordfs" */
};

/* Calls fn for every line of the utab at path, in file order (libmount
 * appends: a later line is a later mount); stops early when fn returns
 * false.  0 (a missing file has no lines), or a negative errno. */
int utab_lines_each(const char *path, bool (*fn)(const struct utab_line *l, void *ctx),
		    void *ctx);

/* Does opts name helper=NAME? */
bool utab_opts_name_helper(const char *opts, const char *name);

#endif
