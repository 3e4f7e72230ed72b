#!/usr/bin/env bash
# device-check.sh — everything one machine's GPU says about ropelab, in one
# folder: the system, `ropelab --version`, `devices --json`, `check --device
# all --json --junit`, `bench rope` and `bench attention --json` at the
# shapes of docs/performance.md "Measured", and summary.txt with the key ratios. Every step
# is time-limited and the whole run stays inside --time-limit (default 290 s).
#
# usage: scripts/device-check.sh [--out DIR] [--bin PATH|BUNDLE] [--quick] [--full-check]
#                                [--device D] [--check-device D] [--check-kernel GLOB]
#                                [--time-limit S] [--long-budget S] [--tar FILE]
#   --out DIR         output folder (default out/device-check-HOST-UTCSTAMP);
#                     must not exist or be empty; written under DIR.tmp-PID and
#                     renamed when complete
#   --bin PATH        a ropelab binary, or a folder made by device-bundle.sh
#                     (its lib/ goes on LD_LIBRARY_PATH, layers/ on
#                     VK_ADD_LAYER_PATH). Default: the bundle this script sits
#                     in, else build/ropelab, else a build when meson, ninja,
#                     glslangValidator and a C compiler are there
#   --quick           check --quick, one rope variant (5 runs), attention at
#                     4096 tokens, no long runs: a smoke test, not the README's
#                     shapes (summary.txt says so)
#   --full-check      the full check even when every device is a CPU driver
#                     (there check --quick by default: the full one's cold
#                     compile takes ~6 min on lavapipe with 2 cores)
#   --device D        device for the benches (default auto: the first discrete
#                     GPU); --check-device D for check (default all)
#   --check-kernel GLOB  check only the rows whose kernel matches GLOB (check
#                     --kernel; default every row): a family re-checked, or
#                     the script's own test kept short
#   --time-limit S    whole run, seconds (default 290)
#   --long-budget S   attention at 131072 and 1000000 tokens runs only when its
#                     time, estimated from the 16384-token run, is at most S
#                     (default 120; 0: never)
#   --tar FILE        also write the folder as FILE (.tar.gz), atomically
#
# Exit: 0 all passed; 1 check or a verification failed, or a required step
# (devices, check, a README-shape bench) failed, timed out or did not fit the
# time limit; 2 bad usage, no binary or no Vulkan device.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="" bin="" quick=0 full_check=0 bench_dev=auto check_dev=all time_limit=290 long_budget=120 tarfile="" check_kernel=""
die() { printf 'device-check: %s\n' "$*" >&2; exit 2; }
is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; esac; return 0; }
while [ $# -gt 0 ]; do
  case $1 in
    --out|--bin|--device|--check-device|--check-kernel|--time-limit|--long-budget|--tar)
      [ $# -ge 2 ] || die "$1 needs a value"
      case $1 in
        --out) out=$2 ;; --bin) bin=$2 ;; --device) bench_dev=$2 ;; --check-device) check_dev=$2 ;;
        --check-kernel) check_kernel=$2 ;;
        --time-limit) time_limit=$2 ;; --long-budget) long_budget=$2 ;; --tar) tarfile=$2 ;;
      esac
      shift 2 ;;
    --quick) quick=1; shift ;;
    --full-check) full_check=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
{ is_uint "$time_limit" && [ "$time_limit" -ge 10 ]; } || die "--time-limit '$time_limit': whole seconds, at least 10"
is_uint "$long_budget" || die "--long-budget '$long_budget': whole seconds"
{ [ -n "$bench_dev" ] && [ -n "$check_dev" ]; } || die "--device/--check-device: empty"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
t0=$(date +%s)
left() { echo $((time_limit - ($(date +%s) - t0))); }

# ---- the binary ------------------------------------------------------------
libdir="" layerdir="" bundle=""
if [ -z "$bin" ] && [ -x "$here/ropelab" ] && [ -d "$here/lib" ]; then
  bin=$here   # this script inside a bundle
fi
if [ -n "$bin" ] && [ -d "$bin" ]; then
  bundle=$(cd "$bin" && pwd)
  [ -x "$bundle/ropelab" ] || die "--bin $bin: a folder without ropelab (make one with scripts/device-bundle.sh)"
  bin=$bundle/ropelab
  [ -d "$bundle/lib" ] && libdir=$bundle/lib
  [ -d "$bundle/layers" ] && layerdir=$bundle/layers
