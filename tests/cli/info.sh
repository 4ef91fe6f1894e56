#!/usr/bin/env bash
# info.sh - the listings of imgconv: --help, --version, --formats,
# --list-filters and --list-backends exit 0, write to stdout only, and print
# what they promise (usage and examples; version and formats; every named
# kernel of the issue; every backend with usable yes/no and the auto choice).
source "$(dirname "$0")/common.bash"

expect_ok "--help exits 0" --help
grep -q '^Usage: imgconv \[OPTIONS\] INPUT OUTPUT' "$OUT" && ok "--help shows the usage line" || fail "--help shows the usage line"
grep -q '^Examples:' "$OUT" && grep -q 'imgconv --kernel' "$OUT" && ok "--help shows examples" || fail "--help shows examples"
grep -q '^Exit status:' "$OUT" && ok "--help documents the exit codes" || fail "--help documents the exit codes"
for opt in --kernel --kernel-file --border --border-value --correlate --bias --alpha --backend \
    --device --threads --transfer --device-memory --recalibrate --tune --layout --channels --max-pixels --quality --repeat --time --explain \
    --chart --seed --list-filters --list-backends --formats --version --help; do
    grep -q -- "$opt" "$OUT" || fail "--help mentions $opt"
done
ok "--help mentions every option"
expect_ok "-h exits 0" -h
expect_ok "--help wins over other arguments" --help --kernel nosuch a b c

expect_ok "--version exits 0" --version
grep -Eq '^imgconv [0-9]+\.[0-9]+\.[0-9]+' "$OUT" && ok "--version prints the version" || fail "--version prints the version"
grep -Eq 'png (yes|no)' "$OUT" && grep -Eq 'jpeg (yes|no)' "$OUT" && ok "--version says which formats are built in" || fail "--version says which formats are built in"
expect_ok "-V exits 0" -V

expect_ok "--formats exits 0" --formats
for f in pnm png jpeg; do
    grep -Eq "^ *$f +(yes|no)$" "$OUT" || fail "--formats lists $f"
done
grep -Eq '^ *pnm +yes$' "$OUT" && ok "--formats: pnm always built in" || fail "--formats: pnm always built in"

expect_ok "--list-filters exits 0" --list-filters
for k in identity box gaussian sharpen unsharp laplacian sobel-x sobel-y prewitt-x prewitt-y \
    scharr-x scharr-y emboss motion; do
    grep -Eq "^ +$k " "$OUT" || fail "--list-filters lists $k"
done
ok "--list-filters lists the named kernels"

expect_ok "--list-backends exits 0" --list-backends
grep -Eq '^ +seq +yes' "$OUT" && ok "--list-backends: seq usable" || fail "--list-backends: seq usable"
auto=$(sed -n 's/.*auto = \([^ )]*\) here.*/\1/p' "$OUT")
[ -n "$auto" ] && grep -Eq "^ +$auto +yes \(auto\)" "$OUT" && ok "--list-backends marks auto ($auto)" || fail "--list-backends marks the auto backend"
# A backend that is not usable must say why.
if grep -Eq '^ +[a-z-]+ +no ' "$OUT"; then
    nno=$(grep -Ec '^ +[a-z-]+ +no ' "$OUT")
    nwhy=$(grep -c 'why not: ' "$OUT")
    [ "$nno" -eq "$nwhy" ] && ok "--list-backends says why for each unusable backend ($nno)" || fail "--list-backends says why for each unusable backend"
fi
expect_ok "listings combine" --formats --list-backends

finish
