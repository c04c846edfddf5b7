/*
 * cli.h - what mkfs.ordfs, tune.ordfs and dump.ordfs do the same way on
 * their command lines and in their output.
 *
 * Owns: the getopt_long loop with --help and --version, the one-line
 * usage and image errors on stderr, the IMAGE operand, the -e errors
 * behaviour names, and the byte-size and UUID formatters.  Each tool
 * keeps its own option letters, its parse_option, its help text and its
 * exit statuses.
 *
 * Rules:
 *  - A tool describes itself once, in a struct cli; every message starts
 *    with its name ("mkfs.ordfs: ..."), so what a tool prints does not
 *    depend on which tool compiled this file.
 *  - Errors are one line on stderr; a usage error ends with
 *    "; usage: PROG USAGE (see --help)".  --help and --version print to
 *    stdout.  Nothing here exits, opens an image, or knows the format
 *    beyond the ORDFS_ERRORS_* values.
 *  - The output is what the tools printed before they shared it, byte for
 *    byte (tests and scripts read it): a difference between tools that a
 *    user can see stays a parameter (cli_format_bytes's largest unit), it
 *    is not unified here.
 */
#ifndef ORDFS_TOOLS_CLI_H
#define ORDFS_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

struct cli {
	const char *prog;      /* "mkfs.ordfs": the start of every message */
	const char *usage;     /* what follows the name in usage errors */
	const char *shortopts; /* getopt's short options, starting with ':' */
	int help_val;          /* what --help returns: 'h' where -h is help too,
				* another letter where -h is the tool's own */
	void (*print_help)(void);
	/* One option that is not --help or --version; 0, or -1 after
	 * reporting the error. */
	int (*parse_option)(int c, const char *arg, void *ctx);
};

/* "PROG: <message>; usage: PROG USAGE (see --help)" on stderr. */
__attribute__((format(printf, 2, 3))) void cli_usage_error(const struct cli *cli,
							   const char *fmt, ...);

/* "PROG: IMAGE: <message>" on stderr. */
__attribute__((format(printf, 3, 4))) void cli_image_error(const struct cli *cli,
							   const char *image,
							   const char *fmt, ...);

/* The options of argv (getopt_long, opterr off): help_val prints the help,
 * -V and --version the version ("PROG (ordfs) VERSION"), an unknown
 * option or a missing argument is a usage error, and every other option
 * goes to parse_option with ctx.  0 with optind at the first operand, 1
 * when --help or --version was served, -1 on a usage error (already
 * reported). */
int cli_parse_options(const struct cli *cli, int argc, char **argv, void *ctx);

/* The operand at optind as IMAGE (optind moves past it); 0, or -1 after
 * "missing IMAGE". */
int cli_image_operand(const struct cli *cli, int argc, char **argv, const char **image);

/* 0 if no operand is left at optind, else -1 after "unexpected argument". */
int cli_no_more_operands(const struct cli *cli, int argc, char **argv);

/* cli_parse_options, then exactly one operand, IMAGE (the command line of
 * tune.ordfs and dump.ordfs).  Returns as cli_parse_options does. */
int cli_parse_image_args(const struct cli *cli, int argc, char **argv, void *ctx,
			 const char **image);

/* -e BEHAVIOUR: continue, remount-ro or abort (panic is accepted as
 * abort) as ORDFS_ERRORS_*; 0, or -1 after a usage error. */
int cli_parse_errors(const struct cli *cli, const char *arg, uint32_t *errors);

/* The largest unit cli_format_bytes uses.  mkfs.ordfs's plan stops at PiB
 * ("16384.0 PiB" for the largest image it can make), the superblock
 * listings of dump.ordfs and tune.ordfs -l go on to EiB. */
enum cli_largest_unit {
	CLI_UP_TO_PIB = 5,
	CLI_UP_TO_EIB = 6,
};

/* "4 MiB", "1.5 GiB": whole numbers without a decimal, powers of 1024. */
void cli_format_bytes(uint64_t bytes, enum cli_largest_unit largest, char *buf, size_t len);

/* xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
void cli_format_uuid(const uint8_t uuid[ORDFS_UUID_LEN], char out[37]);

/* SIZE: bytes, or a number with a K/M/G/T suffix (powers of 1024); not 0.
 * false on junk or overflow.  mkfs.ordfs and resize.ordfs. */
bool cli_parse_size(const char *s, uint64_t *out);
/* A decimal number with nothing after it; false on junk or overflow. */
bool cli_parse_u64(const char *s, uint64_t *out);

#endif
