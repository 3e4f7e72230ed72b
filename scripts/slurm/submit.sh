#!/bin/bash
# Submits the array job and the merge job that waits for it.
# usage: scripts/slurm/submit.sh BATCH.yaml [RESULTS_DIR] [sbatch options...]
# e.g.   scripts/slurm/submit.sh experiments/quickstart.yaml results/qs --array=0-3 \
#          --partition=gpu --account=lab --time=04:00:00
#        ROPELAB_GRES=none scripts/slurm/submit.sh study.yaml results/s --partition=cpu
# sbatch options go to both jobs (--partition, --account, --time, --qos ...),
# except --array=..., which only the array job takes. The array job asks for
# --gres=$ROPELAB_GRES (default gpu:1, one GPU per task); on a partition
# without GPUs set ROPELAB_GRES=none (sbatch rejects gpu:1 there). The merge
# job never asks for a GPU. SBATCH (default sbatch) is the command used.
set -euo pipefail
batch=${1:?usage: submit.sh BATCH.yaml [RESULTS_DIR] [sbatch options]}
if [ $# -ge 2 ] && [ "${2#-}" = "$2" ]; then
  results=$2
  shift 2
else
  results=results/$(basename "$batch" .yaml)-$(date +%Y%m%d-%H%M%S)
  shift 1
fi
sb=${SBATCH:-sbatch}
gres=${ROPELAB_GRES:-gpu:1}
both=() array_only=()
for o in "$@"; do
  case $o in
    --array=*|-a*) array_only+=("$o") ;;
    --gres=*) echo "submit.sh: give the array's GPUs as ROPELAB_GRES=..., not $o" >&2; exit 2 ;;
    *) both+=("$o") ;;
  esac
done
export BATCH=$batch RESULTS=$results
# --parsable prints "jobid" or "jobid;cluster"
ARRAY_JOB_ID=$("$sb" --parsable --export=ALL --gres="$gres" "${both[@]}" "${array_only[@]}" \
  scripts/slurm/array.sbatch)
ARRAY_JOB_ID=${ARRAY_JOB_ID%%;*}
MERGE_JOB_ID=$("$sb" --parsable --export=ALL --gres=none "${both[@]}" \
  --dependency=afterok:"$ARRAY_JOB_ID" scripts/slurm/merge.sbatch)
echo "array job $ARRAY_JOB_ID, merge job ${MERGE_JOB_ID%%;*}; results in $results/merged"
