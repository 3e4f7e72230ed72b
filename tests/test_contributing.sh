#!/usr/bin/env bash
# CONTRIBUTING.md's recipes are true (issue 28): "Adding a RoPE scaling" and
# "Adding an attention method" are read for what they claim, and each claim
# is checked against the tree, reading the registries themselves (no second
# copy of them here):
#  - the entry step (**`DIR/NAME.c`** (new): one `const TYPE PREFIXNAME`),
#    the list step (**`FILE`**: one `X(NAME) \` line in `MACRO`) and the
#    meson step (**`meson.build`**: one `'DIR/NAME.c',` line in `VAR`): for
#    every X(NAME) of MACRO in FILE, DIR/NAME.c exists and defines
#    `const TYPE PREFIXNAME`, meson.build's VAR lists it; no DIR/*.c and no
#    VAR line of DIR is missing from MACRO; no name twice;
#  - the registry header it names exists and every field of TYPE is named in
#    the entry step (n_X with X);
#  - every backquoted path exists (a bare file name somewhere in the tree),
#    every backquoted C name is a word of src/, shaders/, tests/, tools/ or
#    meson.build, a kebab-case spelling is a string in src/, and a name that
#    exists only in tests/ is a registered test (START_TEST + tcase_add_*,
#    or a shell `expect NAME`) of a tests/ file its paragraph cites.
# Control: the same check on a copy of the tree with one planted
# inconsistency each (a listed name without its file, a file not listed, a
# meson line dropped, a wrong symbol, a cited test renamed away, a field the
# recipe does not name) must fail, naming it.
# usage: test_contributing.sh SOURCE_DIR     (exit 0 all hold, 1 any fails)
set -u
src=$(cd "${1:-.}" && pwd)
pass=0 fail=0
suite_name=contributing
. "$(dirname "$0")/expect_lib.sh"

