/*
 * stats_print.h - `ordfsctl stats` output: text for people, JSON for
 * programs (one object, every field of struct ordfs_stats, numbers raw).
 */
#ifndef ORDFSCTL_STATS_PRINT_H
#define ORDFSCTL_STATS_PRINT_H

#include <stdio.h>

#include "ordfs_ioctl.h"

void stats_print_text(FILE *out, const char *mountpoint, const struct ordfs_stats *st);
void stats_print_json(FILE *out, const struct ordfs_stats *st);

#endif
