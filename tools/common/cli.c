/*
 * cli.c - the command line and output helpers the image tools share (see
 * cli.h for what it owns and its rules).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef ORDFS_PACKAGE_VERSION
#define ORDFS_PACKAGE_VERSION "unknown"
#endif

/* ---- messages --------------------------------------------------------- */

void cli_usage_error(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", cli->prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "; usage: %s %s (see --help)\n", cli->prog, cli->usage);
	va_end(ap);
}

void cli_image_error(const struct cli *cli, const char *image, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: %s: ", cli->prog, image);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- parsing ---------------------------------------------------------- */

int cli_parse_options(const struct cli *cli, int argc, char **argv, void *ctx)
{
	const struct option longopts[] = {
		{ "help", no_argument, NULL, cli->help_val },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char optname[3] = "-?";
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, cli->shortopts, longopts, NULL)) != -1) {
		if (c == cli->help_val) {
			cli->print_help();
			return 1;
		}
		if (c == 'V') {
			printf("%s (ordfs) " ORDFS_PACKAGE_VERSION "\n", cli->prog);
			return 1;
		}
		if (c == ':' || c == '?') {
			optname[1] = (char)(optopt ? optopt : '?');
			cli_usage_error(cli, c == ':' ? "option %s needs an argument"
						      : "unknown option %s",
					optopt ? optname : argv[optind - 1]);
			return -1;
		}
		if (cli->parse_option(c, optarg, ctx))
			return -1;
	}
	return 0;
}

int cli_image_operand(const struct cli *cli, int argc, char **argv, const char **image)
{
	if (optind >= argc) {
		cli_usage_error(cli, "missing IMAGE");
		return -1;
	}
	*image = argv[optind++];
	return 0;
}

int cli_no_more_operands(const struct cli *cli, int argc, char **argv)
{
	if (optind < argc) {
		cli_usage_error(cli, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
}

int cli_parse_image_args(const struct cli *cli, int argc, char **argv, void *ctx,
			 const char **image)
{
	int r = cli_parse_options(cli, argc, argv, ctx);
	if (r)
		return r;
	if (cli_image_operand(cli, argc, argv, image) || cli_no_more_operands(cli, argc, argv))
		return -1;
	return 0;
}

int cli_parse_errors(const struct cli *cli, const char *arg, uint32_t *errors)
{
	if (strcmp(arg, "continue") == 0)
		*errors = ORDFS_ERRORS_CONTINUE;
	else if (strcmp(arg, "remount-ro") == 0)
		*errors = ORDFS_ERRORS_RO;
	else if (strcmp(arg, "abort") == 0 || strcmp(arg, "panic") == 0)
		*errors = ORDFS_ERRORS_ABORT;
	else {
		cli_usage_error(cli, "invalid errors behaviour '%s' (continue, remount-ro, abort)",
				arg);
		return -1;
	}
	return 0;
}

/* ---- formatting ------------------------------------------------------- */

void cli_format_bytes(uint64_t bytes, enum cli_largest_unit largest, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0, last = (unsigned)largest;
	double v = (double)bytes;
	if (last >= sizeof(units) / sizeof(units[0]))
		last = sizeof(units) / sizeof(units[0]) - 1;
	while (v >= 1024 && u < last) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

void cli_format_uuid(const uint8_t u[ORDFS_UUID_LEN], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* Bytes, or a number with a K/M/G/T suffix (powers of 1024). */
bool cli_parse_size(const char *s, uint64_t *out)
{
	size_t len = strlen(s);
	unsigned shift = 0;
	if (len == 0)
		return false;
	switch (s[len - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	char digits[32];
	size_t ndigits = shift ? len - 1 : len;
	if (ndigits == 0 || ndigits >= sizeof(digits))
		return false;
	memcpy(digits, s, ndigits);
	digits[ndigits] = '\0';
	uint64_t v;
	if (!cli_parse_u64(digits, &v) || v == 0 || v > (UINT64_MAX >> shift))
		return false;
	*out = v << shift;
	return true;
}
