#!/bin/bash
# test_nbd_refresh.sh - the NBD backend learns that its export grew
# (blockdev_refresh_size, what an online resize.ordfs asks the daemon
# first): nbdkit's file plugin serves an image file that tests/nbd/
# nbd_refresh.c, holding the export open as the daemon does (a flush guard
# over the NBD device), extends with truncate while three threads write
# and read back; each refresh must see the new size and no request may
# fail or be lost while the connection is swapped (a server checks each
# connection against the size it told it at the handshake, so a new size
# takes a new connection).  Then: writes at the new end are in the file;
# a cut image is -EUCLEAN; a server restarted at another size than the
# refreshed one is not reconnected to, at the refreshed size it is.  The
# helper prints one line per check.
#
# Usage: test_nbd_refresh.sh BUILD_DIR
#   Skips (exit 77) without nbdkit's file plugin.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

need_nbdkit file
HELPER=$BUILD/tests/nbd_refresh
[ -x "$HELPER" ] || { echo "FAIL  $HELPER is not built"; exit 1; }

IMG=$WORK/export.img
truncate -s 16M "$IMG"
require "nbdkit file plugin starts" nbd_start f file "$IMG"

# RESTART SIZE for the helper: the server killed (-9: nbdkit stopped with
# TERM waits for its clients to leave), the image set to SIZE, the server
# started again on the same socket.  lib.sh's own functions, in a shell of
# their own (the helper runs it with system(3)): its fresh work directory
# and cleanup are dropped.
cat >"$WORK/restart.sh" <<SH
#!/bin/bash
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$BUILD" >/dev/null
trap - EXIT
rm -rf "\$WORK"
WORK=$WORK
pid=\$(nbd_pid f)
nbd_stop f KILL && ! running "\$pid" && truncate -s "\$1" "$IMG" && nbd_start f file "$IMG"
SH
chmod +x "$WORK/restart.sh"

check "blockdev_refresh_size on the export (nbd_refresh's checks above)" \
	"$HELPER" "$(nbd_uri f)" "$IMG" "$WORK/restart.sh"
nbd_stop f
summary
