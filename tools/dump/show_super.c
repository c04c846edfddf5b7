/*
 * show_super.c - printing the superblock for dump.ordfs and tune.ordfs -l
 * (see show_super.h for the rules).  Sizes and UUIDs are formatted by
 * tools/common/cli.c, as mkfs.ordfs formats them.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "show_super.h"

#define MAX_ERRNO_NAMED 4095u /* larger "errno" values are not errnos */

const char *show_errors_name(uint32_t errors, char *buf, size_t len)
{
	switch (errors) {
	case ORDFS_ERRORS_CONTINUE: return "continue";
	case ORDFS_ERRORS_RO: return "remount-ro";
	case ORDFS_ERRORS_ABORT: return "abort";
	default:
		snprintf(buf, len, "unknown (%" PRIu32 ")", errors);
		return buf;
	}
}

void show_time(uint64_t secs, char *buf, size_t len)
{
	if (secs == 0) {
		snprintf(buf, len, "n/a");
		return;
	}
	struct tm tm;
	time_t t = (time_t)secs;
	if (secs > (uint64_t)INT64_MAX || (uint64_t)t != secs || !localtime_r(&t, &tm) ||
	    strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm) == 0)
		snprintf(buf, len, "%" PRIu64 " (seconds since the epoch)", secs);
}

void show_escaped(FILE *out, const char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\\')
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

static void show_features(FILE *out, const struct ordfs_super *sb)
{
	fprintf(out, SHOW_LINE_FMT, "Filesystem features:");
	bool any = false;
	if (sb->feature_incompat & ORDFS_FEATURE_INCOMPAT_RECOVER) {
		fprintf(out, "needs_recovery");
		any = true;
	}
	if (sb->feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS) {
		fprintf(out, "%sgroup_bitmaps", any ? " " : "");
		any = true;
	}
	uint32_t incompat = sb->feature_incompat & ~(ORDFS_FEATURE_INCOMPAT_RECOVER |
						     ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS);
	if (sb->feature_compat) {
		fprintf(out, "%scompat 0x%" PRIx32, any ? " " : "", sb->feature_compat);
		any = true;
	}
	if (incompat) {
		fprintf(out, "%sincompat 0x%" PRIx32, any ? " " : "", incompat);
		any = true;
	}
	if (sb->feature_ro_compat & ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS) {
		fprintf(out, "%sfile_flags", any ? " " : "");
		any = true;
	}
	uint32_t ro_compat = sb->feature_ro_compat & ~ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS;
	if (ro_compat) {
		fprintf(out, "%sro_compat 0x%" PRIx32, any ? " " : "", ro_compat);
		any = true;
	}
	fprintf(out, "%s\n", any ? "" : "(none)");
}

static const char *state_name(uint32_t state)
{
	bool clean = state & ORDFS_STATE_CLEAN, error = state & ORDFS_STATE_ERROR;
	if (error)
		return clean ? "clean with errors" : "not clean with errors";
	return clean ? "clean" : "not clean";
}

static void show_area(FILE *out, const char *name, uint64_t blocks, uint64_t start)
{
	fprintf(out, SHOW_LINE_FMT "%" PRIu64 " block%s at block %" PRIu64 "\n", name, blocks,
		blocks == 1 ? "" : "s", start);
}

static void show_times(FILE *out, const struct ordfs_super *sb)
{
	const struct {
		const char *name;
		uint64_t secs;
	} times[] = {
		{ "Filesystem created:", sb->mkfs_time },
		{ "Last mount time:", sb->mount_time },
		{ "Last write time:", sb->write_time },
		{ "Last checked:", sb->check_time },
	};
	char buf[64];
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		show_time(times[i].secs, buf, sizeof(buf));
		fprintf(out, SHOW_LINE_FMT "%s\n", times[i].name, buf);
	}
}

