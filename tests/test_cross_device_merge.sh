#!/usr/bin/env bash
# The documented cross-device merge (issue 31, item 1): one batch run on two
# device partitions (A: lavapipe; B: the same device renamed, as a second
# vendor's node would record it), with CPU-only kinds that both partitions
# run on "cpu". `ropelab merge A/shard-* B/shard-*` keeps each CPU run once
# (the same bytes in both), each GPU run once per device, exits 0, and its
# results.csv has exactly a single run's CPU rows; a CPU run that differs
# between the partitions is refused naming both (exit 1).
# usage: test_cross_device_merge.sh path/to/ropelab
set -u
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
"$bin" devices >/dev/null 2>&1 || { echo "no Vulkan device: skipped"; exit 77; }
t=$(mktemp -d /tmp/rlxdevXXXX)
trap 'rm -rf "$t"' EXIT
cd "$t"
cat > b.yaml <<'YAML'
model: {head_dim: 16, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: [8, 16], step: 4}
  - kind: precision
    params: {tokens: 8, max_pos_log2: [10, 12]}
YAML
for s in 0 1; do
  for p in A B; do
    "$bin" run b.yaml --out $p/shard-$s --shard $s/2 --quiet --no-plot >/dev/null 2>&1
  done
done
"$bin" run b.yaml --out single --quiet --no-plot >/dev/null 2>&1
# B as another vendor's node records it: its device's name, and each
# summary's size and FNV-1a in the manifest
rename_device() {
  sed -i 's/llvmpipe (LLVM/otherpipe (LLVM/g' "$1/manifest.json" "$1"/runs/*/summary.json
  python3 "$here/record_summaries.py" "$1"
}
rename_device B/shard-0; rename_device B/shard-1
out=$("$bin" merge A/shard-0 A/shard-1 B/shard-0 B/shard-1 --out m 2>&1); rc=$?
cpu_rows() { grep ',cpu,' "$1" | cut -d, -f1,3- | sort; }
if [ $rc -eq 0 ] && grep -q "4 of 4 run(s) present, 0 missing" <<<"$out" &&
   grep -q "2 CPU run(s) given by more than one device partition" <<<"$out" &&
   ! grep -q "duplicated run" <<<"$out" &&
   [ "$(cpu_rows m/results.csv)" = "$(cpu_rows single/results.csv)" ] &&
   [ "$(cut -d, -f2 m/results.csv | sed 1d | grep -c otherpipe)" -gt 0 ] &&
   [ "$(cut -d, -f2 m/results.csv | sed 1d | grep -c '^"llvmpipe')" -gt 0 ]; then ok
else bad "the two-device merge: exit $rc: $out"; fi
# a CPU run whose table differs in one partition: refused, naming both
id=$(grep -l '"device": "cpu"' B/shard-0/runs/*/summary.json | head -n 1 | xargs dirname)
python3 - "$id" "$here" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[2])
from record_summaries import table_record
d = sys.argv[1]
p = os.path.join(d, "decay.csv")
b = open(p, "rb").read().replace(b"\n0,4.5,1,1", b"\n0,4.5,1,0.5", 1)
open(p, "wb").write(b)
s = json.load(open(os.path.join(d, "summary.json")))
s["files"]["decay.csv"] = table_record(p)
json.dump(s, open(os.path.join(d, "summary.json"), "w"), indent=2, sort_keys=True)
PY
python3 "$here/record_summaries.py" B/shard-0
out=$("$bin" merge A/shard-0 A/shard-1 B/shard-0 B/shard-1 --out m2 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "CPU run $(basename "$id") differs between A/shard-0 and B/shard-0" <<<"$out" &&
  ok || bad "a CPU run that differs: exit $rc: $out"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
