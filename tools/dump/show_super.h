/*
 * show_super.h - the superblock as an administrator reads it: the lines
 * dump.ordfs and `tune.ordfs -l` print (tune2fs -l / dumpe2fs -h style),
 * and the small formatters both tools share (sizes and UUIDs are
 * tools/common/cli.h's, which mkfs.ordfs uses too).
 *
 * Owns: the names and the layout of those lines ("Field name:  value",
 * values from column 27).  Both tools link this file, so their listings
 * never drift apart.
 *
 * Rules: the superblock has been decoded (and so validated) before it
 * gets here, but its strings and times still come from an untrusted
 * image: the label and the mount options are printed with control bytes
 * and backslashes escaped (one line each, whatever they hold); a time
 * that does not convert is printed as its number of seconds.  Nothing
 * here reads or writes the image.
 */
#ifndef ORDFS_TOOLS_SHOW_SUPER_H
#define ORDFS_TOOLS_SHOW_SUPER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/format.h"

/* "Label:" padded to the value column. */
#define SHOW_LINE_FMT "%-26s"

/* Prints every superblock field, one line each. */
void show_super(FILE *out, const struct ordfs_super *sb);

/* continue, remount-ro, abort (or "unknown (N)" in buf for anything else). */
const char *show_errors_name(uint32_t errors, char *buf, size_t len);

/* Seconds since the epoch as local time ("Tue Dec  3 01:34:00 2024"), "n/a"
 * for 0, or the bare number if it does not convert. */
void show_time(uint64_t secs, char *buf, size_t len);

/* Writes s (at most max bytes, stopping at a NUL) with bytes below 0x20,
 * 0x7f and '\\' written as \xNN. */
void show_escaped(FILE *out, const char *s, size_t max);

#endif
