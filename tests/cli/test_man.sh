#!/bin/bash
# test_man.sh - the manual pages in docs/man against the programs they
# describe.
#
# Usage: test_man.sh BUILD_DIR [MAN_DIR]
#   BUILD_DIR holds the built programs (src/ordfs, tools/*); MAN_DIR
#   defaults to docs/man of this source tree.  Exits 77 (skip) with a line
#   saying what is missing when man(1) or groff is not installed (Debian
#   packages man-db and groff-base).
#
# For every page NAME.8: groff -ww finds nothing to warn about; `man -l`
# renders it (80 columns) without a word on stderr; .TH names the page;
# it has the sections NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS
# and SEE ALSO, and NAME names the program.  For every program: --help
# and --version exit 0 with output, and the rendered page mentions every
# option its --help lists: short (-x, and each letter of a [-xyz] group)
# and long (--xyz) options, NAME= options and values (data=, flush_error=,
# ...), ORDFS_* environment variables, and for the daemon each -o option
# and each generic FUSE option.  A program that was not built is reported
# as SKIP and its page is still checked on its own.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"

BUILD=$(readlink -f "${1:?usage: test_man.sh BUILD_DIR [MAN_DIR]}")
MANDIR=$(readlink -f "${2:-$(dirname "$(readlink -f "$0")")/../../docs/man}")
command -v man >/dev/null 2>&1 || skip "man(1) is missing (Debian package man-db)"
command -v groff >/dev/null 2>&1 || skip "groff is missing (Debian package groff-base)"
[ -d "$MANDIR" ] || { echo "FAIL  no manual page directory $MANDIR"; exit 1; }

PROGRAMS=(ordfs ordfsctl mkfs.ordfs fsck.ordfs tune.ordfs dump.ordfs umount.ordfs resize.ordfs)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ordfs-man.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export MANWIDTH=80 MANPAGER=cat PAGER=cat MAN_KEEP_FORMATTING=0 LC_ALL=C.UTF-8

binary_of() { # binary_of PROGRAM: where the build put it
	case $1 in
	ordfs) echo "$BUILD/src/ordfs" ;;
	*) echo "$BUILD/tools/$1" ;;
	esac
}

# Plain text: no overstrike (bold, underline), and the hyphens and minus
# signs some groff setups print for "-" and "\-" turned back into "-".
plain() { sed -e 's/.\x08//g' -e 's/\xe2\x80\x90/-/g' -e 's/\xe2\x80\x91/-/g' -e 's/\xe2\x88\x92/-/g'; }

exits_zero_with_output() { # COMMAND...: exit 0 and something on stdout
	local out
	out=$("$@" 2>/dev/null) && [ -n "$out" ]
}

empty_file() { [ ! -s "$1" ]; }

# The options a --help text lists, one a line.
options_in_help() {
	local help=$1
	{
		# short options: -x standing alone ("-f", "[-f]", "-b N", "(-o)")
		grep -oE -- '(^|[][ 	,|(])-[A-Za-z]([^[:alnum:]_=-]|$)' <<<"$help" |
			sed -E 's/^[^-]*//; s/^(-[A-Za-z]).*/\1/'
		# each letter of a group in brackets: [-nlfvr]
		grep -oE -- '\[-[A-Za-z]{2,}\]' <<<"$help" | tr -d '[]-' | fold -w1 | sed 's/^/-/'
		# long options
		grep -oE -- '(^|[^[:alnum:]_-])--[a-z][a-z0-9-]*' <<<"$help" | sed -E 's/^[^-]*//'
		# NAME= options (values are checked separately, below)
		grep -oE -- '(^|[^[:alnum:]_])[a-z][a-z_]*=' <<<"$help" | sed -E 's/^[^a-z]//'
		# NAME=value options spelt out (data=ordered)
		grep -oE -- '(^|[^[:alnum:]_])[a-z][a-z_]*=[a-z][a-z-]*' <<<"$help" | sed -E 's/^[^a-z]//'
		# environment variables meant for users
		grep -oE -- 'ORDFS_[A-Z_]+' <<<"$help"
	} | sort -u
}