fi
built=""
if [ -z "$bin" ]; then
  repo=$(cd "$here/.." && pwd)
  if [ -x "$repo/build/ropelab" ]; then
    bin=$repo/build/ropelab
  elif [ -f "$repo/meson.build" ] && command -v meson >/dev/null && command -v ninja >/dev/null &&
       command -v glslangValidator >/dev/null && { command -v cc >/dev/null || command -v gcc >/dev/null; }; then
    built=$repo/build
  else
    die "no ropelab binary: pass --bin (a build, or a folder from scripts/device-bundle.sh), or install meson, ninja, glslang-tools, a C compiler and the -dev packages of scripts/deps.sh to build here"
  fi
fi
[ -z "$bin" ] || [ -x "$bin" ] || die "--bin $bin: not an executable file"

# ---- the output folder -----------------------------------------------------
host=$(uname -n 2>/dev/null || echo host)
host=${host//[^A-Za-z0-9._-]/_}
[ -n "$out" ] || out=out/device-check-$host-$(date -u +%Y%m%dT%H%M%SZ)
if [ -e "$out" ]; then
  { [ -d "$out" ] && [ -z "$(ls -A "$out")" ]; } || die "--out $out exists and is not an empty folder"
fi
mkdir -p "$(dirname "$out")" || die "cannot create the parent of $out"
tmp=$out.tmp-$$
rm -rf "$tmp"
mkdir -p "$tmp/logs" "$tmp/bench" || die "cannot create $tmp"
printf 'step\tstatus\texit\tseconds\toutput\n' > "$tmp/steps.tsv"
# shellcheck disable=SC2317  # called by the trap
on_signal() {
  printf 'device-check: interrupted; partial results stay in %s\n' "$tmp" >&2
  exit 130
}
trap on_signal INT TERM

if [ -n "$built" ]; then
  t=$(left)
  printf 'device-check: building ropelab in %s (log: logs/build.log)\n' "$built" >&2
  if timeout -k 5 $((t > 200 ? 200 : t)) "$repo/scripts/build.sh" build > "$tmp/logs/build.log" 2>&1 &&
     [ -x "$built/ropelab" ]; then
    bin=$built/ropelab
  else
    die "the build failed or ran out of time (see $tmp/logs/build.log)"
  fi
fi

# ---- the Vulkan environment ------------------------------------------------
# A bundle brings the loader (lib/) and the layer (layers/). A container that
# mounts NVIDIA's driver folder has its ICD manifest outside the loader's
# search path: named here when no other driver manifest exists.
if [ -n "$libdir" ]; then
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -n "$layerdir" ]; then
  export VK_ADD_LAYER_PATH="$layerdir${VK_ADD_LAYER_PATH:+:$VK_ADD_LAYER_PATH}"
