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
head -1 "$out/results.csv" |
  grep -q '^run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,metric,length,x,value,unit,title,x_name,x_unit,x_title,plot$' ||
  fail "results.csv header"
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
# every link in report.md names a file that exists
grep -o '](plots/[^)]*)' "$out/report.md" | sed 's/^](//; s/)$//' | sort -u >"$tmp/links"
[ -s "$tmp/links" ] || fail "report.md links nothing"
while read -r l; do [ -f "$out/$l" ] || fail "report.md links $l, which does not exist"; done <"$tmp/links"
# a .gp file re-renders its figure where it lies
rm "$out/plots/entropy_length.entropy_nats.png"
(cd "$out/plots" && gnuplot entropy_length.entropy_nats.gp 2>/dev/null) &&
  [ -s "$out/plots/entropy_length.entropy_nats.png" ] || fail "entropy_length.entropy_nats.gp does not re-render in plots/"
python3 - "$out/manifest.json" "$out/results.csv" <<'PY' || fail "manifest check"
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
# The tour compares rotation scalings, so its data must carry position
# (docs/runner.md "Data sources"): on the structured source the five RoPE
# methods' entropies at max_len (4x train_len) must be pairwise apart by
# more than twice the largest verified entropy tolerance of their runs (two
# means each within tol of their double reference; tol ~0.011 here, so the
# margin is ~0.022 nats); measured: >= 0.066 apart.
import csv, os, re
# tidy results.csv: the run's description on every row, lengths in a
# column (not in metric names), a human title for every metric
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
for r in rows:
    for col in ("type", "head_dim", "heads", "kv_heads", "train_len", "seed"):
        assert r[col] != "", f"results.csv: empty {col} in {r['run_id']} {r['metric']}"
    assert not re.search(r"_n[0-9]+\.", r["metric"]), f"length in a metric name: {r['metric']}"
    assert r["title"] and r["title"] != r["metric"], f"no title declared for {r['kind']} {r['metric']}"
    if r["kind"] == "retrieval" and r["metric"].startswith("retrieval_offset."):
        assert r["length"] != "", f"retrieval offset row without length"
factors = {r["factor"] for r in rows if r["encoding"] == "yarn-4x"}
assert factors == {"4"}, f"yarn-4x factor column {factors}"
srcs = {p["resolved"].get("data", {}).get("source") for p in plan
        if p["kind"] == "entropy"}
assert srcs == {"structured"}, f"entropy data sources {srcs}"
rot = ("rope", "pi-4x", "ntk-4x", "yarn-4x", "llama3-4x")
h, tol = {}, 0.0
runs = os.path.join(os.path.dirname(sys.argv[1]), "runs")
for p in plan:
    enc = p["resolved"]["encoding"]["name"]
    if p["kind"] != "entropy" or enc not in rot:
        continue
    s = json.load(open(os.path.join(runs, p["id"], "summary.json")))
    h[enc] = s["metrics"]["entropy_at_max_len"]
    tol = max([tol] + [v["bound_at_worst"] for v in s["verification"] if "entropy" in v["what"]])
assert len(h) == 5, f"rotation methods in the quickstart: {sorted(h)}"
assert 0 < tol < 0.05, f"entropy tolerance {tol}"
close = [(a, b) for i, a in enumerate(rot) for b in rot[i + 1:] if abs(h[a] - h[b]) <= 2 * tol]
assert not close, f"entropy curves collapsed (margin {2 * tol:.4f}): " + \
    ", ".join(f"{a} {h[a]:.4f} / {b} {h[b]:.4f}" for a, b in close)
print(f"quickstart: {len(jobs)} runs passed, kinds {sorted(kinds)}; entropy at max_len "
      + ", ".join(f"{e} {h[e]:.4f}" for e in rot) + f" (margin {2 * tol:.4f})")
PY
echo "quickstart: $n_png PNG plots, report.md, results.csv ($(wc -l <"$out/results.csv") rows)"
