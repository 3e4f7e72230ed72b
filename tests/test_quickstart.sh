#!/usr/bin/env bash
# End to end: the quickstart batch (README's main command) runs into a temp
# directory under the validation layer and leaves results.csv, a manifest in
# which every planned run passed with no validation message, report.md and
# PNG plots.
# usage: test_quickstart.sh path/to/ropelab path/to/batch.yaml
set -u
bin=$1 batch=$2
if ! "$bin" devices >/dev/null 2>&1; then
  echo "no Vulkan device: skipping"; exit 77
fi
tmp=$(mktemp -d /tmp/rl_quickstart_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$bin" run "$batch" --out "$tmp/out" --quiet >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; fail "ropelab run exited $?"; }
out=$tmp/out
[ -s "$out/results.csv" ] || fail "results.csv missing or empty"
head -1 "$out/results.csv" | grep -q '^run_id,device,kind,encoding,status' || fail "results.csv header"
grep -q ',failed,' "$out/results.csv" && fail "results.csv has a failed run"
[ -s "$out/report.md" ] || fail "report.md missing"
grep -q '](plots/.*\.png)' "$out/report.md" || fail "report.md embeds no plot"
n_png=0
for f in "$out"/plots/*.png; do
  [ -f "$f" ] || continue
  # PNG signature: \x89 P N G \r \n \x1a \n
  [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f is not a PNG"
  n_png=$((n_png + 1))
done
[ "$n_png" -ge 1 ] || fail "no PNG plot"
python3 - "$out/manifest.json" <<'PY' || fail "manifest check"
import json, sys
m = json.load(open(sys.argv[1]))
jobs, plan = m["jobs"], m["plan"]
assert m["complete"] is True, "manifest: batch not complete"
assert len(jobs) >= len(plan) > 0, f"{len(jobs)} jobs for {len(plan)} planned runs"
bad = [j["run_id"] for j in jobs if j["status"] != "passed"]
assert not bad, f"runs not passed: {bad}"
assert m["validation_layer"] is True and m["validation_messages"] == 0, "validation messages"
kinds = {p["kind"] for p in plan}
for k in ("decay", "precision", "coverage", "entropy", "retrieval"):
    assert k in kinds, f"kind {k} missing from the quickstart"
print(f"quickstart: {len(jobs)} runs passed, kinds {sorted(kinds)}")
PY
echo "quickstart: $n_png PNG plots, report.md, results.csv ($(wc -l <"$out/results.csv") rows)"