fi
icd_note=""
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}${VK_ADD_DRIVER_FILES:-}" ]; then
  std="" dirs=(/etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d /usr/local/etc/vulkan/icd.d)
  IFS=: read -r -a xdg <<< "${XDG_DATA_DIRS:-}"
  for d in "${xdg[@]+"${xdg[@]}"}"; do [ -n "$d" ] && dirs+=("$d/vulkan/icd.d"); done
  for d in "${dirs[@]}"; do
    ls "$d"/*.json >/dev/null 2>&1 && { std=$d; break; }
  done
  if [ -z "$std" ]; then
    found=""
    for f in /usr/local/nvidia/share/vulkan/icd.d/*.json /usr/local/nvidia/etc/vulkan/icd.d/*.json \
             /usr/local/nvidia/vulkan/icd.d/*.json; do
      [ -f "$f" ] && found=${found:+$found:}$f
    done
    if [ -n "$found" ]; then
      export VK_DRIVER_FILES=$found
      icd_note="no driver manifest in the loader's folders; VK_DRIVER_FILES=$found"
    else
      icd_note="no Vulkan driver manifest (ICD) found in the loader's folders or /usr/local/nvidia"
    fi
  fi
fi

# ---- steps -----------------------------------------------------------------
failed=()       # required steps that did not pass
verify_fail=0   # a check row or a verification failed (exit 1 from ropelab)
# step NAME REQUIRED LIMIT OUTFILE -- ropelab ARGS...: runs ropelab with a
# time limit (LIMIT, cut to what the whole run has left), stdout to OUTFILE
# (relative to the folder), stderr to logs/NAME.log; one steps.tsv line.
last_rc=0 last_s=0
step() {
  local name=$1 req=$2 lim=$3 file=$4 rc status s0 s1 t
  shift 5
  t=$(left); t=$((t - 5))
  [ "$lim" -lt "$t" ] || lim=$t
  if [ "$lim" -lt 5 ]; then
    printf '%s\tskipped (time limit)\t-\t0\t%s\n' "$name" "$file" >> "$tmp/steps.tsv"
    [ "$req" = 1 ] && failed+=("$name (no time left)")
    last_rc=124 last_s=0
    return 0
  fi
  printf 'device-check: %-28s (limit %3d s) ... ' "$name" "$lim" >&2
  s0=$(date +%s.%N)
  timeout -k 5 "$lim" "$bin" "$@" > "$tmp/$file" 2> "$tmp/logs/$name.log"
  rc=$?
  s1=$(date +%s.%N)
  last_s=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.1f", b - a }')
  last_rc=$rc
  case $rc in
    0) status=ok ;;
    1) status="failed (verification)"; verify_fail=1 ;;
    124|137) status="timeout (${lim} s)" ;;
    *) status="error (exit $rc)" ;;
  esac
  printf '%s, %s s\n' "$status" "$last_s" >&2
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$rc" "$last_s" "$file" >> "$tmp/steps.tsv"
  if [ "$rc" -ne 0 ] && [ "$req" = 1 ] && [ "$rc" -ne 1 ]; then
    failed+=("$name ($status: $(head -c 300 "$tmp/logs/$name.log" | head -1))")
  fi
  return 0
}

# Flattens ropelab's indented JSON (jansson, one key per line) into
# "path<TAB>value" lines, e.g. results.0.ratio.value<TAB>0.826; strings
# lose their quotes. Enough for ropelab's own output, not for JSON at large.
flat() {
  awk '
    { line = $0; sub(/^[ \t]+/, "", line); sub(/,$/, "", line)
      if (line ~ /^[]}]$/) { depth--; next }
      key = ""
      if (match(line, /^"[^"]*": /)) { key = substr(line, 2, RLENGTH - 4); line = substr(line, RLENGTH + 1) }
      else if (depth > 0 && arr[depth]) key = idx[depth]++
      path = (depth > 0 && name[depth] != "") ? name[depth] "." key : key
      if (line == "{" || line == "[") { depth++; name[depth] = path; arr[depth] = (line == "["); idx[depth] = 0; next }
      if (line ~ /^".*"$/) line = substr(line, 2, length(line) - 2)
      print path "\t" line }' "$1" 2>/dev/null
}
# jget FILE PATH: one value ("" when absent).
jget() { flat "$1" | awk -F'\t' -v p="$2" '$1 == p { print $2; exit }'; }
num() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "" || v == "null") print "-"; else printf f, v }'; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname: $(uname -a)"
  [ -r /etc/os-release ] && echo "os: $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"')"
  echo "cpus: $(nproc 2>/dev/null || echo '?'), memory: $(awk '/^MemTotal/ {print $2 " kB"}' /proc/meminfo 2>/dev/null)"
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "binary: $bin${bundle:+ (bundle $bundle)}"
  [ -n "$bundle" ] && [ -f "$bundle/MANIFEST.txt" ] && sed -n '2,4s/^/  bundle /p' "$bundle/MANIFEST.txt"
  echo "mode: $([ $quick = 1 ] && echo quick || echo full), bench device $bench_dev, check device $check_dev${check_kernel:+, check kernels $check_kernel}, time limit $time_limit s, long budget $long_budget s"
  for v in LD_LIBRARY_PATH VK_DRIVER_FILES VK_ICD_FILENAMES VK_ADD_DRIVER_FILES VK_ADD_LAYER_PATH VK_LAYER_PATH RL_REQUIRE_VALIDATION; do
    [ -n "${!v:-}" ] && echo "env $v=${!v}"
  done
  [ -n "$icd_note" ] && echo "vulkan: $icd_note"
  echo "ldd $bin:"
  ldd "$bin" 2>&1 | sed 's/^[[:space:]]*/  /'
  # Each driver manifest the loader will see, with its library's ldd (the
  # usual reason a driver is skipped is a library it cannot load).
  mans=${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}}
  if [ -z "$mans" ]; then
    for m in /etc/vulkan/icd.d/*.json /usr/share/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json; do
      [ -f "$m" ] && mans=${mans:+$mans:}$m
    done
  fi
  IFS=: read -r -a manarr <<< "$mans"
  for m in "${manarr[@]+"${manarr[@]}"}"; do
    [ -f "$m" ] || continue
    lib=$(sed -n 's/.*"library_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$m" | head -1)
    echo "icd $m: $lib"
    case $lib in */*) ;; *) lib=$(ldconfig -p 2>/dev/null | awk -v n="$lib" '$1 == n {print $NF; exit}') ;; esac
    if [ -n "$lib" ] && [ -f "$lib" ] && [ "${m#*nvidia}" != "$m" ]; then
      ldd "$lib" 2>&1 | grep -E 'not found|GLdispatch|libX' | sed 's/^[[:space:]]*/  /'
    fi
  done
  if command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi:"
    timeout 20 nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
      --format=csv 2>&1 | sed 's/^/  /'
  fi
} > "$tmp/system.txt" 2>&1