# check DIR: prints "CONTRIBUTING: ..." lines, exit 1 on any broken claim.
check() {
python3 - "$1" <<'PY'
import glob, os, re, sys

os.chdir(sys.argv[1])
errors, checked = [], [0]
doc = open("CONTRIBUTING.md", encoding="utf-8").read()
CODE_DIRS = ("src", "shaders", "tests", "tools")


def read(p):
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()


def files_under(*dirs):
    for d in dirs:
        for dp, _, names in os.walk(d):
            for n in sorted(names):
                yield os.path.join(dp, n)


def words_of(paths):
    w = set()
    for p in paths:
        w.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", read(p)))
    return w


code_words = words_of(list(files_under("src", "shaders", "tools")) + ["meson.build"])
test_words = words_of(files_under("tests"))
src_text = "\n".join(read(p) for p in files_under("src"))
all_files = list(files_under(*CODE_DIRS, "docs")) + ["meson.build", "README.md"]

# registered tests: C Check tests and shell expect names, by file
tests_in = {}
for p in sorted(glob.glob("tests/*.c")):
    t = read(p)
    for n in re.findall(r"^\s*START_TEST\((\w+)\)", t, re.M):
        if re.search(r"tcase_add_(?:loop_)?test\w*\(\s*\w+\s*,\s*" + n + r"\b", t):
            tests_in.setdefault(n, set()).add(p)
for p in sorted(glob.glob("tests/*.sh")):
    for n in re.findall(r"^\s*expect(?:_num)?\s+(\w+)\s", read(p), re.M):
        tests_in.setdefault(n, set()).add(p)


def err(where, msg):
    errors.append(f'CONTRIBUTING.md "{where}": {msg}')


def section(title):
    m = re.search(r"^## " + re.escape(title) + r"\s*$", doc, re.M)
    if not m:
        err(title, "no such section")
        return ""
    rest = doc[m.end():]
    n = re.search(r"^## ", rest, re.M)
    return rest[:n.start()] if n else rest


def struct_fields(text, typ):
    m = re.search(r"typedef struct (?:\w+ )?\{((?:(?!typedef).)*?)\} " + re.escape(typ) + r";", text, re.S)
    if not m:
        return None
    body = re.sub(r"/\*.*?\*/", " ", m.group(1), flags=re.S)
    out = []
    for decl in body.split(";"):
        if not decl.strip():
            continue
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
        plain = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", decl.strip())
        out.append(fp.group(1) if fp else plain.group(1) if plain else "?")
    return out


def registry(title, sec):
    """The structured claims: entry file, list line, meson line."""
    flat = re.sub(r"\s+", " ", sec)
    entry = re.search(r"\*\*`(src/(?:\w+/)+)NAME\.c`\*\* \(new\): one `const (\w+) (\w+)NAME = \{\.\.\.\}`", flat)
    lst = re.search(r"\*\*`([\w/.]+)`\*\*: one `X\(NAME\) \\` line in `(\w+)`", flat)
    mes = re.search(r"\*\*`meson\.build`\*\*: one `'(src/(?:\w+/)+)NAME\.c',` line in `(\w+)`", flat)
    hdr = re.search(r"one entry of the [\w ]*registry, `([\w/.]+\.h)`", flat)
    for what, m in (("the entry step (**`DIR/NAME.c`** (new): one `const TYPE PREFIXNAME = {...}`)", entry),
                    ("the list step (**`FILE`**: one `X(NAME) \\` line in `MACRO`)", lst),
                    ("the meson step (**`meson.build`**: one `'DIR/NAME.c',` line in `VAR`)", mes),
                    ("the registry header (one entry of the ... registry, `HEADER`)", hdr)):
        if not m:
            err(title, f"cannot read {what}; the recipe changed its form: update this test with it")
    if not (entry and lst and mes and hdr):
        return
    d, typ, prefix = entry.groups()
    list_file, macro = lst.groups()
    mdir, var = mes.groups()
    header = hdr.group(1)
    checked[0] += 4
    if mdir != d:
        err(title, f"the meson step's folder {mdir} is not the entry step's {d}")
    if not os.path.isfile(header):
        err(title, f"the registry header {header} does not exist")
    else:
        fields = struct_fields(read(header), typ)
        if fields is None:
            err(title, f"{header} defines no `typedef struct ... {{...}} {typ};`")
        else:
            step1 = flat[entry.start():lst.start()] if lst.start() > entry.start() else flat[entry.start():]
            named = set(re.findall(r"`([A-Za-z_]\w*)(?:\[\])?`", step1))
            for f in fields:
                checked[0] += 1
                if f not in named and not (f.startswith("n_") and f[2:] in named):
                    err(title, f"{typ}.{f} ({header}) is not named in the entry step")
    if not os.path.isfile(list_file):
        err(title, f"{list_file} (the list step) does not exist")
        return
    m = re.search(r"#define\s+" + macro + r"\(X\)[ \t]*\\\n((?:[ \t]*X\(\w+\)[ \t]*\\\n)*)", read(list_file))
    if not m:
        err(title, f"{list_file} defines no `#define {macro}(X)` of X(name) lines")
        return
    names = re.findall(r"X\((\w+)\)", m.group(1))
    if not names:
        err(title, f"{macro} in {list_file} lists nothing")
    for n in sorted(set(x for x in names if names.count(x) > 1)):
        err(title, f"{macro} lists {n} twice")
    mb = re.search(r"^" + var + r"\s*=\s*files\((.*?)^\)", read("meson.build"), re.S | re.M)
    if not mb:
        err(title, f"meson.build has no `{var} = files(...)`")
    block = mb.group(1) if mb else ""
    for n in names:
        checked[0] += 3
        path = f"{d}{n}.c"
        if not os.path.isfile(path):
            err(title, f"{macro} ({list_file}) lists {n}, but {path} does not exist")
        elif not re.search(r"^\s*const\s+" + typ + r"\s+" + prefix + n + r"\s*=", read(path), re.M):
            err(title, f"{path} does not define `const {typ} {prefix}{n}`")
        if f"'{path}'," not in block:
            err(title, f"meson.build's {var} does not list '{path}',")
    for path in sorted(glob.glob(d + "*.c")):
        checked[0] += 1
        stem = os.path.basename(path)[:-2]
        if stem not in names:
            err(title, f"{path} exists but {macro} ({list_file}) does not list {stem}")
    for stem in re.findall(r"'" + re.escape(d) + r"(\w+)\.c'", block):
        if stem not in names:
            err(title, f"meson.build's {var} lists {d}{stem}.c, which {macro} does not")


PATHISH = re.compile(r"^[\w./*-]+\.(?:c|h|md|py|sh|comp|glsl|build|json|yaml)(?:#[\w-]+)?$|^(?:src|tests|shaders|docs|tools|scripts)/[\w./*-]*$")


def references(title, sec):
    """Every backquoted path and name of the section, paragraph by paragraph."""
    for para in re.split(r"\n\s*\n", sec):
        cited_tests = set(re.findall(r"tests/[\w.]+", para))
        for span in re.findall(r"`([^`]+)`", re.sub(r"\s+", " ", para)):
            s = span.strip()
            if "NAME" in s or s.startswith("X("):
                continue                                   # templates: registry() checks them
            if PATHISH.match(s):
                p = s.split("#")[0]
                checked[0] += 1
                if "/" in p:
                    if not (glob.glob(p) if "*" in p else os.path.exists(p)):
                        err(title, f"`{s}` does not exist")
                elif not any(os.path.basename(f) == p for f in all_files):
                    err(title, f"`{s}` is no file of the tree")
                continue
            if re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", s):
                checked[0] += 1
                if f'"{s}"' not in src_text:
                    err(title, f'`{s}` is no string in src/')
                continue
            if not re.fullmatch(r"[A-Za-z_][\w.]*(?:\[\])?(?:\(\))?|[A-Z][A-Z0-9_]*_\*", s):
                continue                                   # command lines, flags, prose
            if s.endswith("_*"):
                checked[0] += 1
                if not any(w.startswith(s[:-1]) for w in code_words):
                    err(title, f"`{s}`: no name of src/ starts with {s[:-1]}")
                continue
            for name in re.findall(r"[A-Za-z_]\w*", s):
                checked[0] += 1
                if name in code_words:
                    continue
                if name not in test_words:
                    err(title, f"`{name}` is named nowhere in src/, shaders/, tests/, tools/ or meson.build")
                elif name not in tests_in:
                    err(title, f"`{name}` is no registered test (START_TEST + tcase_add_*, or a shell expect) in tests/")
                elif cited_tests and not (tests_in[name] & cited_tests):
                    err(title, f"`{name}` is a test of {', '.join(sorted(tests_in[name]))}, "
                               f"not of {', '.join(sorted(cited_tests))} its paragraph cites")


for title in ("Adding a RoPE scaling", "Adding an attention method"):
    sec = section(title)
    if sec:
        registry(title, sec)
        references(title, sec)

for e in errors:
    print("CONTRIBUTING:", e)
print(f"contributing: {checked[0]} claims checked, {len(errors)} broken")
sys.exit(1 if errors else 0)
PY
}

