#!/usr/bin/env bash
# report.md holds no live HTML (issue 32): encoding names, run ids, labels,
# titles, units and column names from a batch — and from a results.csv
# received from someone else — carrying raw HTML, javascript: links, image
# syntax and table breakers are rendered by a real Markdown renderer
# (python3-markdown, what mkdocs uses, with its tables extension) and the
# HTML is parsed: every tag must be one report.md writes itself, every link
# and image must point into plots/, and each payload must still be there as
# text. CPU kinds only.
# usage: test_report_markdown.sh path/to/ropelab
set -u
bin=$1
py=/usr/bin/python3
if ! "$py" -c 'import markdown' 2>/dev/null || ! command -v gnuplot >/dev/null; then
  echo "python3-markdown or gnuplot missing: skipped"
  exit 77
fi
t=$(mktemp -d /tmp/rlmdXXXX)
trap 'rm -rf "$t"' EXIT
cat > "$t/h.yaml" <<'YAML'
model: {head_dim: 16, heads: 1, train_len: 64}
encodings:
  - {name: "<img src=x onerror=alert(1)>", type: rope}
  - {name: "[click](javascript:alert(1))", type: rope, rope_theta: 500000}
  - {name: "a|b`c*d_<script>alert(2)</script>", type: rope, rope_theta: 20000}
  - {name: "![i](javascript:alert(3)) <https://evil.example> &amp;", type: rope, rope_theta: 40000}
experiments:
  - kind: decay
    params: {max_distance: [8, 16], step: 4}
YAML
"$bin" run "$t/h.yaml" --out "$t/o" --quiet >/dev/null 2>&1 || { echo "FAIL: the batch"; exit 1; }
# a results.csv from elsewhere: payloads in a title, a unit and a column name
"$py" - "$t/o/results.csv" <<'PY'
import csv, sys
p = sys.argv[1]
rows = list(csv.reader(open(p, newline="")))
h = rows[0]
h.append("params.<a href=javascript:alert(4)>x</a>")
ti, ui = h.index("title"), h.index("unit")
for r in rows[1:]:
    r.append("<b onmouseover=alert(5)>v</b>")
    if r[ti]:
        r[ti] = "<svg onload=alert(6)> `code` [t](javascript:alert(7))"
        r[ui] = "<iframe src=javascript:alert(8)>"
with open(p, "w", newline="") as f:
    csv.writer(f).writerows(rows)
PY
"$bin" plot "$t/o" >/dev/null 2>&1 || { echo "FAIL: plot"; exit 1; }
# a view through the command line (repeated --where, a hostile value, PDF
# beside PNG, into another folder): its report is checked the same way
"$bin" plot "$t/o" --where "encoding=<img src=x onerror=alert(1)>,[click](javascript:alert(1))" \
  --where kind=decay --series encoding,max_distance --format png,pdf --out "$t/v" >/dev/null 2>&1 \
  || { echo "FAIL: plot with a view"; exit 1; }
ls "$t"/v/plots/*.pdf >/dev/null 2>&1 || { echo "FAIL: --format pdf wrote no PDF"; exit 1; }
grep -q '^View: `--where encoding=' "$t/v/report.md" || { echo "FAIL: the view is not named"; exit 1; }
if grep -q 'alert(2)' "$t/v/report.md"; then echo "FAIL: --where kept another encoding's rows"; exit 1; fi
for rep in "$t/o/report.md" "$t/v/report.md"; do
"$py" - "$rep" <<'PY' || exit 1
import sys, markdown
from html.parser import HTMLParser
text = open(sys.argv[1]).read()
html = markdown.markdown(text, extensions=["tables"])
ours = {"h1", "h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "em", "strong",
        "code", "ul", "li", "img", "a"}
bad = []
class P(HTMLParser):
    def handle_starttag(self, tag, attrs):
        if tag not in ours:
            bad.append("live tag <%s %s>" % (tag, attrs))
        for k, v in attrs:
            if k.startswith("on"):
                bad.append("event handler %s=%s on <%s>" % (k, v, tag))
            if k in ("href", "src") and not (v or "").startswith("plots/"):
                bad.append("%s=%r on <%s> points outside plots/" % (k, v, tag))
P().feed(html)
# the payloads are still there, as text (a view keeps the first two)
for s in ["&lt;img src=x onerror=alert(1)&gt;", "[click](javascript:alert(1))"] if "/v/" in sys.argv[1] else ["&lt;img src=x onerror=alert(1)&gt;", "[click](javascript:alert(1))",
          "&lt;script&gt;alert(2)&lt;/script&gt;", "![i](javascript:alert(3))",
          "&lt;svg onload=alert(6)&gt;", "&lt;b onmouseover=alert(5)&gt;"]:
    if s not in html:
        bad.append("payload not shown as text: " + s)
n_tags = html.count("<")
print("report.md rendered: %d bytes of HTML, %d tags, %d problems" % (len(html), n_tags, len(bad)))
for b in bad[:20]:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
done
# The Verification table reads the tolerance record (error_at_worst,
# bound_at_worst) and, in folders written before 2026-12-07, the older
# max_error and bound: one run rewritten to the old spelling shows the same
# worst error and bound as before, not nan.
row() { grep -F "| $1 |" "$t/o/report.md" | grep -v '^| run ' | tail -1; }
run1=$(basename "$(ls -d "$t"/o/runs/*/ | head -1)")
before=$(row "$run1")
"$py" - "$t/o/runs/$run1/summary.json" <<'PY' || exit 1
import json, sys
p = sys.argv[1]
s = json.load(open(p))
for v in s["verification"]:
    v["max_error"] = v.pop("error_at_worst")
    v["bound"] = v.pop("bound_at_worst")
json.dump(s, open(p, "w"))
PY
"$bin" plot "$t/o" >/dev/null 2>&1 || { echo "FAIL: plot over the old spelling"; exit 1; }
after=$(row "$run1")
if [ -z "$before" ] || [ "$before" != "$after" ] || printf '%s' "$after" | grep -q nan; then
  echo "FAIL: verification row changed with the old spelling: '$before' -> '$after'"; exit 1
fi
echo "verification row read from both spellings: $after"
