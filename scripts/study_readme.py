#!/usr/bin/env python3
"""Check or regenerate the generated tables and numbers of a study README.

usage: study_readme.py check  README.md RESULTS.csv [OUT]
       study_readme.py update README.md RESULTS.csv [OUT]
       study_readme.py list   README.md

A study README quotes results only through markers, each naming the command
that prints the text it holds:

  <!-- generated: python3 scripts/results_table.py RESULTS --sig 3 max_abs_error -->
  | encoding | max_abs_error |
  ...
  <!-- end generated -->

(a block: the opening comment may continue over several lines up to its
"-->"; the lines between the two markers are the command's stdout), and, for a
number in a sentence, on one line,

  ... by <!-- g: python3 scripts/readme_value.py RESULTS ratio a b -->170<!-- /g -->× ...

(inline: the command's stdout, one line, without its newline; the line must
not start with the marker, which Markdown would read as an HTML block).

In each command the word RESULTS stands for the results.csv given, and OUT
for the output directory (default: the folder holding RESULTS.csv). The
command is split like a shell would (shlex) but run without a shell, with
the repository root as its working directory and this Python as python3.
The rule: a command must be `python3 SCRIPT ARGS...` with SCRIPT a .py file
of this repository under scripts/ or experiments/ (relative path, no ..,
no symbolic link out of those folders); anything else is refused, so a
README cannot run arbitrary programs, and no shell ever sees its text.

check: exit 1 when any marker's text differs from its command's output,
naming README:LINE and showing a unified diff; exit 0 when all agree.
update: rewrite the README with every marker's text replaced by its
command's output (the file is written only when it changes).
list: print each marker's line, form (block or inline) and command, after
checking the markers and the rule; no command is run.
A README with no marker at all, a block without its end, or a command that
fails or is refused is an error (exit 2), in every mode.
"""
import concurrent.futures
import difflib
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED_DIRS = ("scripts", "experiments")
TIMEOUT_S = 300

BLOCK_OPEN = re.compile(r"^\s*<!-- generated:(.*)$")
BLOCK_END = re.compile(r"^\s*<!-- end generated -->\s*$")
INLINE = re.compile(r"<!-- g:(.*?)-->(.*?)<!-- /g -->")
PLACEHOLDER = re.compile(r"(?<![A-Za-z0-9_.])(RESULTS|OUT)(?![A-Za-z0-9_])")


class Refused(Exception):
    pass


def parse(path, lines):
    """Markers of a README: a list of dicts with form ('block'/'inline'),
    line (1-based, of the opening marker), cmd (text), and for blocks
    body_start/body_end (0-based line slice) and for inline the line index,
    the match's span and text."""
    marks = []
    i = 0
    while i < len(lines):
        m = BLOCK_OPEN.match(lines[i])
        if m:
            start, text = i, m.group(1)
            while "-->" not in text:
                i += 1
                if i == len(lines):
                    raise Refused(f"{path}:{start + 1}: '<!-- generated:' without its closing '-->'")
                text += " " + lines[i].strip()
            cmd, _, rest = text.partition("-->")
            if rest.strip():
                raise Refused(f"{path}:{i + 1}: text after the generated marker's '-->'")
            j = i + 1
            while j < len(lines) and not BLOCK_END.match(lines[j]):
                if BLOCK_OPEN.match(lines[j]):
                    raise Refused(f"{path}:{j + 1}: a generated block inside the block of line {start + 1}")
                j += 1
            if j == len(lines):
                raise Refused(f"{path}:{start + 1}: generated block without '<!-- end generated -->'")
            marks.append({"form": "block", "line": start + 1, "cmd": cmd.strip(),
                          "body_start": i + 1, "body_end": j})
            i = j + 1
            continue
        if BLOCK_END.match(lines[i]):
            raise Refused(f"{path}:{i + 1}: '<!-- end generated -->' without its block")
        if lines[i].lstrip().startswith("<!-- g:"):
            # CommonMark: a line starting with "<!--" opens an HTML block, which
            # would cut the sentence the value belongs to out of its paragraph
            raise Refused(f"{path}:{i + 1}: a line must not start with '<!-- g:' "
                          "(Markdown would make it an HTML block); put a word before it")
        for m in INLINE.finditer(lines[i]):
            marks.append({"form": "inline", "line": i + 1, "cmd": m.group(1).strip(),
                          "index": i, "span": m.span(2), "text": m.group(2)})
        if "<!-- g:" in INLINE.sub("", lines[i]):
            raise Refused(f"{path}:{i + 1}: '<!-- g:' without '-->TEXT<!-- /g -->' on the same line")
        i += 1
    return marks


