# lib.sh - what the external-suite runners share (sourced, not run).

# fusermount_u: the unmount tried again while busy (cli/lib.sh).
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

# unmount_and_fsck BUILD_DIR IMAGE MOUNTPOINT FSCK_LOG: unmounts, waits for
# the daemon to let go of the image (it exits once the image is clean),
# then runs fsck.ordfs -fn on it into FSCK_LOG; returns fsck's status.
unmount_and_fsck() {
	local build=$1 img=$2 mp=$3 log=$4
	fusermount_u "$mp"
	for _ in $(seq 1 150); do
		fuser -s "$img" 2>/dev/null || break
		sleep 0.2
	done
	"$build/tools/fsck.ordfs" -fn "$img" >"$log" 2>&1
}
