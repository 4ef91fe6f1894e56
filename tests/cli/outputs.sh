#!/usr/bin/env bash
# outputs.sh - how batch mode puts its outputs in place: without --overwrite
# the last step is exclusive (a file that appears while the batch runs is
# never replaced, and of two batches writing one folder only one writes each
# file); a dangling symbolic link counts as an existing output; with
# --overwrite a link is replaced, not written through, and a replaced file
# keeps its mode (and, as root, its owner).
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "a chart" --chart 64x48 a.png

# A dangling link where the output would go.
mkdir in out
cp a.png in/a.png
ln -s "$TMP/nowhere.png" out/a.png
run -k box:3 -q -o out in/a.png
if [ "$RC" -ne 0 ] && [ -L out/a.png ] && [ ! -e nowhere.png ] && grep -q "exists" "$ERR"; then
    ok "a dangling link counts as an existing output"
else
    fail "a dangling link counts as an existing output"
    show_last
fi
run -k box:3 -q --overwrite -o out in/a.png
if [ "$RC" -eq 0 ] && [ ! -L out/a.png ] && [ -f out/a.png ] && [ ! -e nowhere.png ]; then
    ok "--overwrite replaces the link itself, not what it names"
else
    fail "--overwrite replaces the link itself, not what it names"
    show_last
fi

# A replaced output keeps its mode and, as root, its owner.
echo old >out/a.png
chmod 0640 out/a.png
owner=$(id -un)
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
    chown nobody out/a.png
    owner=nobody
fi
run -k box:3 -q --overwrite -o out in/a.png
got=$(stat -c '%a %U' out/a.png)
if [ "$RC" -eq 0 ] && [ "$got" = "640 $owner" ] && [ "$(head -c 4 out/a.png | tail -c 3)" = PNG ]; then
    ok "a replaced output keeps mode 640 and owner $owner"
else
    fail "a replaced output keeps mode 640 and owner $owner: got $got"
    show_last
fi
# The fallback without O_TMPFILE (a hidden temporary and rename) as well.
chmod 0604 out/a.png
IC_NO_TMPFILE=1 run -k box:3 -q --overwrite -o out in/a.png
got=$(stat -c '%a %U' out/a.png)
[ "$RC" -eq 0 ] && [ "$got" = "604 $owner" ] && ok "and through the fallback" ||
    { fail "and through the fallback: got $got"; show_last; }

# Two batches into one folder: each file is written by one of them; the
# other reports it (before, both said "written" and one output replaced the
# other's).
mkdir many out2
for i in 1 2 3 4 5 6 7 8; do cp a.png "many/f$i.png"; done
for mode in tmpfile fallback; do
    rm -rf out2
    mkdir out2
    env_set=()
    [ "$mode" = fallback ] && env_set=(IC_NO_TMPFILE=1)
    env "${env_set[@]}" "$IMGCONV" -k box:3 -q -o out2 many >"$TMP/one.out" 2>"$TMP/one.err" &
    p1=$!
    env "${env_set[@]}" "$IMGCONV" -k box:3 -q -o out2 many >"$TMP/two.out" 2>"$TMP/two.err"
    r2=$?
    wait "$p1"
    r1=$?
    written=$(ls out2 | wc -l)
    failed=$(cat "$TMP/one.err" "$TMP/two.err" | grep -c "exists")
    if [ "$written" -eq 8 ] && [ "$failed" -ge 8 ] && [ "$r1" -ne 0 ] && [ "$r2" -ne 0 ]; then
        ok "two batches into one folder ($mode): each file written once, the clash reported"
    elif [ "$written" -eq 8 ] && [ "$failed" -ge 8 ] && { [ "$r1" -ne 0 ] || [ "$r2" -ne 0 ]; }; then
        ok "two batches into one folder ($mode): one ran first, the other refused every file"
    else
        fail "two batches into one folder ($mode): exits $r1 $r2, $written written, $failed refusals"
        sed 's/^/     /' "$TMP/one.err" "$TMP/two.err" | head -8
    fi
done

# A file that appears while the batch runs (after its check, before its
# output is put in place) is kept, and that file fails.
expect_ok "a larger image" --chart 3000x3000 big.png
mkdir out3
"$IMGCONV" -k box:3 --threads 1 --compression 9 -q -o out3 big.png >"$TMP/race.out" 2>"$TMP/race.err" &
pid=$!
sleep 0.3
running=0
[ -e out3/big.png ] || { echo precious >out3/big.png && kill -0 "$pid" 2>/dev/null && running=1; }
wait "$pid"
rc=$?
if [ "$running" -eq 0 ]; then
    echo "skip a file appearing during the batch: the batch ended first"
elif [ "$rc" -ne 0 ] && [ "$(cat out3/big.png)" = precious ] && grep -q "exists" "$TMP/race.err"; then
    ok "a file that appears during the batch is not replaced, and that file fails"
else
    fail "a file that appears during the batch: exit $rc, out3/big.png holds $(head -c 9 out3/big.png | tr -dc '[:print:]')"
    sed 's/^/     /' "$TMP/race.err" | head -3
fi

finish
