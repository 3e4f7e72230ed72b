#!/bin/bash
# Submits the array job and the merge job that waits for it.
# usage: scripts/slurm/submit.sh BATCH.yaml [RESULTS_DIR] [extra sbatch options for the array]
# e.g.   scripts/slurm/submit.sh experiments/quickstart.yaml results/qs --array=0-3
set -euo pipefail
batch=${1:?usage: submit.sh BATCH.yaml [RESULTS_DIR] [sbatch options]}
results=${2:-results/$(basename "$batch" .yaml)-$(date +%Y%m%d-%H%M%S)}
shift $(($# >= 2 ? 2 : 1))
export BATCH=$batch RESULTS=$results
# --parsable prints "jobid" or "jobid;cluster"
ARRAY_JOB_ID=$(sbatch --parsable --export=ALL "$@" scripts/slurm/array.sbatch)
ARRAY_JOB_ID=${ARRAY_JOB_ID%%;*}
MERGE_JOB_ID=$(sbatch --parsable --export=ALL --dependency=afterok:"$ARRAY_JOB_ID" \
  scripts/slurm/merge.sbatch)
echo "array job $ARRAY_JOB_ID, merge job ${MERGE_JOB_ID%%;*}; results in $results/merged"