step version 1 20 version.txt -- --version
step devices 1 60 devices.json -- devices --json
if [ "$last_rc" -ne 0 ]; then
  # Say why: the loader's own account of drivers it found and skipped.
  VK_LOADER_DEBUG=error,warn,driver timeout -k 5 30 "$bin" devices > "$tmp/logs/loader-debug.log" 2>&1
  mv "$tmp" "$out" 2>/dev/null && tmp=$out
  printf 'device-check: no usable Vulkan device: see %s/logs/devices.log and logs/loader-debug.log\n' "$tmp" >&2
  exit 2
fi
step devices_text 0 60 devices.txt -- devices

# On a machine whose devices are all CPU drivers (lavapipe), the full check
# compiles ~700 pipelines with LLVM: 346 s cold on 2 cores, past the time
# limit; check --quick (137 s cold) unless --full-check. GPUs run it all.
types=$(flat "$tmp/devices.json" | awk -F'\t' '$1 ~ /^[0-9]+\.type$/ { print $2 }')
cpu_only=1
for t in $types; do [ "$t" = cpu ] || cpu_only=0; done
check_mode=full
if [ $quick = 1 ]; then
  check_mode=quick
  step check 1 120 check.json -- check --device "$check_dev" --json --junit "$tmp/check-junit.xml" ${check_kernel:+--kernel "$check_kernel"} --quick
elif [ $cpu_only = 1 ] && [ $full_check = 0 ]; then
  check_mode="quick (CPU devices only; --full-check for all rows)"
  step check 1 180 check.json -- check --device "$check_dev" --json --junit "$tmp/check-junit.xml" ${check_kernel:+--kernel "$check_kernel"} --quick
else
  step check 1 150 check.json -- check --device "$check_dev" --json --junit "$tmp/check-junit.xml" ${check_kernel:+--kernel "$check_kernel"}
fi

# bench rope at the README's shapes: 65536 tokens x 1 head x 128 dims and
# 4096 tokens x 32 heads x 128 dims, every layout x precision, median of 25
# after 3 warm-up (--quick: the first shape, one variant).
if [ $quick = 1 ]; then
  rope_variants="half:fp32" rope_reps=(--reps 5 --warmup 1)
else
  rope_variants="half:fp32 half:table half:precise interleaved:fp32 interleaved:table interleaved:precise"
  rope_reps=(--reps 25 --warmup 3)
