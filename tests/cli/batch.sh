#!/usr/bin/env bash
# batch.sh - batch mode (imgconv [OPTIONS] -o OUTDIR INPUT..., issue 6): a
# folder with a corrupt file in the middle is filtered file by file (the bad
# one reported on one line and skipped, exit 3 at the end), outputs equal the
# single-file command's, existing outputs are refused without --overwrite,
# an unwritable output directory fails up front (exit 4), --json parses, a
# backend whose context cannot be made (an unusable one: CUDA built, no GPU)
# stops the workers already decoding (exit 5, its line last, no output), and
# no partial or temporary file is ever left in OUTDIR (SIGINT included).
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

mkdir in
for i in 1 2 3 4 5 6; do
    "$IMGCONV" --chart 64x48 --seed "$i" "in/img$i.ppm" || fail "chart $i"
done
# A corrupt file in the middle (sorted order): a truncated PPM.
head -c 40 in/img3.ppm >in/img3b.ppm
K=(--kernel gaussian:5 --border reflect)

run "${K[@]}" -q -o out in
errlines=$(grep -c '^imgconv: error: ' "$ERR")
if [ "$RC" -eq 3 ] && grep -q 'in/img3b.ppm: ' "$ERR" && grep -q '1 of 7 files failed' "$ERR" &&
    [ "$errlines" -eq 2 ] && [ ! -s "$OUT" ]; then
    ok "corrupt file reported and skipped, summary, exit 3"
else
    fail "corrupt file in the middle"
    show_last
fi
if [ "$(listing out | tr '\n' ' ')" = "img1.ppm img2.ppm img3.ppm img4.ppm img5.ppm img6.ppm " ]; then
    ok "the six good files written, nothing else in OUTDIR"
else
    fail "OUTDIR holds: $(listing out | tr '\n' ' ')"
fi

# Same pixels as the one-file command.
"$IMGCONV" "${K[@]}" in/img4.ppm single4.ppm
if cmp -s single4.ppm out/img4.ppm; then ok "batch output equals the single-file output"; else fail "batch output differs from the single-file output"; fi

# Existing outputs: refused without --overwrite, left untouched.
before=$(checksum out/img1.ppm)
echo junk >out/img1.ppm
junk=$(checksum out/img1.ppm)
run "${K[@]}" -q -o out in/img1.ppm in/img2.ppm
if [ "$RC" -eq 3 ] && grep -q 'exists (use --overwrite or --skip-existing)' "$ERR" && [ "$(checksum out/img1.ppm)" = "$junk" ]; then
    ok "existing output refused without --overwrite"
else
    fail "existing output without --overwrite"
    show_last
fi
# --skip-existing: the existing output is left alone and counted as skipped, exit 0.
rm -f out/img2.ppm
run "${K[@]}" --skip-existing -o out in/img1.ppm in/img2.ppm
if [ "$RC" -eq 0 ] && [ "$(checksum out/img1.ppm)" = "$junk" ] && [ -f out/img2.ppm ] &&
    grep -q '^imgconv: skipped in/img1.ppm: output out/img1.ppm exists (--skip-existing)$' "$ERR" &&
    grep -q '2 files: 1 written, 1 skipped, 0 failed' "$OUT"; then
    ok "--skip-existing skips the existing output, writes the rest, exit 0"
else
    fail "--skip-existing"
    show_last
fi
expect_error 2 "cannot be combined" "--overwrite with --skip-existing" "${K[@]}" --overwrite \
    --skip-existing -o out in/img1.ppm
run "${K[@]}" -q --overwrite -o out in/img1.ppm in/img2.ppm
if [ "$RC" -eq 0 ] && [ "$(checksum out/img1.ppm)" = "$before" ]; then
    ok "--overwrite replaces it"
else
    fail "--overwrite"
    show_last
fi

# A folder with other things in it: each listed as skipped with the reason, exit 0.
mkdir mixed mixed/sub
cp in/img1.ppm mixed/a.ppm
echo notes >mixed/notes.txt
echo hidden >mixed/.hidden.ppm
run "${K[@]}" --json -o outmixed mixed
if [ "$RC" -eq 0 ] && python3 - "$OUT" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["files"] == 3 and d["written"] == 1 and d["skipped"] == 2 and d["failed"] == 0, d
why = {s["file"].split("/")[-1]: s["reason"] for s in d["skipped_files"]}
assert why["notes.txt"].startswith("not an image name"), why
assert why["sub"].startswith("a folder"), why
EOF
    ok "folder entries that are not images are listed as skipped, with why"
else
    fail "skipped folder entries"
    show_last
    head -c 600 "$OUT"
fi
run "${K[@]}" -o outmixed2 mixed
if [ "$RC" -eq 0 ] && grep -q '^imgconv: skipped mixed/notes.txt: not an image name' "$ERR" &&
    grep -q '^imgconv: skipped mixed/sub: a folder' "$ERR" && ! grep -q hidden "$ERR"; then
    ok "skipped entries named on stderr, dotfiles ignored"
else
    fail "skipped entries on stderr"
    show_last
fi

