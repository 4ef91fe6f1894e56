#!/usr/bin/env bash
# errors.sh - bad input, bad options and unwritable output: each is refused
# with exactly one stderr line "imgconv: error: ..." naming the file (or the
# option) concerned, the documented exit code (2 usage, 3 input, 4 output,
# 5 backend), no output file and no temporary file left behind, the input
# unchanged, and an existing output file untouched.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "a valid input" --chart 40x30 good.ppm
GOOD_SUM=$(checksum good.ppm)

# refused CODE NAME DESC INPUT_FILE ARGS...: runs in a fresh directory holding
# INPUT_FILE (copied as the same name; "-" for none) and checks the error, that
# the directory holds exactly what it held before, and that the input is intact.
refused() {
    local code=$1 name=$2 desc=$3 input=$4
    shift 4
    local dir
    dir=$(mktemp -d "$TMP/case.XXXXXX")
    [ "$input" != - ] && cp "$input" "$dir/"
    # Files the caller placed in $dir through PRE (e.g. an existing output).
    [ -n "${PRE:-}" ] && (cd "$dir" && eval "$PRE")
    local before sums
    before=$(listing "$dir")
    sums=$(cd "$dir" && for f in *; do [ -f "$f" ] && checksum "$f"; done)
    # In a subshell so that the run happens inside $dir; its verdict comes
    # back as the exit status.
    (
        cd "$dir" || exit 1
        expect_error "$code" "$name" "$desc" "$@"
    )
    local sub=$?
    CHECKS=$((CHECKS + 1))
    if [ "$sub" -ne 0 ]; then FAILS=$((FAILS + 1)); fi
    local after sums_after
    after=$(listing "$dir")
    sums_after=$(cd "$dir" && for f in *; do [ -f "$f" ] && checksum "$f"; done)
    if [ "$before" != "$after" ]; then
        fail "$desc: directory changed: [$(echo $before)] -> [$(echo $after)]"
    elif [ "$sums" != "$sums_after" ]; then
        fail "$desc: a file in the directory changed"
    else
        ok "$desc: no file created or changed"
    fi
}

# ---- input errors (3) -------------------------------------------------------------
refused 3 missing.ppm "missing input file" - --kernel box:3 missing.ppm out.ppm
: >empty.ppm
refused 3 empty.ppm "empty input file" empty.ppm --kernel box:3 empty.ppm out.ppm
head -c 100 good.ppm >trunc.ppm
refused 3 trunc.ppm "truncated PPM" trunc.ppm --kernel box:3 trunc.ppm out.ppm
printf 'P6\n40 30\n255\n' >headonly.ppm
refused 3 headonly.ppm "PPM header without data" headonly.ppm --kernel box:3 headonly.ppm out.ppm
printf 'P6\n40 x30\n255\n' >badhdr.ppm
refused 3 badhdr.ppm "PPM with a non-numeric size" badhdr.ppm --kernel box:3 badhdr.ppm out.ppm
printf 'P6\n4 3\n65535\n' >deep.ppm
head -c 71 /dev/zero >>deep.ppm
refused 3 deep.ppm "16-bit PPM (maxval 65535) one byte short" deep.ppm --kernel box:3 deep.ppm out.ppm
printf 'P6\n200000 200000\n255\n' >huge.ppm
head -c 1000 /dev/zero >>huge.ppm
refused 3 huge.ppm "PPM claiming 200000x200000" huge.ppm --kernel box:3 huge.ppm out.ppm
printf 'this is not an image at all, just some text\n' >garbage.png
refused 3 garbage.png "garbage" garbage.png --kernel box:3 garbage.png out.ppm
head -c 4096 /dev/urandom >random.jpg
refused 3 random.jpg "random bytes" random.jpg --kernel box:3 random.jpg out.ppm
# PNG signature + an IHDR claiming 200000 x 200000 RGB 8-bit, with its correct
# CRC (zlib.crc32(b"IHDR" + data) = 0x76591f5d), and no image data: the size
# limit (89478485 pixels by default) must refuse it before anything is allocated.
printf '\x89PNG\r\n\x1a\n\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x03\x0d\x40\x00\x03\x0d\x40\x08\x02\x00\x00\x00\x76\x59\x1f\x5d' >huge.png
refused 3 huge.png "PNG header claiming 200000x200000" huge.png --kernel box:3 huge.png out.ppm
head -c 20 huge.png >trunc.png
refused 3 trunc.png "PNG cut inside IHDR" trunc.png --kernel box:3 trunc.png out.ppm
printf '\xff\xd8\xff\xe0\x00\x10JFIF\x00garbage after the JPEG header' >trunc.jpg
refused 3 trunc.jpg "JPEG header then garbage" trunc.jpg --kernel box:3 trunc.jpg out.ppm
mkdir adir
refused 3 adir "input is a directory" - --kernel box:3 "$TMP/adir" out.ppm
refused 3 good.ppm "input over --max-pixels" good.ppm --kernel box:3 --max-pixels 1199 good.ppm out.ppm