out=$(check "$src" 2>&1); rc=$?
printf '%s\n' "$out"
[ $rc -eq 0 ] && ok || bad "CONTRIBUTING.md's recipes disagree with the tree (above)"

# --- control: each planted inconsistency fails, named ---------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# plant NAME PATTERN CMD...: CMD edits a fresh copy (cwd); the check must
# exit 1 and print PATTERN (an extended regex).
plant() {
  local name=$1 pat=$2; shift 2
  rm -rf "$tmp/tree" && mkdir "$tmp/tree" &&
    cp -R "$src/CONTRIBUTING.md" "$src/meson.build" "$src/README.md" "$src/src" "$src/tests" \
      "$src/shaders" "$src/tools" "$src/docs" "$tmp/tree/" || { bad "plant $name: copy failed"; return; }
  (cd "$tmp/tree" && "$@") || { bad "plant $name: the edit failed"; return; }
  local o r
  o=$(check "$tmp/tree" 2>&1); r=$?
  if [ $r -eq 1 ] && grep -qE -- "$pat" <<<"$o"; then
    ok
  else
    bad "plant $name: exit $r (want 1) without /$pat/:"$'\n'"$o"
  fi
}
plant listed_without_file 'lists planted, but src/pe/scaling/planted\.c does not exist' \
  sed -i 's/^    X(truncated) \\$/&\n    X(planted) \\/' src/pe/rope_scaling.c
plant file_not_listed 'src/attn/remap/stray\.c exists but ATTN_REMAP_LIST' \
  cp src/attn/remap/dca.c src/attn/remap/stray.c
plant meson_line_dropped "meson.build's pe_src does not list 'src/pe/scaling/ntk\.c'" \
  sed -i "/'src\/pe\/scaling\/ntk.c',/d" meson.build
plant wrong_symbol 'src/attn/remap/rerope\.c does not define `const attn_remap_method attn_remap_rerope`' \
  sed -i 's/attn_remap_rerope =/attn_remap_re_rope =/' src/attn/remap/rerope.c
plant cited_test_renamed '`registry_entries_are_complete_and_listed` is no registered test' \
  sed -i 's/registry_entries_are_complete_and_listed)/registry_entries_are_listed)/' tests/test_remap.c
plant field_not_named 'rope_scaling\.planted_field \(src/pe/rope_scaling\.h\) is not named' \
  sed -i 's/^} rope_scaling;$/    int planted_field;\n&/' src/pe/rope_scaling.h
finish
