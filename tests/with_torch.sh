#!/usr/bin/env bash
# Runs a Python test (tests/SCRIPT) with the first python3 that imports
# torch (a pyenv shim may shadow Debian's /usr/bin/python3, which has
# python3-torch); exit 77 (meson: SKIP) only when none does.
# usage: with_torch.sh SCRIPT [ARGS...]   (test_capture.py, test_rope_frameworks.py)
script=$1
shift
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then
    exec "$py" "$(dirname "$0")/$script" "$@"
  fi
done
echo "SKIP: no python3 with torch (install python3-torch)"
exit 77