# ---- kernel files (3) ---------------------------------------------------------------
refused 3 nokernel.txt "missing kernel file" good.ppm --kernel-file nokernel.txt good.ppm out.ppm
refused 3 nokernel.txt "missing @kernel file" good.ppm --kernel @nokernel.txt good.ppm out.ppm
printf '1 2\n3 4\n' >even.txt
refused 3 even.txt "kernel file with an even size" even.txt --kernel-file even.txt even.txt out.ppm
printf '1 2 3\n4 5\n6 7 8\n' >ragged.txt
refused 3 ragged.txt "ragged kernel file" ragged.txt --kernel @ragged.txt ragged.txt out.ppm
printf '3 3 1 0\n1 1 1\n1 1 1\n' >short.mat
refused 3 short.mat ".mat file with a missing row" short.mat --kernel-file short.mat short.mat out.ppm
printf '3 3 0 0\n1 1 1\n1 1 1\n1 1 1\n' >zero.mat
refused 3 zero.mat ".mat file with scale 0" zero.mat --kernel-file zero.mat zero.mat out.ppm
# OFFSET and SCALE: finite and within --bias's range (issue 13: 1e308 overflowed
# float and came out as an internal error).
for case in "off308:1 1e308" "off7:1 1e7" "offneg:1 -1e30" "offinf:1 inf" "offnan:1 nan" \
    "scale308:1e308 0" "scaletiny:1e-300 0" "scale7:1e7 0"; do
    name=${case%%:*}
    printf '3 3 %s\n1 1 1\n1 1 1\n1 1 1\n' "${case#*:}" >"$name.mat"
    refused 3 "$name.mat" ".mat header '${case#*:}'" "$name.mat" --kernel-file "$name.mat" "$name.mat" out.ppm
done
printf '3 3 1 -1e6\n0 0 0\n0 1 0\n0 0 0\n' >edge.mat
if "$IMGCONV" --kernel-file edge.mat good.ppm edge.ppm 2>/dev/null; then
    ok ".mat OFFSET -1e6 (the edge of the range) accepted"
else
    fail ".mat OFFSET -1e6 refused"
fi

# ---- bad kernel text (2) -------------------------------------------------------------
for k in "1 1; 1 1" "1 2 3; 4 5" "1 x 1" "1 2 1 / 0" "" "nan 1 1" "1 inf 1" "blurry" \
    "gaussian:4" "gaussian:size=abc" "box:0" "1 2 1 /" ";" "$(printf '1 %.0s' {1..257})"; do
    refused 2 "--kernel" "bad kernel text '${k:0:24}'" good.ppm --kernel "$k" good.ppm out.ppm
done
refused 2 "--kernel" "empty @ name" good.ppm --kernel @ good.ppm out.ppm
refused 2 "no kernel" "no kernel at all" good.ppm good.ppm out.ppm

