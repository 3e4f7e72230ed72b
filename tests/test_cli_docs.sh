#!/usr/bin/env bash
# The man page and the bash completion cover the whole CLI (issue 16): every
# command (and `bench attention`) and every option its --help lists, and
# every option declared in src/cli/ (read from the source, not from the
# binary); the page renders; the completion loads and completes option
# values from the same lists `ropelab encodings` shows (precision, layout,
# rope type, encodings); `encodings` shows rope's real types and defaults.
# usage: test_cli_docs.sh ROPELAB ROPELAB.1 COMPLETION SOURCE_DIR
set -u
bin=$1 man=$2 comp=$3 src=$4
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"

cmds=$("$bin" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
[ "$(wc -w <<<"$cmds")" -ge 11 ] && ok || bad "ropelab --help lists too few commands: $cmds"

# The section of the man page for "ropelab WORDS".
section() { awk -v h=".SS \"ropelab $1\"" '$0 == h {on = 1; next} /^\.S[SH] / {on = 0} on' "$man"; }
# The completion's opts for case label WORDS.
comp_opts() { awk -v h="    '$1')" '$0 == h {on = 1; next} on && /^        opts=/ {print; exit}' "$comp"; }
# The options `--help` lists.
help_opts() { "$bin" "$@" --help | awk '/^  --/ {print $1}'; }

for c in $cmds "bench attention"; do
  s=$(section "$c")
  [ -n "$s" ] && ok || { bad "man: no section for 'ropelab $c'"; continue; }
  o=$(comp_opts "$c")
  [ -n "$o" ] && ok || bad "completion: no case for '$c'"
  # shellcheck disable=SC2086
  for opt in $(help_opts $c); do
    roff=${opt//-/\\-}
    grep -qxF -- ".B $roff" <<<"$s" || grep -qF -- ".BI $roff \" " <<<"$s" ||
      bad "man: 'ropelab $c' lacks $opt"
    grep -qE -- "[' ]$opt[ ']" <<<"$o" || bad "completion: '$c' lacks $opt"
  done
done

# Every option declared in the CLI's sources, independently of the binary.
declared=$(grep -ho '{"--[a-z0-9-]*", CLI_' "$src"/src/cli/*.c | sed 's/{"\(--[^"]*\)".*/\1/' | sort -u)
[ "$(wc -w <<<"$declared")" -ge 50 ] && ok || bad "too few declared options found: $declared"
for opt in $declared; do
  grep -qF -- "${opt//-/\\-}" "$man" || bad "man: $opt (declared in src/cli) missing"
  grep -qE -- "[' ]$opt[ ')]" "$comp" || bad "completion: $opt (declared in src/cli) missing"
done

# The page renders without warnings.
if command -v groff > /dev/null; then
  w=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
  [ -z "$w" ] && ok || bad "groff warnings: $w"
fi
if command -v man > /dev/null; then
  r=$(MANWIDTH=80 man -l "$man" 2>&1)
  grep -q 'ropelab bench attention' <<<"$r" && grep -q -- '--precision' <<<"$r" && ok ||
    bad "man -l: $r"
fi

# The completion loads and completes from the registry's lists.
complete_words() { # WORD... (the last one is being completed)
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ropelab
           printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$comp" "$@"
}
c=$(bash -c ". '$comp' && complete -p ropelab" 2>&1)
[ "$c" = "complete -F _ropelab ropelab" ] && ok || bad "complete -p: $c"
enc=$("$bin" encodings --json)
choices() { # KEY: the rope parameter's choices, sorted
  python3 -c 'import json, sys
d = [e for e in json.load(sys.stdin) if e["name"] == "rope"][0]
p = [p for p in d["params"] if p["key"] == sys.argv[1]][0]
print(" ".join(sorted(p["choices"])) + " ")' "$1" <<<"$enc"
}
want=$(choices precision)
[ "$(complete_words ropelab bench --precision '')" = "$want" ] && ok || bad "bench --precision: $(complete_words ropelab bench --precision '') want $want"
[ "$(complete_words ropelab apply --precision '')" = "$want" ] && ok || bad "apply --precision"
[ "$(complete_words ropelab bench --layout '')" = "$(choices layout)" ] && ok || bad "bench --layout"
[ "$(complete_words ropelab freqs --rope-type '')" = "$(choices rope_type)" ] && ok ||
  bad "freqs --rope-type: $(complete_words ropelab freqs --rope-type '')"
names=$(python3 -c 'import json, sys; print(" ".join(sorted(e["name"] for e in json.load(sys.stdin))) + " ")' <<<"$enc")
[ "$(complete_words ropelab inspect '')" = "$names" ] && ok || bad "inspect ENCODING: $(complete_words ropelab inspect '')"
[ "$(complete_words ropelab apply --encoding '')" = "$names" ] && ok || bad "apply --encoding"
[ "$(complete_words ropelab run --device '')" = "all auto " ] && ok || bad "run --device"
[ "$(complete_words ropelab bench '')" = "attention rope " ] && ok || bad "bench SUB"
[ "$(complete_words ropelab bench attention --ca)" = "--causal " ] && ok || bad "bench attention --ca"
w=$(complete_words ropelab '')
for c in $cmds help; do grep -qw -- "$c" <<<"$w" || bad "command $c not completed"; done

# encodings: rope's parameters with their real types and defaults.
expect "encodings: rope_theta" 0 'rope_theta +number in \[1, 1.099511628e\+12\]; default 10000' -- encodings
expect "encodings: factor's plausibility bound" 0 'factor +number in \[1, 1048576\]' -- encodings
expect "encodings: rope_type" 0 'rope_type +enum default\|linear\|ntk\|dynamic\|yarn\|llama3\|longrope\|proportional\|dynamic_yarn\|truncated; default default' -- encodings
expect "encodings: truncate" 0 'truncate +bool; default true' -- encodings
untyped=$(python3 -c 'import json, sys
d = [e for e in json.load(sys.stdin) if e["name"] == "rope"][0]
print(" ".join(p["key"] for p in d["params"] if p["type"] == "json" and not p["help"].startswith("list of ")))' <<<"$enc")
[ -z "$untyped" ] && ok || bad "rope keys without a real type: $untyped"

# ENVIRONMENT names every variable the sources read (their getenv calls,
# read from src/, not a second list), and EXIT STATUS the signal codes.
envsec=$(awk '/^\.SH ENVIRONMENT/ {on = 1; next} /^\.SH / {on = 0} on' "$man")
vars=$(grep -rhoE 'getenv\("[A-Z_]+"\)' "$src/src" | sed -E 's/getenv\("([A-Z_]+)"\)/\1/' | sort -u)
[ "$(wc -w <<<"$vars")" -ge 8 ] && ok || bad "found too few getenv calls in src/: $vars"
missing_env=""
for v in $vars; do grep -qw -- "$v" <<<"$envsec" || missing_env="$missing_env $v"; done
[ -z "$missing_env" ] && ok || bad "man ENVIRONMENT lacks:$missing_env"
awk '/^\.SH EXIT STATUS/ {getline; print}' "$man" | grep -q '130 and 143' && ok ||
  bad "man EXIT STATUS does not name 130/143"

echo "cli_docs: $pass passed, $fail failed"
[ $fail -eq 0 ]