# The daemon's -o options: the first word(s) of each entry in the
# "ordfs options (-o):" list (entries are indented 2 or 6 spaces), and the
# comma-separated list after "generic options passed to FUSE:".
daemon_mount_options() {
	local help=$1
	awk '/^ordfs options \(-o\):/ { inside = 1; next }
	     inside && /^[^ ]/ { inside = 0 }
	     inside && /^  [a-z]|^      [a-z]/ { sub(/^ +/, ""); sub(/  .*/, ""); print }' <<<"$help" |
		sed -E 's/, /\n/g' | sed -E 's/=[A-Z]+$/=/'
	# atime options named inside a description ("...; nodiratime: never ...")
	sed -n '/^ordfs options (-o):/,/^[^ ]/p' <<<"$help" | grep -oE '[a-z]+atime'
	sed -n '/^generic options passed to FUSE:/,$p' <<<"$help" |
		sed -E '1s/^generic options passed to FUSE://' | tr '\n' ' ' |
		sed -E 's/\([^)]*\)//g' | tr ',' '\n' | sed -E 's/^ +//; s/ +$//' | grep -E '^[a-z_]+=?$'
}

mentions() { # mentions TEXT OPTION: OPTION appears as a word in TEXT
	local text=$1 opt=$2 re
	re=$(sed -E 's/[][\.^$*+?(){}|]/\\&/g' <<<"$opt")
	case $opt in
	*=) grep -qE -- "(^|[^[:alnum:]_-])$re" <<<"$text" ;;
	*) grep -qE -- "(^|[^[:alnum:]_-])$re([^[:alnum:]_-]|\$)" <<<"$text" ;;
	esac
}

for prog in "${PROGRAMS[@]}"; do
	page=$MANDIR/$prog.8
	if [ ! -f "$page" ]; then
		fail "$prog.8 exists in $MANDIR"
		continue
	fi
	pass "$prog.8 exists"

	groff -man -ww -z -Tutf8 "$page" 2>"$WORK/groff.err" >/dev/null
	check "$prog.8: groff -ww prints no warning" empty_file "$WORK/groff.err"
	if [ -s "$WORK/groff.err" ]; then sed 's/^/      /' "$WORK/groff.err"; fi

	man -l "$page" 2>"$WORK/man.err" | plain >"$WORK/page.txt"
	rc=${PIPESTATUS[0]}
	check "$prog.8: man -l exits 0" [ "$rc" -eq 0 ]
	check "$prog.8: man -l says nothing on stderr" empty_file "$WORK/man.err"
	if [ -s "$WORK/man.err" ]; then sed 's/^/      /' "$WORK/man.err"; fi
	text=$(cat "$WORK/page.txt")

	upper=$(tr '[:lower:]' '[:upper:]' <<<"$prog")
	check "$prog.8: .TH names $upper, section 8" \
		grep -qE "^\.TH \"?$(sed 's/\./\\./g' <<<"$upper")\"? \"?8\"?( |$)" "$page"
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO"; do
		check "$prog.8 has the section $section" grep -qx "$section" <<<"$text"
	done
	check "$prog.8: NAME names $prog" \
		grep -qE "^ +$(sed 's/\./\\./g' <<<"$prog")[ ,]" <<<"$(sed -n '/^NAME$/,/^$/p' <<<"$text")"

	bin=$(binary_of "$prog")
	if [ ! -x "$bin" ]; then
		skip_part "$prog: not built ($bin), its --help is not compared with $prog.8"
		continue
	fi
	check "$prog --help exits 0 with output" exits_zero_with_output "$bin" --help
	check "$prog --version exits 0 with output" exits_zero_with_output "$bin" --version
	help=$("$bin" --help 2>/dev/null)
	opts=$(options_in_help "$help")
	if [ "$prog" = ordfs ]; then
		opts=$(printf '%s\n%s\n' "$opts" "$(daemon_mount_options "$help")" | sort -u)
	fi
	check "$prog --help lists some options" [ -n "$opts" ]
	while IFS= read -r opt; do
		[ -n "$opt" ] || continue
		check "$prog.8 mentions '$opt' (from $prog --help)" mentions "$text" "$opt"
	done <<<"$opts"
done

summary