def argv_of(cmd, results, out):
    """The argument vector of a marker's command, or Refused (module doc: the rule)."""
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        raise Refused(f"cannot split the command: {e}")
    if len(words) < 2 or words[0] != "python3":
        raise Refused("the command must start with 'python3 SCRIPT'")
    script = words[1]
    norm = os.path.normpath(script)
    if (os.path.isabs(script) or norm != script.rstrip("/") or norm.split(os.sep)[0] not in ALLOWED_DIRS
            or ".." in norm.split(os.sep) or not norm.endswith(".py")):
        raise Refused(f"'{script}' is not a .py script under {' or '.join(d + '/' for d in ALLOWED_DIRS)}"
                      " (a relative path without '..')")
    real = os.path.realpath(os.path.join(ROOT, norm))
    if not any(real.startswith(os.path.realpath(os.path.join(ROOT, d)) + os.sep) for d in ALLOWED_DIRS):
        raise Refused(f"'{script}' leads out of {' and '.join(ALLOWED_DIRS)}")
    if not os.path.isfile(real):
        raise Refused(f"'{script}' does not exist")
    sub = {"RESULTS": results, "OUT": out}
    args = [PLACEHOLDER.sub(lambda m: sub[m.group(1)], w) for w in words[2:]]
    return [sys.executable, real] + args


def run(cmd, results, out):
    argv = argv_of(cmd, results, out)
    try:
        p = subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Refused(f"the command ran over {TIMEOUT_S} s")
    if p.returncode != 0:
        raise Refused(f"the command exited {p.returncode}:\n{p.stderr.rstrip()}")
    return p.stdout


def main(argv):
    if len(argv) < 3 or argv[1] not in ("check", "update", "list") or \
            (argv[1] == "list" and len(argv) != 3) or (argv[1] != "list" and len(argv) not in (4, 5)):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mode, readme = argv[1], argv[2]
    with open(readme, encoding="utf-8") as fp:
        lines = fp.read().split("\n")
    try:
        marks = parse(readme, lines)
    except Refused as e:
        print(e, file=sys.stderr)
        return 2
    if not marks:
        print(f"{readme}: no '<!-- generated: ... -->' block or '<!-- g: ... -->' value", file=sys.stderr)
        return 2
    if mode == "list":
        for mk in marks:
            try:
                argv_of(mk["cmd"], "RESULTS", "OUT")
            except Refused as e:
                print(f"{readme}:{mk['line']}: {mk['cmd']}: {e}", file=sys.stderr)
                return 2
            print(f"{readme}:{mk['line']}: {mk['form']}: {mk['cmd']}")
        return 0
    results = os.path.abspath(argv[3])
    out = os.path.abspath(argv[4]) if len(argv) == 5 else os.path.dirname(results)
    if not os.path.isfile(results):
        print(f"{results}: no such file", file=sys.stderr)
        return 2
    # every command first (checked against the rule before any runs), each
    # distinct one once, several at a time; then the text, in README order
    try:
        for mk in marks:
            argv_of(mk["cmd"], results, out)
    except Refused as e:
        print(f"{readme}:{mk['line']}: {mk['cmd']}: {e}", file=sys.stderr)
        return 2
    cmds = list(dict.fromkeys(mk["cmd"] for mk in marks))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = {c: pool.submit(run, c, results, out) for c in cmds}
    outputs = {}
    for mk in marks:
        if mk["cmd"] in outputs:
            continue
        try:
            outputs[mk["cmd"]] = futures[mk["cmd"]].result()
        except Refused as e:
            print(f"{readme}:{mk['line']}: {mk['cmd']}: {e}", file=sys.stderr)
            return 2
    differ = 0
    new = list(lines)
    # last marker first, so that replacing a block keeps earlier indices valid
    for mk in reversed(marks):
        got = outputs[mk["cmd"]]
        if mk["form"] == "block":
            want = got.split("\n")
            if want and want[-1] == "":
                want.pop()
            if any(BLOCK_OPEN.match(w) or BLOCK_END.match(w) or "<!-- g:" in w for w in want):
                print(f"{readme}:{mk['line']}: {mk['cmd']}: its output holds a marker", file=sys.stderr)
                return 2
            have = lines[mk["body_start"]:mk["body_end"]]
            if have != want:
                differ += 1
                if mode == "check":
                    print(f"{readme}:{mk['line']}: generated block differs from the output of: {mk['cmd']}")
                    sys.stdout.writelines(difflib.unified_diff(
                        [h + "\n" for h in have], [w + "\n" for w in want],
                        f"{readme} (lines {mk['body_start'] + 1}-{mk['body_end']})", "command output"))
            new[mk["body_start"]:mk["body_end"]] = want
        else:
            text = got[:-1] if got.endswith("\n") else got
            if "\n" in text or "<!--" in text:
                print(f"{readme}:{mk['line']}: {mk['cmd']}: an inline value must be one line "
                      f"of text, got {text!r}", file=sys.stderr)
                return 2
            if text != mk["text"]:
                differ += 1
                if mode == "check":
                    print(f"{readme}:{mk['line']}: generated value differs from the output of: {mk['cmd']}")
                    print(f"-{mk['text']}\n+{text}")
            a, b = mk["span"]
            new[mk["index"]] = new[mk["index"]][:a] + text + new[mk["index"]][b:]
    if mode == "check":
        if differ:
            print(f"{readme}: {differ} of {len(marks)} generated parts differ; "
                  f"python3 scripts/study_readme.py update {' '.join(argv[2:])} regenerates them")
            return 1
        print(f"{readme}: {len(marks)} generated parts agree with {argv[3]}")
        return 0
    if new != lines:
        tmp = readme + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fp:
            fp.write("\n".join(new))
        os.replace(tmp, readme)
    print(f"{readme}: {differ} of {len(marks)} generated parts updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
