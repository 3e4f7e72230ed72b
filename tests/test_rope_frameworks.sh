#!/usr/bin/env bash
# Runs tests/test_rope_frameworks.py (the frameworks' frequency programs,
# transcribed in torch, against `ropelab freqs --framework`) with the first
# python3 that imports torch; exit 77 (meson: SKIP) only when none does.
# usage: test_rope_frameworks.sh path/to/ropelab
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then
    exec "$py" "$(dirname "$0")/test_rope_frameworks.py" "$@"
  fi
done
echo "SKIP: no python3 with torch (install python3-torch)"
exit 77