# TIFF and WebP inputs are filtered like the others.
for ext in tif webp; do
    has_format "$([ "$ext" = tif ] && echo tiff || echo webp)" || continue
    mkdir "in_$ext"
    "$IMGCONV" --kernel 1 in/img1.ppm "in_$ext/a.$ext"
    run "${K[@]}" -q --format png -o "out_$ext" "in_$ext"
    if [ "$RC" -eq 0 ] && [ -f "out_$ext/a.png" ]; then ok "batch reads .$ext"; else
        fail "batch .$ext"
        show_last
    fi
done

# --format changes the extension; globs are expanded by imgconv too.
if has_format png; then
    run "${K[@]}" -q --format png -o outpng 'in/img[12].ppm'
    if [ "$RC" -eq 0 ] && [ "$(listing outpng | tr '\n' ' ')" = "img1.png img2.png " ]; then
        ok "--format png and a quoted glob"
    else
        fail "--format png with a glob: $(listing outpng 2>/dev/null | tr '\n' ' ')"
        show_last
    fi
fi

# Unwritable output directory: as root permissions do not stop us, so use a
# path under a regular file.
touch notadir
expect_error 4 notadir/sub "output directory under a regular file" "${K[@]}" -o notadir/sub in
if [ "$(id -u)" -ne 0 ]; then
    mkdir ro && chmod 555 ro
    expect_error 4 ro "read-only output directory" "${K[@]}" -o ro in
fi

# A missing input is one failed file, not the end of the run.
run "${K[@]}" -q --overwrite -o out2 in/img1.ppm in/missing.ppm in/img2.ppm
if [ "$RC" -eq 3 ] && grep -q 'in/missing.ppm: ' "$ERR" && [ -f out2/img1.ppm ] && [ -f out2/img2.ppm ]; then
    ok "missing input skipped, the others written"
else
    fail "missing input"
    show_last
fi

# --json: one object on stdout with the counts and the errors.
run "${K[@]}" --json -o out3 in
if [ "$RC" -eq 3 ] && python3 - "$OUT" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["files"] == 7 and d["written"] == 6 and d["failed"] == 1, d
assert d["errors"][0]["file"].endswith("img3b.ppm"), d
assert d["images_per_s"] >= 0 and set(d["stage_ms"]) == {"read", "decode", "upload", "filter", "download", "encode", "write"} and d["codec"] == "cpu", d
EOF
    ok "--json summary parses and counts right"
else
    fail "--json summary"
    show_last
    head -c 400 "$OUT"
fi

# Usage errors.
expect_error 2 "--outdir" "no INPUT with --outdir" "${K[@]}" -o out
expect_error 2 "--skip-existing" "--skip-existing without --outdir" "${K[@]}" --skip-existing in/img1.ppm x.ppm

# SIGINT in the middle of a larger run: exit 130 (128 + SIGINT), no temporary or partial
# file in OUTDIR (every file there loads).
mkdir big
for i in $(seq 1 40); do cp in/img1.ppm "big/f$i.ppm"; done
"$IMGCONV" --chart 2400x1800 big/f00.ppm
for i in $(seq 1 40); do cp big/f00.ppm "big/g$i.ppm"; done
# A full-rank 15x15 kernel (no separable shortcut) on one thread: a fraction of
# a second per large image even on a fast machine, so the run is still going
# when the first output appears; the signal is sent then, not after a fixed
# sleep (a 16-core machine finished the whole folder within a second).
python3 -c 'import random; random.seed(7); print("\n".join(" ".join(str(random.randint(-9, 9)) for _ in range(15)) for _ in range(15)))' >k15.txt
"$IMGCONV" --kernel-file k15.txt --backend cpu --threads 1 -q -o outint big >/dev/null 2>"$TMP/int.err" &
pid=$!
for _ in $(seq 1 400); do
    ls outint/*.ppm >/dev/null 2>&1 && break
    sleep 0.05
done
kill -INT "$pid" 2>/dev/null
wait "$pid"
rc=$?
bad=0
for f in outint/*; do
    [ -e "$f" ] || continue
    case "$f" in *.ppm) ;; *) bad=1 ;; esac
    "$IMGCONV" --kernel 1 --overwrite "$f" "$TMP/check.ppm" 2>/dev/null || bad=1
done
if [ "$bad" -eq 0 ] && [ "$rc" -eq 130 ] && grep -q 'interrupted' "$TMP/int.err"; then
    ok "SIGINT: exit $rc, $(listing outint | wc -l) complete files, nothing partial"
else
    fail "SIGINT left a partial or foreign file (exit $rc): $(listing outint | tr '\n' ' ')"
fi

# The workers start before the filter's context exists: a context that cannot
# be made stops them, and nothing is written.
run --list-backends
unusable=$(awk '$2 == "no" { print $1; exit }' "$OUT")
if [ -n "$unusable" ]; then
    mkdir many
    for i in $(seq 1 40); do cp in/img1.ppm "many/m$i.ppm"; done
    run "${K[@]}" --backend "$unusable" -o outbad many
    if [ "$RC" -eq 5 ] && tail -1 "$ERR" | grep -q "^imgconv: error: .*$unusable" &&
        [ "$(listing outbad | wc -l)" -eq 0 ]; then
        ok "backend $unusable unusable: exit 5, '$(tail -1 "$ERR")', no output"
    else
        fail "backend $unusable unusable: exit $RC, $(listing outbad | wc -l) outputs"
        show_last
    fi
else
    echo "skip: every backend is usable here (no context failure to provoke)"
fi

finish
