# common.bash - helpers shared by the CLI end-to-end tests (tests/cli/*.sh).
# Sourced, not run: the .bash extension keeps it out of the tests/cli/*.sh glob.
#
# Each test script is called as `bash tests/cli/NAME.sh PATH/TO/imgconv` and
# exits 0 (pass), 1 (fail) or 77 (skip). Checks print "ok"/"FAIL" lines; a
# failing check prints the command, its exit code and its stderr.

IMGCONV=${1:-}
if [ -z "$IMGCONV" ] || [ ! -x "$IMGCONV" ]; then
    echo "usage: $0 PATH/TO/imgconv (got '${IMGCONV}')" >&2
    exit 1
fi
case "$IMGCONV" in
/*) ;;
*) IMGCONV="$PWD/$IMGCONV" ;;
esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/imgconv-cli.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
FAILS=0
CHECKS=0

ok() {
    CHECKS=$((CHECKS + 1))
    echo "ok   $*"
}

fail() {
    CHECKS=$((CHECKS + 1))
    FAILS=$((FAILS + 1))
    echo "FAIL $*"
}

# Ends the script: 1 when any check failed, 1 when no check ran at all.
finish() {
    if [ "$CHECKS" -eq 0 ]; then
        echo "FAIL no check ran"
        exit 1
    fi
    echo "$((CHECKS - FAILS))/$CHECKS checks passed"
    [ "$FAILS" -eq 0 ] || exit 1
    exit 0
}

# run ARGS...: runs imgconv; sets RC, and OUT/ERR to files with its output.
OUT="$TMP/.stdout"
ERR="$TMP/.stderr"
run() {
    LAST_CMD="imgconv $*"
    "$IMGCONV" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

show_last() {
    echo "     command: $LAST_CMD"
    echo "     exit code: $RC"
    sed 's/^/     stderr: /' "$ERR" | head -5
}

# expect_ok DESC ARGS...: exit 0 and nothing on stderr.
expect_ok() {
    local desc=$1
    shift
    run "$@"
    if [ "$RC" -eq 0 ] && [ ! -s "$ERR" ]; then
        ok "$desc"
        return 0
    fi
    fail "$desc"
    show_last
    return 1
}

# expect_error CODE NAME DESC ARGS...: exit CODE, and stderr is exactly one line
# that starts with "imgconv: error:" and contains NAME (the file concerned, or
# the offending option/value); stdout stays empty.
expect_error() {
    local code=$1 name=$2 desc=$3
    shift 3
    run "$@"
    local lines first why=""
    lines=$(wc -l <"$ERR")
    first=$(head -n 1 "$ERR")
    if [ "$RC" -ne "$code" ]; then
        why="exit code $RC, expected $code"
    elif [ "$lines" -ne 1 ]; then
        why="$lines lines on stderr, expected 1"
    elif [ "${first#imgconv: error: }" = "$first" ]; then
        why="stderr does not start with 'imgconv: error: '"
    elif [ -n "$name" ] && ! grep -qF -- "$name" "$ERR"; then
        why="stderr does not name '$name'"
    elif [ -s "$OUT" ]; then
        why="unexpected output on stdout"
    fi
    if [ -z "$why" ]; then
        ok "$desc (exit $code)"
        return 0
    fi
    fail "$desc: $why"
    show_last
    return 1
}

# checksum FILE: prints a checksum of the file ("missing" when absent).
checksum() {
    if [ -e "$1" ]; then cksum <"$1"; else echo missing; fi
}

# listing DIR: the names in DIR, hidden ones included, one line each, sorted.
listing() {
    (cd "$1" && LC_ALL=C ls -A)
}

# same_bytes A B: 0 when every file of folder A equals B's file of that name.
same_bytes() {
    local a=$1 b=$2 n=0 f
    for f in "$a"/*; do
        cmp -s "$f" "$b/$(basename "$f")" || n=$((n + 1))
    done
    [ "$n" -eq 0 ]
}

# has_format NAME: 0 when imgconv was built with image format NAME (png, jpeg).
has_format() {
    "$IMGCONV" --formats | grep -Eq "^ *$1 +yes"
}

# make_pgm FILE W H BYTES...: writes a binary PGM with the given samples
# (decimal, row-major). make_ppm likewise with 3 samples per pixel.
make_pnm() {
    local magic=$1 file=$2 w=$3 h=$4
    shift 4
    {
        printf '%s\n%s %s\n255\n' "$magic" "$w" "$h"
        local v
        for v in "$@"; do printf "\\$(printf '%03o' "$v")"; done
    } >"$file"
}
make_pgm() { make_pnm P5 "$@"; }
make_ppm() { make_pnm P6 "$@"; }

# pnm_samples FILE: the samples of a binary PGM/PPM written by imgconv (header
# "P5|P6\nW H\n255\n") as decimal numbers on one line.
pnm_samples() {
    local hdr
    hdr=$(head -c 64 "$1" | head -n 3 | wc -c)
    tail -c +"$((hdr + 1))" "$1" | od -An -v -tu1 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'
}

# compare_pnm A B: prints "SAME", or "N MAXDIFF TOTAL": how many samples differ,
# by at most how much, out of how many (the files must have equal headers).
compare_pnm() {
    if cmp -s "$1" "$2"; then
        echo SAME
        return
    fi
    local total
    total=$(($(wc -c <"$1")))
    cmp -l "$1" "$2" 2>/dev/null | awk -v total="$total" '
        function oct(s,   v, i) { v = 0; for (i = 1; i <= length(s); i++) v = v * 8 + substr(s, i, 1); return v }
        { d = oct($2) - oct($3); if (d < 0) d = -d; if (d > m) m = d; n++ }
        END { print n + 0, m + 0, total }'
}
