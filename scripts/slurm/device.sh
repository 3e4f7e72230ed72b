#!/bin/bash
# Prints the `ropelab run --device` spec for the GPU Slurm allocated.
#   ROPELAB_DEVICE set: that (e.g. "all", "1", "radeon").
#   CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / ZE_AFFINITY_MASK holding an
#   index (Slurm's usual "0" or "2,3"): the first index, as a Vulkan device
#   index. With cgroup device constraints (ConstrainDevices=yes) the task's
#   GPU is the only one the driver shows, index 0; without them the index
#   is Slurm's, which matches the Vulkan order only when both enumerate by
#   PCI bus (check with `ropelab devices` on the node).
#   Holding a full UUID (32 hex digits, "GPU-8a2f0c1e-...", NVIDIA's form):
#   "uuid:<it>", matched against each Vulkan device's deviceUUID (on NVIDIA
#   that is the UUID nvidia-smi -L prints; not checked on NVIDIA hardware
#   here). A shorter id (ROCm's "GPU-<16 hex>" is not a Vulkan deviceUUID):
#   "auto" (the first discrete GPU), right when cgroups hide the others.
#   Nothing set: "auto".
set -u
if [ -n "${ROPELAB_DEVICE:-}" ]; then echo "$ROPELAB_DEVICE"; exit 0; fi
for var in CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES ZE_AFFINITY_MASK; do
  v=${!var:-}
  [ -n "$v" ] || continue
  first=${v%%,*}
  first=${first%%.*}  # ZE_AFFINITY_MASK's "0.1" is device 0, sub-device 1
  if [[ $first =~ ^[0-9]+$ ]]; then echo "$first"; exit 0; fi
  hex=${first#GPU-}
  hex=${hex//-/}
  if [[ $hex =~ ^[0-9a-fA-F]{32}$ ]]; then echo "uuid:$first"; exit 0; fi
  echo "ropelab: $var=$v: not an index or a Vulkan device UUID, using auto" >&2
  echo auto; exit 0
done
echo auto
