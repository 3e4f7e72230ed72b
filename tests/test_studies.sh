#!/usr/bin/env bash
# Every ready study stays valid: each experiments/<name>/ holds a README.md
# whose command names the folder's batch file, and every batch file under
# experiments/ passes `ropelab run --dry-run` (parse, schema, every kind's
# and encoding's check, plan), so a schema or registry change cannot
# silently break a study. CPU only: the dry run creates no device.
# Also scripts/results_table.py, which the study READMEs' tables come from,
# on a hand-made results.csv (a non-monotone grid for --smallest).
# usage: test_studies.sh path/to/ropelab path/to/experiments [path/to/results_table.py]
set -u
bin=$1 dir=$2 table=${3:-}
tmp=$(mktemp -d /tmp/rl_studies_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0 n=0
for batch in "$dir"/*.yaml "$dir"/*/*.yaml; do
  [ -f "$batch" ] || continue
  n=$((n + 1))
  if ! "$bin" run "$batch" --dry-run --out "$tmp/out" >"$tmp/log" 2>&1; then
    echo "FAIL: $batch: ropelab run --dry-run exited non-zero:" >&2
    cat "$tmp/log" >&2
    bad=$((bad + 1))
  fi
done
for study in "$dir"/*/; do
  name=$(basename "$study")
  if [ ! -f "$study/README.md" ]; then
    echo "FAIL: $study has no README.md" >&2; bad=$((bad + 1)); continue
  fi
  if ! grep -q "ropelab run experiments/$name/[^ ]*\.yaml" "$study/README.md"; then
    echo "FAIL: $study/README.md shows no 'ropelab run experiments/$name/....yaml' command" >&2
    bad=$((bad + 1))
  fi
  for y in $(grep -o "experiments/$name/[A-Za-z0-9_.-]*\.yaml" "$study/README.md" | sort -u); do
    [ -f "$dir/../$y" ] || { echo "FAIL: $study/README.md names $y, which does not exist" >&2; bad=$((bad + 1)); }
  done
done
if [ -n "$table" ]; then
  csv=$tmp/results.csv
  {
    echo 'run_id,device,kind,encoding,status,encoding.rope_theta,metric,x,value,x_label,y_label'
    echo 'a,cpu,base_bound,rope,passed,100,first_negative_distance,,10,,'
    echo 'b,cpu,base_bound,rope,passed,200,first_negative_distance,,5,,'
    echo 'c,cpu,base_bound,rope,passed,300,first_negative_distance,,20,,'
    echo 'c,cpu,base_bound,rope,passed,300,score_min.min_score_device,7,-0.123456,,'
  } >"$csv"
  want='| 8 | 100 | none (grid starts there) |
| 15 | 300 | 200 |
| 30 | none up to 300 | — |'
  got=$(python3 "$table" "$csv" --smallest encoding.rope_theta first_negative_distance 8 15 30 | tail -n 3)
  [ "$got" = "$want" ] || { echo "FAIL: results_table.py --smallest gave:"; echo "$got"; bad=$((bad + 1)); } >&2
  got=$(python3 "$table" "$csv" first_negative_distance score_min.min_score_device@7 | tail -n 1)
  [ "$got" = "| rope | 300 | 20.0000 | -0.1235 |" ] || { echo "FAIL: results_table.py (4 decimals) gave: $got"; bad=$((bad + 1)); } >&2
  got=$(python3 "$table" "$csv" --sig 2 score_min.min_score_device@7 | tail -n 1)
  [ "$got" = "| rope | -0.12 |" ] || { echo "FAIL: results_table.py --sig 2 gave: $got"; bad=$((bad + 1)); } >&2
  # --fit on bounds b = 10, 100, 10^4 at L = 10, 100, 1000 (log10: u = 1, 2, 3,
  # v = 1, 2, 4): by hand k = 1.5, log10 c = 7/3 - 3 = -2/3 (c = 0.2154),
  # residuals 1/6, -1/3, 1/6, s^2 = 1/6 on 1 degree of freedom, se(k) =
  # sqrt(s^2/2) = 0.28868, se(log10 c) = sqrt(s^2 (1/3 + 4/2)) = 0.62361,
  # t(1) = 12.7062: k in [-2.1680, 5.1680], c in 10^(-2/3 -+ 7.9237).
  {
    echo 'run_id,device,kind,encoding,status,encoding.rope_theta,metric,x,value,x_label,y_label'
    echo 'a,cpu,base_bound,rope,passed,10,first_negative_distance,,10,,'
    echo 'b,cpu,base_bound,rope,passed,100,first_negative_distance,,100,,'
    echo 'c,cpu,base_bound,rope,passed,10000,first_negative_distance,,1000,,'
  } >"$tmp/fit.csv"
  got=$(python3 "$table" "$tmp/fit.csv" --fit encoding.rope_theta first_negative_distance 10 100 1000 | tail -n 1)
  want='| least squares on log b = log c + k log L; 95 %: t(1) = 12.7062 × standard error | 0.2154 [2.568e-09, 1.807e+07] | 1.5000 [-2.1680, 5.1680] | 3 |'
  [ "$got" = "$want" ] || { echo "FAIL: results_table.py --fit gave: $got"; bad=$((bad + 1)); } >&2
fi
[ "$n" -gt 0 ] || { echo "FAIL: no batch file under $dir" >&2; exit 1; }
echo "$n batch files, $bad problems"
[ "$bad" -eq 0 ]
