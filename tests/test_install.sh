#!/usr/bin/env bash
# An installed ropelab is whole and relocatable (issue 16): `meson install`
# into a staging directory puts the binary, presets, studies, docs, man page
# and bash completion under the prefix; the staged tree is then moved to a
# path neither the build nor the prefix knows, and that binary still finds
# its presets (it reads the moved files: a marker value edited into the
# moved preset comes back). An uninstalled binary copied together with a
# configs/ at the build dir's relative place finds it too; with the data
# directory gone, the error names every place searched. `run`, `model
# --preset` and `freqs --preset` all read presets this way. CPU only (decay).
# usage: test_install.sh MESON BUILD_DIR PREFIX SOURCE_DIR
set -u
meson=$1 build=$2 prefix=$3 src=$4
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
unset ROPELAB_CONFIG_DIR
t=$(mktemp -d /tmp/rlinstXXXX)
trap 'rm -rf "$t"' EXIT

out=$("$meson" install -C "$build" --no-rebuild --destdir "$t/stage" 2>&1); rc=$?
[ $rc -eq 0 ] || { printf 'FAIL meson install: exit %d\n%s\n' $rc "$out" >&2; exit 1; }

# 1. everything lands under the prefix
root=$t/stage$prefix
for f in bin/ropelab share/ropelab/configs/models/llama-3.1-8b.yaml \
         share/ropelab/configs/encodings/rope-bases.yaml share/ropelab/experiments/quickstart.yaml \
         share/ropelab/experiments/yarn-temperature/README.md share/doc/ropelab/README.md \
         share/doc/ropelab/docs/runner.md share/man/man1/ropelab.1 \
         share/bash-completion/completions/ropelab; do
  [ -f "$root/$f" ] && ok || bad "not installed: $prefix/$f"
done

# no absolute source path is compiled in
if grep -qaF -- "$src/configs" "$root/bin/ropelab"; then bad "the binary holds $src/configs"
else ok; fi

# 2. moved where nothing points: presets are found from the binary's own place
mv "$root" "$t/moved"
[ ! -e "$prefix/share/ropelab/configs" ] || echo "note: $prefix/share/ropelab exists here" >&2
bin=$t/moved/bin/ropelab
sed -i 's/^heads: 32$/heads: 16/' "$t/moved/share/ropelab/configs/models/llama-3.1-8b.yaml"
cat > "$t/b.yaml" <<'YAML'
model: {preset: llama-3.1-8b}
encodings: [{set: rope-bases}]
experiments:
  - kind: decay
    params: {max_distance: 16, step: 8}
YAML
expect "moved install: dry run reads the moved preset" 0 'heads=16' -- run "$t/b.yaml" --dry-run
expect "moved install: batch with preset and set runs" 0 '3 passed, 0 failed' -- \
  run "$t/b.yaml" --out "$t/o1" --quiet --no-plot
expect "moved install: the installed quickstart parses" 0 'run\(s\)' -- \
  run "$t/moved/share/ropelab/experiments/quickstart.yaml" --dry-run
expect "moved install: encodings" 0 'rope_theta' -- encodings
expect "moved install: model --preset" 0 'heads 16, kv heads 8, head_dim 128' -- \
  model --preset llama-3.1-8b
expect "moved install: freqs --preset" 0 'rope_type llama3, head_dim 128' -- \
  freqs --preset llama-3.1-8b

# 3. the installed man page renders and the completion loads
if command -v man > /dev/null; then
  m=$(MANWIDTH=80 man -l "$t/moved/share/man/man1/ropelab.1" 2>&1)
  grep -q 'ropelab bench attention' <<<"$m" && ok || bad "man -l: $m"
fi
c=$(bash -c ". '$t/moved/share/bash-completion/completions/ropelab' && complete -p ropelab" 2>&1)
[ "$c" = "complete -F _ropelab ropelab" ] && ok || bad "completion: $c"

# 4. an uninstalled binary beside a configs/ at the build dir's relative place
rel=$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
      "$src/configs" "$build")
mkdir -p "$t/tree/b"
cp "$build/ropelab" "$t/tree/b/ropelab"
mkdir -p "$(dirname "$t/tree/b/$rel")"
cp -r "$src/configs" "$t/tree/b/$rel"
sed -i 's/^heads: 32$/heads: 8/' "$t/tree/b/$rel/models/llama-3.1-8b.yaml"
bin=$t/tree/b/ropelab
expect "moved build tree: dry run reads its configs" 0 'heads=8 ' -- run "$t/b.yaml" --dry-run

# 5. nothing found: every place searched is named, exit 2
rm -rf "$t/moved/share/ropelab/configs"
bin=$t/moved/bin/ropelab
expect "no data dir: the places searched" 2 \
  "no configuration directory.*$t/moved/bin/\.\./share/ropelab/configs.*ROPELAB_CONFIG_DIR" -- \
  run "$t/b.yaml" --dry-run
expect "no data dir: model --preset" 2 "no configuration directory.*$t/moved/bin/\.\./share" -- \
  model --preset llama-3.1-8b
# ROPELAB_CONFIG_DIR wins when set, and must exist
export ROPELAB_CONFIG_DIR=$src/configs
expect "ROPELAB_CONFIG_DIR is used" 0 'heads=32' -- run "$t/b.yaml" --dry-run
export ROPELAB_CONFIG_DIR=$t/none
expect "ROPELAB_CONFIG_DIR missing" 2 "ROPELAB_CONFIG_DIR=$t/none is not a directory" -- \
  run "$t/b.yaml" --dry-run
unset ROPELAB_CONFIG_DIR

echo "install: $pass passed, $fail failed"
[ $fail -eq 0 ]