static void show_last_error(FILE *out, const struct ordfs_super *sb)
{
	char when[64];
	fprintf(out, SHOW_LINE_FMT, "Last error:");
	if (sb->last_error_code == 0) {
		fprintf(out, "none\n");
		return;
	}
	show_time(sb->last_error_time, when, sizeof(when));
	fprintf(out, "errno %" PRIu32 " (%s) at %s\n", sb->last_error_code,
		sb->last_error_code <= MAX_ERRNO_NAMED ? strerror((int)sb->last_error_code)
						       : "not an errno",
		when);
}

void show_super(FILE *out, const struct ordfs_super *sb)
{
	char uuid[37], buf[64];
	uint32_t bs = ordfs_block_size(sb);

	fprintf(out, SHOW_LINE_FMT, "Filesystem volume name:");
	if (sb->label[0])
		show_escaped(out, sb->label, ORDFS_LABEL_LEN);
	else
		fprintf(out, "<none>");
	fputc('\n', out);
	cli_format_uuid(sb->uuid, uuid);
	fprintf(out, SHOW_LINE_FMT "%s\n", "Filesystem UUID:", uuid);
	fprintf(out, SHOW_LINE_FMT "0x%08" PRIX32 "\n", "Filesystem magic number:", sb->magic);
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Filesystem version:", sb->version);
	show_features(out, sb);
	fprintf(out, SHOW_LINE_FMT "%s\n", "Filesystem state:", state_name(sb->state));
	fprintf(out, SHOW_LINE_FMT "%s\n", "Errors behaviour:",
		show_errors_name(sb->errors, buf, sizeof(buf)));
	fprintf(out, SHOW_LINE_FMT, "Default mount options:");
	if (sb->mount_opts[0])
		show_escaped(out, sb->mount_opts, ORDFS_MOUNT_OPTS_LEN);
	else
		fprintf(out, "(none)");
	fputc('\n', out);

	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Block size:", bs);
	cli_format_bytes(sb->block_count * bs, CLI_UP_TO_EIB, buf, sizeof(buf));
	fprintf(out, SHOW_LINE_FMT "%" PRIu64 " (%s)\n", "Block count:", sb->block_count, buf);
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Inode count:", sb->inode_count);
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Inode size:", sb->inode_size);
	fprintf(out, SHOW_LINE_FMT "%" PRIu64 "\n", "Free blocks:", sb->free_blocks);
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Free inodes:", sb->free_inodes);
	show_area(out, "Journal:", sb->journal_blocks, sb->journal_start);
	show_area(out, "Block bitmap:", sb->block_bitmap_blocks, sb->block_bitmap_start);
	uint64_t groups = ordfs_block_groups(sb);
	if (groups > sb->block_bitmap_blocks) /* group_bitmaps: the others */
		fprintf(out, SHOW_LINE_FMT "%" PRIu64 " (%" PRIu64 " with their bitmap block "
			"in their first block)\n", "Block groups:", groups,
			groups - sb->block_bitmap_blocks);
	show_area(out, "Inode bitmap:", sb->inode_bitmap_blocks, sb->inode_bitmap_start);
	show_area(out, "Inode table:", sb->inode_table_blocks, sb->inode_table_start);
	fprintf(out, SHOW_LINE_FMT "%" PRIu64 "\n", "First data block:", sb->data_start);
	fprintf(out, SHOW_LINE_FMT "block %" PRIu64 "\n", "Backup superblock:",
		sb->block_count - 1);
	if (sb->orphan_head)
		fprintf(out, SHOW_LINE_FMT "inode %" PRIu32 "\n", "Orphan list head:",
			sb->orphan_head);
	else
		fprintf(out, SHOW_LINE_FMT "none\n", "Orphan list head:");

	show_times(out, sb);
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Mount count:", sb->mount_count);
	fprintf(out, SHOW_LINE_FMT "0x%08" PRIx32 "\n", "Directory hash seed:", sb->hash_seed);
	fprintf(out, SHOW_LINE_FMT "0x%08" PRIx32 "\n", "Checksum seed:", sb->csum_seed);
	show_last_error(out, sb);
}