# ---- bad options and values (2) ---------------------------------------------------------
bad_values=(
    "--border|diagonal" "--border-value|256" "--border-value|-1" "--border-value|1e400"
    "--border-value|nan" "--border-value| 5" "--bias|abc" "--bias|inf" "--bias|1.5x"
    "--alpha|sometimes" "--layout|planar" "--channels|0" "--channels|5" "--channels|2.5"
    "--max-pixels|0" "--max-pixels|-1" "--max-pixels|99999999999999999999999"
    "--quality|0" "--quality|101" "--repeat|0" "--repeat|1x" "--repeat|" "--threads|-1"
    "--threads|999999" "--device|-1" "--device|0x1" "--transfer|fast" "--device-memory|0"
    "--device-memory|1k"
)
for bv in "${bad_values[@]}"; do
    opt=${bv%%|*}
    val=${bv#*|}
    refused 2 "$opt" "$opt '$val'" good.ppm --kernel box:3 "$opt" "$val" good.ppm out.ppm
done
refused 2 "--frobnicate" "unknown option" good.ppm --frobnicate --kernel box:3 good.ppm out.ppm
refused 2 "-z" "unknown short option" good.ppm -z --kernel box:3 good.ppm out.ppm
refused 2 "--correlate" "value given to a flag" good.ppm --correlate=yes --kernel box:3 good.ppm out.ppm
refused 2 "--kernel" "option missing its value" good.ppm good.ppm out.ppm --kernel
refused 2 "INPUT" "only one file" good.ppm --kernel box:3 good.ppm
refused 2 "INPUT" "three files" good.ppm --kernel box:3 good.ppm out.ppm more.ppm
refused 2 "INPUT" "no file" - --kernel box:3
refused 2 "empty file name" "empty OUTPUT name" good.ppm --kernel box:3 good.ppm ""
refused 2 "--kernel" "--kernel-file and --kernel: last wins, bad text" good.ppm --kernel-file x.txt --kernel "1 1" good.ppm out.ppm

# ---- backends (5) -------------------------------------------------------------------
refused 5 "nosuch" "unknown backend" good.ppm --backend nosuch --kernel box:3 good.ppm out.ppm
run --list-backends
unusable=$(awk '$2 == "no" { print $1; exit }' "$OUT")
if [ -n "$unusable" ]; then
    refused 5 "$unusable" "backend $unusable not usable here" good.ppm --backend "$unusable" --kernel box:3 good.ppm out.ppm
else
    echo "skip: every backend is usable here"
fi

# ---- output errors (4) -------------------------------------------------------------------
refused 4 "nodir/out.ppm" "output into a missing directory" good.ppm --kernel box:3 good.ppm nodir/out.ppm
refused 4 "good.ppm" "output = input" good.ppm --kernel box:3 good.ppm good.ppm
refused 4 "./good.ppm" "output = input by another path" good.ppm --kernel box:3 good.ppm ./good.ppm
PRE="ln good.ppm hard.ppm" refused 4 "hard.ppm" "output is a hard link to the input" good.ppm --kernel box:3 good.ppm hard.ppm
PRE="ln -s good.ppm soft.ppm" refused 4 "soft.ppm" "output is a symlink to the input" good.ppm --kernel box:3 good.ppm soft.ppm
refused 4 "out.gif" "unknown output extension" good.ppm --kernel box:3 good.ppm out.gif
refused 4 "out" "output without extension" good.ppm --kernel box:3 good.ppm out
PRE="mkdir sub.ppm" refused 4 "sub.ppm" "output is a directory" good.ppm --kernel box:3 good.ppm sub.ppm
PRE="printf x > notdir" refused 4 "notdir/out.ppm" "output under a regular file" good.ppm --kernel box:3 good.ppm notdir/out.ppm
if ! has_format png; then
    refused 4 "out.png" "PNG output without PNG support" good.ppm --kernel box:3 good.ppm out.png
fi
if [ "$(id -u)" -ne 0 ]; then
    PRE="mkdir ro && chmod 555 ro" refused 4 "ro/out.ppm" "output into a read-only directory" good.ppm --kernel box:3 good.ppm ro/out.ppm
    chmod -R u+w "$TMP" 2>/dev/null
else
    echo "skip read-only directory (running as root)"
fi

# An error must leave an existing output alone.
PRE="printf 'keep me' > out.ppm" refused 3 "trunc.ppm" "failed run keeps the old output" trunc.ppm --kernel box:3 trunc.ppm out.ppm
PRE="printf 'keep me' > out.ppm" refused 2 "--kernel" "bad kernel keeps the old output" good.ppm --kernel "1 1" good.ppm out.ppm

[ "$(checksum good.ppm)" = "$GOOD_SUM" ] && ok "the original input is unchanged" || fail "the original input is unchanged"
finish
