#!/usr/bin/env bash
# backends.sh - every backend usable here, driven through the CLI, gives the
# same image as --backend seq (seed 004's sequential algorithm): byte for byte
# for seq itself across layouts and repeats, and for the others within the
# project's tolerance (no sample off by more than 1 level, at least 99.9% of
# samples exact), over kernels of several shapes, every border mode,
# convolution and correlation, and 1, 3 and 4 channels.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

run --list-backends
backends=$(awk '$2 == "yes" { print $1 }' "$OUT")
[ -n "$backends" ] && ok "usable backends: $(echo $backends)" || fail "no usable backend listed"

expect_ok "chart RGB" --chart 203x101 --seed 11 c3.ppm
expect_ok "chart grey" --chart 64x45x1 --seed 12 c1.pgm
inputs="c3.ppm c1.pgm"
if has_format png; then
    expect_ok "chart RGBA" --chart 77x50x4 --seed 13 c4.png
    inputs="$inputs c4.png"
fi

# check_tolerance BACKEND "SAME | NDIFF MAXDIFF TOTAL" DESC
check_tolerance() {
    local b=$1 d=$2 desc=$3
    if [ "$d" = SAME ]; then
        ok "$b = seq, identical"
        return
    fi
    local nd md total
    read -r nd md total <<<"$d"
    if [ -n "$md" ] && [ "$md" -le 1 ] && [ $((nd * 1000)) -le "$total" ]; then
        ok "$b = seq within tolerance ($nd of $total samples off by 1)"
    else
        fail "$b vs seq: $desc: $nd of $total samples differ, by up to $md"
    fi
}

# case: "KERNEL|OPTIONS". The matrix kernel has integer weights and an odd
# divisor, so no exact sum is a tie (n/7 is never k + 1/2): with ties (e.g.
# weights 0.5 and a divisor 3) float32 rounding errors decide the tie, and
# backends that add in a different order legitimately differ on many samples.
cases=(
    "gaussian:9|--border constant"
    "sharpen|--border replicate"
    "sobel-x|--border mirror --correlate"
    "emboss|--border reflect --bias 128"
    "unsharp:7|--border wrap"
    "motion:15,30|--border mirror"
    "1 -2 3 5 -1; 2 0 -3 1 4; 6 1 -1 2 -5 / 7|--border wrap --correlate"
    "box:1x7|--border reflect"
    "box:31|--border mirror"
    "gaussian:3|--border constant --border-value 200 --layout soa"
)

n=0
for input in $inputs; do
    ext=${input##*.}
    outext=$ext
    for c in "${cases[@]}"; do
        kernel=${c%%|*}
        read -r -a opts <<<"${c#*|}"
        n=$((n + 1))
        ref="ref$n.$outext"
        if ! expect_ok "seq: $input '$kernel' ${opts[*]}" --backend seq --kernel "$kernel" "${opts[@]}" "$input" "$ref"; then
            continue
        fi
        # seq is deterministic: again, and in the other layout, byte for byte.
        expect_ok "seq again, soa" --backend seq --kernel "$kernel" "${opts[@]}" --layout soa "$input" "again$n.$outext" &&
            { cmp -s "$ref" "again$n.$outext" && ok "seq repeatable across layouts" || fail "seq repeatable across layouts ($input '$kernel' ${opts[*]})"; }
        for b in $backends auto; do
            [ "$b" = seq ] && continue
            out="$b$n.$outext"
            expect_ok "$b: $input '$kernel' ${opts[*]}" --backend "$b" --kernel "$kernel" "${opts[@]}" "$input" "$out" || continue
            if [ "$outext" = png ] && ! cmp -s "$ref" "$out"; then
                # The same encoder makes the same PNG from the same pixels; when they
                # differ, compare the decoded colour (--channels 3) within tolerance.
                "$IMGCONV" --kernel 1 --alpha independent --channels 3 "$ref" "$ref.ppm" &&
                    "$IMGCONV" --kernel 1 --alpha independent --channels 3 "$out" "$out.ppm"
                check_tolerance "$b" "$(compare_pnm "$ref.ppm" "$out.ppm")" "$input '$kernel' ${opts[*]} (colour only)"
            else
                check_tolerance "$b" "$(compare_pnm "$ref" "$out")" "$input '$kernel' ${opts[*]}"
            fi
        done
    done
done
finish