fi
for v in $rope_variants; do
  lay=${v%%:*} prec=${v#*:}
  step "rope_${lay}_$prec" 1 60 "bench/rope-$lay-$prec.json" -- bench rope --device "$bench_dev" \
    --tokens 65536 --heads 1 --head-dim 128 --layout "$lay" --precision "$prec" "${rope_reps[@]}" --json
done
if [ $quick = 0 ]; then
  for v in $rope_variants; do
    lay=${v%%:*} prec=${v#*:}
    step "rope_4096x32_${lay}_$prec" 1 60 "bench/rope-4096x32-$lay-$prec.json" -- bench rope \
      --device "$bench_dev" --tokens 4096 --heads 32 --head-dim 128 --layout "$lay" \
      --precision "$prec" "${rope_reps[@]}" --json
  done
fi

# bench attention at the README's shapes (statistics only unless "output").
if [ $quick = 1 ]; then
  attn_runs=("attn_4096_d128_causal:--tokens 4096 --head-dim 128 --causal --reps 1")
else
  attn_runs=("attn_16384_d128_causal:--tokens 16384 --head-dim 128 --causal"
             "attn_16384_d128_causal_fp16:--tokens 16384 --head-dim 128 --causal --fp16"
             "attn_16384_d128_causal_output:--tokens 16384 --head-dim 128 --causal --output"
             "attn_16384_d128_causal_output_fp16:--tokens 16384 --head-dim 128 --causal --output --fp16"
             "attn_16384_d128_bidir:--tokens 16384 --head-dim 128"
             "attn_16384_d64_causal:--tokens 16384 --head-dim 64 --causal")
fi
for r in "${attn_runs[@]}"; do
  name=${r%%:*}
  read -r -a args <<< "${r#*:}"
  step "$name" 1 90 "bench/attention-${name#attn_}.json" -- bench attention --device "$bench_dev" \
    "${args[@]}" --json
done

# Long runs: only when the 16384-token causal run predicts they fit
# (attention work grows as N^2).
long_notes=()
base=$tmp/bench/attention-16384_d128_causal.json
base_ms=""
[ -f "$base" ] && base_ms=$(jget "$base" results.0.kernel.ms.median)
for n in 131072 1000000; do
  name=attn_${n}_d128_causal_single
  file=bench/attention-${n}_d128_causal_single.json
  if [ $quick = 1 ]; then
    long_notes+=("$n tokens: skipped (--quick)"); continue
  fi
  case $base_ms in ''|null|-) long_notes+=("$n tokens: skipped (no 16384-token measurement to estimate from)"); continue ;; esac
  est=$(awk -v t="$base_ms" -v n="$n" 'BEGIN { printf "%.0f", t * (n / 16384.0) ^ 2 / 1000 }')
  if [ "$est" -gt "$long_budget" ]; then
    long_notes+=("$n tokens: skipped (estimated $est s of GPU time from the 16384-token run, over --long-budget $long_budget s)")
    continue
  fi
  if [ $((est * 2 + 30)) -gt $(($(left) - 10)) ]; then
    long_notes+=("$n tokens: skipped (estimated $est s; $(left) s left of --time-limit)")
    continue
  fi
  step "$name" 0 $((est * 3 + 60)) "$file" -- bench attention --device "$bench_dev" --tokens "$n" \
    --head-dim 128 --causal --single --json
  case $last_rc in
    0) long_notes+=("$n tokens: measured (estimate was $est s)") ;;
    1) long_notes+=("$n tokens: FAILED verification"); failed+=("$name (verification)") ;;
    *) long_notes+=("$n tokens: not measured ($(grep -m1 . "$tmp/logs/$name.log" || echo "exit $last_rc"))") ;;
  esac
done

