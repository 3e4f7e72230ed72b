#!/usr/bin/env bash
# No broken reference in the documentation (issue 28): in README.md,
# CONTRIBUTING.md, docs/*.md and experiments/**/README.md every relative
# markdown link [x](path#anchor) names a file that exists (an anchor: a
# heading of the target with that GitHub slug), every backquoted repository
# path (`docs/x.md`, `src/pe/x.c`, `scripts/y.sh`, `tests/z.sh`, ...; globs
# must match something, NAME-style placeholders are skipped) exists, and a
# docs/X.md "Section" citation names a heading of X. In the sources (src/,
# shaders/, tools/: comments and string literals; scripts/, .ci/) every
# docs/... path, bare X.md name and README/docs "Section" citation resolves,
# and no user-facing string literal in src/ names a C function (rl_fail and
# printf messages are read by users, not by programmers).
# usage: test_links.sh SOURCE_DIR     (exit 0 all resolve, 1 any broken)
set -u
src=${1:-.}
exec python3 - "$src" <<'PY'
import glob, os, re, sys

root = os.path.abspath(sys.argv[1])
os.chdir(root)
PREFIXES = ("docs/", "src/", "scripts/", "tests/", "shaders/", "configs/",
            "experiments/", "tools/", ".ci/")
broken, checked = [], 0
slug_cache = {}


def slugs(path):
    """GitHub's heading anchors of a markdown file, and the heading texts."""
    if path in slug_cache:
        return slug_cache[path]
    seen, out, texts, fence = {}, set(), [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
            t = t.replace("`", "").replace("*", "")
            texts.append(t)
            s = re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-")
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    slug_cache[path] = (out, texts)
    return slug_cache[path]


def bad(where, what):
    broken.append(f"{where}: {what}")


def check_section(where, md, section):
    """A "Section" citation of md: some heading starts with that text."""
    global checked
    checked += 1
    if not os.path.isfile(md):
        bad(where, f"{md} (cited for \"{section}\") does not exist")
        return
    _, texts = slugs(md)
    want = section.lower().rstrip(".")
    if not any(t.lower().startswith(want) or want in t.lower() for t in texts):
        bad(where, f"{md} has no heading \"{section}\"")


PLACEHOLDER = re.compile(r"(?<![A-Za-z])(?!README|CONTRIBUTING|LICENSE)[A-Z][A-Z0-9_]{1,}(?![a-z])|[<>{}$]|\.\.\.|…")


def check_path(where, p):
    """A repository path (relative to the root); globs must match."""
    global checked
    p = p.rstrip(".,;:)'\"")
    p, _, anchor = p.partition("#")
    if not p or PLACEHOLDER.search(p):
        return
    checked += 1
    if any(c in p for c in "*?["):
        if not glob.glob(p, recursive=True):
            bad(where, f"`{p}` matches no file")
        return
    if not os.path.exists(p):
        bad(where, f"`{p}` does not exist")
    elif anchor and p.endswith(".md") and anchor not in slugs(p)[0]:
        bad(where, f"`{p}#{anchor}`: no such heading")


PATH_RE = re.compile(r"(?<![\w/.:-])((?:" + "|".join(re.escape(x) for x in PREFIXES) +
                     r")[\w./*?#\[\]<>{}-]*)")
SECTION_RE = re.compile(r"((?:docs/)?[\w-]+\.md|README)[,:]?\s+(?:section\s+)?\"([^\"\n]{3,80})\"")


def scan_markdown(md):
    global checked
    fence = False
    base = os.path.dirname(md)
    for no, line in enumerate(open(md, encoding="utf-8"), 1):
        where = f"{md}:{no}"
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        code = re.findall(r"`([^`]+)`", line)
        prose = re.sub(r"`[^`]*`", "``", line)
        for text, target in re.findall(r"\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose):
            if re.match(r"[a-z]+:", target):
                continue                      # http:, https:, mailto:
            checked += 1
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else md
            if not os.path.exists(full):
                bad(where, f"link [{text}]({target}): {full} does not exist")
            elif anchor and full.endswith(".md") and anchor not in slugs(full)[0]:
                bad(where, f"link [{text}]({target}): {full} has no heading #{anchor}")
        for c in code:
            for p in PATH_RE.findall(" " + c):
                check_path(where, p)
        for m in SECTION_RE.finditer(re.sub(r"`([^`]*)`", r"\1", line)):
            name = m.group(1)
            md_path = "README.md" if name == "README" else name
            if not md_path.startswith("docs/") and not os.path.exists(md_path):
                md_path = os.path.normpath(os.path.join(base, md_path))
            check_section(where, md_path, m.group(2))


def scan_source(path, c_like):
    global checked
    text = open(path, encoding="utf-8", errors="replace").read()
    text = text.replace("\\n", " ")            # "...\nREADME.md" in a literal
    for no, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{no}"
        for p in re.findall(r"(?<![\w/.-])(docs/[\w./-]*\.md)", line):
            check_path(where, p)
        for p in re.findall(r"(?<![\w/.-])([\w-]+\.md)\b", line):
            if p in ("README.md", "CONTRIBUTING.md", "report.md"):   # report.md: a run's output
                continue
            checked += 1
            if not (os.path.isfile(os.path.join("docs", p)) or os.path.isfile(p)):
                bad(where, f"{p} is not a file in docs/ (nor at the top)")
        for m in SECTION_RE.finditer(line):
            name = m.group(1)
            md = "README.md" if name == "README" else (name if "/" in name else
                                                        "docs/" + name if os.path.isfile("docs/" + name) else name)
            check_section(where, md, m.group(2))
    return text


# --- the documentation -----------------------------------------------------
docs = ["README.md", "CONTRIBUTING.md"] + sorted(glob.glob("docs/*.md")) + \
    sorted(glob.glob("experiments/**/README.md", recursive=True))
for md in docs:
    if os.path.isfile(md):
        scan_markdown(md)

# --- the sources ------------------------------------------------------------
c_files = sorted(glob.glob("src/**/*.[ch]", recursive=True))
other = sorted(glob.glob("shaders/*") + glob.glob("tools/**/*.[ch]", recursive=True) +
               glob.glob("scripts/**/*.sh", recursive=True) + glob.glob("scripts/**/*.py", recursive=True) +
               glob.glob(".ci/*"))
texts = {}
for f in c_files + other:
    if os.path.isfile(f):
        texts[f] = scan_source(f, f in c_files)

# User-facing strings in src/ name no C function: the functions declared in
# src/ headers, matched in string literals as name( or name / name().
STR = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
funcs = set()
for f in c_files:
    if f.endswith(".h"):
        body = re.sub(r"/\*.*?\*/", "", texts[f], flags=re.S)
        funcs.update(n for n in re.findall(r"\b([a-z][a-z0-9]*_[a-z0-9_]+)\s*\(", body))
for f in c_files:
    body = re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: "\n" * m.group(0).count("\n"), texts[f], flags=re.S)
    for no, line in enumerate(body.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        for lit in STR.findall(line):
            for w in re.findall(r"\b([a-z][a-z0-9]*_[a-z0-9_]+)\b(\(\))?", lit):
                if w[0] in funcs and (w[1] or re.search(r"\(see [^)]*\b" + re.escape(w[0]), lit)):
                    checked += 1
                    bad(f"{f}:{no}", f"a message names the C function {w[0]}: \"{lit}\"")

for b in broken:
    print("BROKEN", b)
print(f"links: {checked} references checked in {len(docs)} documents and "
      f"{len(texts)} source files, {len(broken)} broken")
sys.exit(1 if broken else 0)
PY
