/*
 * offline_image.c - whether a tool may rewrite an unmounted image (see
 * offline_image.h for the rules).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "offline_image.h"
#include "journal/journal.h"

int cli_check_offline_image(const struct cli *cli, const char *image, struct blockdev *bd,
			    const struct ordfs_super *sb, bool need_clean)
{
	if ((sb->feature_compat & ~ORDFS_FEATURE_COMPAT_SUPPORTED) ||
	    (sb->feature_ro_compat & ~ORDFS_FEATURE_RO_COMPAT_SUPPORTED)) {
		cli_image_error(cli, image, "the image uses features this %s does not know "
				"(compat 0x%" PRIx32 ", ro_compat 0x%" PRIx32 "); not changing it",
				cli->prog, sb->feature_compat, sb->feature_ro_compat);
		return -EOPNOTSUPP;
	}
	if (sb->state & ORDFS_STATE_ERROR) {
		cli_image_error(cli, image, "the filesystem has an error recorded (errno %" PRIu32
				"); run fsck.ordfs first", sb->last_error_code);
		return -EUCLEAN;
	}
	int need = journal_needs_recovery(bd, sb);
	if (need < 0) {
		cli_image_error(cli, image, "the journal superblock %s; run fsck.ordfs first",
				need == -EUCLEAN ? "is corrupt" : "cannot be read");
		return need;
	}
	if (need > 0 || (need_clean && ((sb->feature_incompat & ORDFS_FEATURE_INCOMPAT_RECOVER) ||
					!(sb->state & ORDFS_STATE_CLEAN)))) {
		cli_image_error(cli, image, "the journal needs replay (the image was not unmounted "
				"cleanly); run fsck.ordfs first");
		return -EUCLEAN;
	}
	/* The log is empty, so this only reads the journal superblock. */
	struct journal_recovery_info info;
	int err = journal_recover(bd, sb, JOURNAL_RECOVER_DRY_RUN, &info);
	if (err) {
		cli_image_error(cli, image, "the journal superblock %s; run fsck.ordfs first",
				err == -EUCLEAN ? "is corrupt" : "cannot be read");
		return err;
	}
	if (info.journal_err) {
		cli_image_error(cli, image, "the journal has an error recorded (%s); run fsck.ordfs "
				"first", info.journal_err < 0 && info.journal_err > -4096
						 ? strerror(-info.journal_err) : "not an errno");
		return -EUCLEAN;
	}
	return 0;
}
