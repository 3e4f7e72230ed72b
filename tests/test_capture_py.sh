#!/usr/bin/env bash
# Runs tests/test_capture.py with the first python3 that imports torch (a
# pyenv shim may shadow Debian's /usr/bin/python3, which has python3-torch);
# exit 77 (meson: SKIP) only when none does.
# usage: test_capture_py.sh SOURCE_ROOT [ROPELAB]
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then
    exec "$py" "$(dirname "$0")/test_capture.py" "$@"
  fi
done
echo "SKIP: no python3 with torch (install python3-torch)"
exit 77
