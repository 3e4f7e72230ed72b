#!/usr/bin/env bash
# Every ready study stays valid: each experiments/<name>/ holds a README.md
# whose command names the folder's batch file, and every batch file under
# experiments/ passes `ropelab run --dry-run` (parse, schema, every kind's
# and encoding's check, plan), so a schema or registry change cannot
# silently break a study. CPU only: the dry run creates no device.
# Also scripts/results_table.py, which the study READMEs' tables come from,
# on hand-made results.csv files (a non-monotone grid for --smallest; runs
# that differ only in seed, averaged with a 95 % interval; a kind's own
# X_lo95/X_hi95 interval shown beside X).
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
  # Seeds: runs differing only in data.seed share a row, mean [95 % interval].
  # Expected values by hand: a: 1, 3: mean 2, s = sqrt(2), t(0.975, 1) = 12.706,
  # half-width 12.706 * sqrt(2)/sqrt(2) = 12.706. b: 1, 2, 3: s = 1, t(0.975, 2) =
  # 4.3027, half-width 4.3027/sqrt(3) = 2.4841. c: 0, 0, 10, 0, 0 (n = 5: bootstrap):
  # a resample's mean is 2k, k ~ Binomial(5, 0.2) draws of the 10; P(k = 0) =
  # 0.328 > 2.5 % gives lo 0; P(k >= 4) = 0.0067 < 2.5 % < P(k >= 3) = 0.058
  # gives hi 2 * 3 = 6 (10000 resamples put the empirical tails within 0.003
  # of these). d: one seed, the kind's Wilson bounds (plot word ci) beside X.
  # e: loss 4, 6: 5 +- 12.706; its accuracy has one seed of two.
  csv=$tmp/seeds.csv
  {
    echo 'run_id,device,kind,status,encoding,seed,data.seed,metric,length,x,value,plot'
    echo 'a1,cpu,k,passed,a,7,1,acc.accuracy,,2048,1,fraction'
    echo 'a2,cpu,k,passed,a,7,2,acc.accuracy,,2048,3,fraction'
    echo 'b1,cpu,k,passed,b,7,1,acc.accuracy,,2048,1,fraction'
    echo 'b2,cpu,k,passed,b,7,2,acc.accuracy,,2048,2,fraction'
    echo 'b3,cpu,k,passed,b,7,3,acc.accuracy,,2048,3,fraction'
    echo 'c1,cpu,k,passed,c,7,1,acc.accuracy,,2048,0,fraction'
    echo 'c2,cpu,k,passed,c,7,2,acc.accuracy,,2048,0,fraction'
    echo 'c3,cpu,k,passed,c,7,3,acc.accuracy,,2048,10,fraction'
    echo 'c4,cpu,k,passed,c,7,4,acc.accuracy,,2048,0,fraction'
    echo 'c5,cpu,k,passed,c,7,5,acc.accuracy,,2048,0,fraction'
    echo 'd1,cpu,k,passed,d,7,1,acc.accuracy,,2048,0.91,fraction'
    echo 'd1,cpu,k,passed,d,7,1,acc.accuracy_lo95,,2048,0.88,ci fraction'
    echo 'd1,cpu,k,passed,d,7,1,acc.accuracy_hi95,,2048,0.93,ci fraction'
    echo 'd1,cpu,k,passed,d,7,1,loss,,,4,'
    echo 'e1,cpu,k,passed,e,7,1,loss,,,4,'
    echo 'e2,cpu,k,passed,e,7,2,loss,,,6,'
    echo 'e1,cpu,k,passed,e,7,1,acc.accuracy,,2048,0.5,fraction'
  } >"$csv"
  want='| encoding | n seeds | acc.accuracy @ 2048 | loss |
|---|---|---|---|
| a | 2 | 2 [-10.7, 14.7] | — |
| b | 3 | 2 [-0.484, 4.48] | — |
| c | 5 | 2 [0, 6] | — |
| d | 1 | 0.91 [0.88, 0.93] | 4 |
| e | 2 | 0.5 (n=1) | 5 [-7.71, 17.7] |'
  got=$(python3 "$table" "$csv" --sig 3 acc.accuracy@2048 loss)
  [ "$got" = "$want" ] || { echo "FAIL: results_table.py over seeds gave:"; echo "$got"; bad=$((bad + 1)); } >&2
  got=$(python3 "$table" "$csv" --sig 3 --no-ci acc.accuracy@2048 | grep '^| d ')
  [ "$got" = "| d | 1 | 0.91 |" ] || { echo "FAIL: results_table.py --no-ci gave: $got"; bad=$((bad + 1)); } >&2
  got=$(python3 "$table" "$csv" --sig 3 acc.accuracy_lo95@2048 | tail -n 1)
  [ "$got" = "| d | 0.88 |" ] || { echo "FAIL: results_table.py (a bound as its own column) gave: $got"; bad=$((bad + 1)); } >&2
  got=$(python3 "$table" "$csv" --per-seed acc.accuracy@2048 | sed -n 3,4p)
  [ "$got" = '| a | 1 | 1.0000 |
| a | 2 | 3.0000 |' ] || { echo "FAIL: results_table.py --per-seed gave:"; echo "$got"; bad=$((bad + 1)); } >&2
  # the run's own seed column (batches merged from different seeds) groups the same way
  printf '%s\n' 'run_id,device,kind,status,encoding,seed,metric,length,x,value,plot' \
    'a1,cpu,k,passed,a,1,loss,,,1,' 'a2,cpu,k,passed,a,2,loss,,,3,' >"$csv"
  got=$(python3 "$table" "$csv" --sig 3 loss | tail -n 1)
  [ "$got" = "| a | 2 | 2 [-10.7, 14.7] |" ] || { echo "FAIL: results_table.py over the seed column gave: $got"; bad=$((bad + 1)); } >&2
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
  # --seed-key: another swept column counted as a seed (here params.draw)
  printf '%s\n' 'run_id,device,kind,status,encoding,seed,params.draw,metric,length,x,value,plot' \
    'a1,cpu,k,passed,a,1,0,loss,,,1,' 'a2,cpu,k,passed,a,1,1,loss,,,3,' >"$csv"
  got=$(python3 "$table" "$csv" --seed-key params.draw --sig 3 loss | tail -n 1)
  [ "$got" = "| a | 2 | 2 [-10.7, 14.7] |" ] || { echo "FAIL: results_table.py --seed-key gave: $got"; bad=$((bad + 1)); } >&2
  got=$(python3 "$table" "$csv" --kind k --sig 3 loss | tail -n 1)
  [ "$got" = "| a | 1 | 3 |" ] || { echo "FAIL: results_table.py (params.draw a swept key, not a seed) gave: $got"; bad=$((bad + 1)); } >&2
fi
[ "$n" -gt 0 ] || { echo "FAIL: no batch file under $dir" >&2; exit 1; }
echo "$n batch files, $bad problems"
[ "$bad" -eq 0 ]