# ---- summary.txt -----------------------------------------------------------
{
  echo "ropelab device check ($([ $quick = 1 ] && echo "--quick: smoke-test shapes, not the README's" || echo "README shapes"))"
  echo "date      : $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(uname -n), $(uname -srm)"
  echo "ropelab   : $(cat "$tmp/version.txt" 2>/dev/null) ($bin)"
  dj=$tmp/devices.json
  i=0
  while [ -n "$(jget "$dj" "$i.name")" ]; do
    echo "device $i  : $(jget "$dj" "$i.name") [$(jget "$dj" "$i.type")], driver $(jget "$dj" "$i.driver_name") $(jget "$dj" "$i.driver_version_decoded") ($(jget "$dj" "$i.driver_id")), Vulkan $(jget "$dj" "$i.api_version"), UUID $(jget "$dj" "$i.device_uuid")"
    i=$((i + 1))
  done
  cj=$tmp/check.json
  if [ -s "$cj" ]; then
    rows=$(flat "$cj" | grep -cE '^devices\.[0-9]+\.results\.[0-9]+\.kernel	')
    npass=$(flat "$cj" | grep -cE '^devices\.[0-9]+\.results\.[0-9]+\.pass	true')
    nskip=$(flat "$cj" | grep -cE '^devices\.[0-9]+\.results\.[0-9]+\.skipped	true')
    echo "check     : $( [ "$(jget "$cj" pass)" = true ] && echo pass || echo FAIL ), $rows rows on --device $check_dev: $npass passed, $nskip skipped (unsupported), $((rows - npass - nskip)) failed; validation layer $(flat "$cj" | awk -F'\t' '$1 ~ /^devices\.[0-9]+\.validation$/ {print ($2 == "true" ? "on" : "off"); exit}'); check $check_mode"
  else
    echo "check     : no result (see logs/check.log)"
  fi
  echo
  for shape in 65536x1 4096x32; do
  [ $quick = 1 ] && [ $shape = 4096x32 ] && continue
  echo "bench rope, ${shape%x*} tokens x ${shape#*x} head(s) x 128 dims, GPU timestamps (rope vs copy of the same bytes, same run):"
  printf '  %-22s %-28s %-28s %s\n' "layout/precision" "rope median ms (GB/s)" "copy median ms (GB/s)" "rope/copy"
  for v in $rope_variants; do
    f=$tmp/bench/rope-${v%%:*}-${v#*:}.json
    [ $shape = 4096x32 ] && f=$tmp/bench/rope-4096x32-${v%%:*}-${v#*:}.json
    if [ "$(jget "$f" results.0.pass)" = true ]; then
      printf '  %-22s %-28s %-28s %s   (%s runs, min..max rope %s..%s ms)\n' "${v%%:*} ${v#*:}" \
        "$(num "$(jget "$f" results.0.kernel.ms.median)" %.3f) ($(num "$(jget "$f" results.0.kernel.gb_per_s)" %.2f))" \
        "$(num "$(jget "$f" results.0.yardstick.ms.median)" %.3f) ($(num "$(jget "$f" results.0.yardstick.gb_per_s)" %.2f))" \
        "$(num "$(jget "$f" results.0.ratio.value)" %.3f)" "$(jget "$f" results.0.timing.reps)" \
        "$(num "$(jget "$f" results.0.kernel.ms.min)" %.3f)" "$(num "$(jget "$f" results.0.kernel.ms.max)" %.3f)"
    else
      printf '  %-22s FAILED or not run (%s)\n' "${v%%:*} ${v#*:}" "$(jget "$f" results.0.error)"
    fi
  done
  echo
  done
  echo "bench attention, 1 head, fp32 unless fp16, statistics only unless output (vs the FMA peak measured in the same run):"
  printf '  %-32s %-14s %-10s %-10s %s\n' "shape" "GPU ms median" "GFLOP/s" "FMA peak" "ratio"
  attn_files=()
  for r in "${attn_runs[@]}"; do attn_files+=("$tmp/bench/attention-${r%%:*}.json"); done
  attn_files=("${attn_files[@]/attention-attn_/attention-}" "$tmp"/bench/attention-*_single.json)
  for f in "${attn_files[@]}"; do
    [ -f "$f" ] || continue
    label=$(basename "$f" .json); label=${label#attention-}
    if [ "$(jget "$f" results.0.pass)" = true ]; then
      printf '  %-32s %-14s %-10s %-10s %s\n' "$label" "$(num "$(jget "$f" results.0.kernel.ms.median)" %.3f)" \
        "$(num "$(jget "$f" results.0.kernel.gflop_per_s)" %.2f)" "$(num "$(jget "$f" results.0.yardstick.gflop_per_s)" %.2f)" \
        "$(num "$(jget "$f" results.0.ratio.value)" %.3f)"
    else
      printf '  %-32s FAILED or not run (%s)\n' "$label" "$(jget "$f" results.0.error)"
    fi
  done
  for l in "${long_notes[@]+"${long_notes[@]}"}"; do echo "  long run, $l"; done
  echo
  echo "steps (steps.tsv):"
  column -t -s "$(printf '\t')" "$tmp/steps.tsv" 2>/dev/null | sed 's/^/  /' || sed 's/^/  /' "$tmp/steps.tsv"
  echo
  total=$(($(date +%s) - t0))
  if [ ${#failed[@]} -eq 0 ] && [ $verify_fail = 0 ]; then
    echo "result: PASS ($total s wall of --time-limit $time_limit s)"
  else
    echo "result: FAIL ($total s wall of --time-limit $time_limit s)"
    [ $verify_fail = 1 ] && echo "  a check row or a verification failed (see check.json / bench/*.json)"
    for x in "${failed[@]+"${failed[@]}"}"; do echo "  $x"; done
  fi
} > "$tmp/summary.txt" 2>&1

# ---- publish ---------------------------------------------------------------
find "$tmp/logs" -type f -empty -delete 2>/dev/null
[ -d "$out" ] && rmdir "$out" 2>/dev/null
mv "$tmp" "$out" || die "could not rename $tmp to $out"
if [ -n "$tarfile" ]; then
  tt=$tarfile.tmp-$$
  if tar -czf "$tt" -C "$(dirname "$out")" "$(basename "$out")" && mv "$tt" "$tarfile"; then :; else
    rm -f "$tt"; printf 'device-check: could not write %s\n' "$tarfile" >&2; failed+=("tar")
  fi
fi
cat "$out/summary.txt"
echo "device-check: results in $out${tarfile:+ and $tarfile}" >&2
[ ${#failed[@]} -eq 0 ] && [ $verify_fail = 0 ] && exit 0
exit 1
