#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium renders the reports of seven runs and a probe script, run in
# the page after layout, reads back what a reader sees: the verdict, its reasons and flags, the reason column, the
# violating tokens drawn in the charts (their boxes inside the chart, a few pixels at least) and listed in the
# tables, the replay and speculative layouts, and that the page fetched nothing outside itself.
#   html_browser_test.sh <samplecheck> <scratch dir>
# Exit 0 pass, 1 fail, 77 skipped (no headless Chromium, or one that cannot start: the reason is printed).
# The runs are deterministic (fixed seeds); each report's verdict is the CLI's exit code, checked too.
set -uo pipefail
bin=$1; dir=$2/html_browser
scenario=html_browser
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"

skip() { echo "SKIPPED (html_browser): $*"; exit 77; }
browser=""
for candidate in ${SAMPLECHECK_CHROMIUM:-} chromium-headless-shell chromium chromium-browser google-chrome; do
  if command -v "$candidate" >/dev/null 2>&1; then browser=$(command -v "$candidate"); break; fi
done
[ -n "$browser" ] || skip "no headless Chromium on PATH (chromium-headless-shell or chromium; bash scripts/setup installs it)"
command -v python3 >/dev/null || skip "no python3 to read the probe's answer"

# Renders $1 (a file) after its scripts ran; the DOM on stdout.
render() {
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --allow-file-access-from-files --window-size=1280,2000 --virtual-time-budget=4000 --dump-dom "file://$1" \
    2>>"$dir/chromium.err"
}

# Can it start and run a script at all? Otherwise this is a skip, never a pass.
printf '<!DOCTYPE html><html><body><pre id="r"></pre><script>document.getElementById("r").textContent = "ran " + (1 + 1);</script></body></html>\n' > "$dir/start.html"
started=$(render "$dir/start.html")
grep -q 'ran 2' <<<"$started" || skip "$browser does not start or run scripts: $(tail -n 3 "$dir/chromium.err" | tr '\n' ' ')"

# A small sampler suite: V4-minp-order and combined fail under min-p after top-p; topk-200 is invalid under the
# tokenspeed profile (k <= 127), so it is skipped there.
cat > "$dir/tiny.json" <<'EOF'
{"schema": "samplecheck-suite/1", "name": "tiny", "description": "the browser test's suite", "seed": 1,
 "alpha": 0.0001, "tv": 0.05, "power": 0.99, "max_draws": 65536, "min_draws": 1000,
 "cases": [
  {"name": "V4-minp-order", "row": {"kind": "dyadic", "vector": "V4"}, "params": {"top_p": 0.75, "min_p": 0.3}},
  {"name": "combined", "row": {"kind": "gaussian", "vocab": 2000, "sigma": 3.0},
   "params": {"temperature": 0.8, "top_k": 100, "top_p": 0.95, "min_p": 0.01}},
  {"name": "topk-200", "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2.0}, "params": {"top_k": 200}}]}
EOF
run_report() {  # <name> <expected exit> <samplecheck arguments...>
  local name=$1 want=$2; shift 2
  expect_rc "$want" "$bin" "$@" --report "$dir/$name.json" --html "$dir/$name.html" >/dev/null
}
run_report sampler_fail 1 run --suite "$dir/tiny.json" --sampler mutant:minp-after-topp --progress none
run_report sampler_pass 0 run --suite "$dir/tiny.json" --sampler exact --progress none
run_report capped_pass 0 run --suite "$dir/tiny.json" --sampler exact --max-draws 3000 --allow-underpowered --progress none
run_report skipped_fail 1 run --suite "$dir/tiny.json" --sampler exact --profile tokenspeed --progress none
run_report replay_pass 0 replay --suite replay-smoke
run_report replay_fail 1 replay --suite replay-smoke --trainer fault:no-renormalization
run_report spec_pass 0 run --suite spec-smoke --verifier exact --progress none

# The probe: appended to a copy of each report (the report itself has no script), it writes what the rendered page
# shows into <pre id="probe">.
cat > "$dir/probe.js" <<'EOF'
window.addEventListener("load", function () {
  const q = (s) => Array.from(document.querySelectorAll(s));
  const visible = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; };
  const out = {
    layout: document.body.dataset.layout,
    verdict: (document.querySelector("#verdict") || {dataset: {}}).dataset.verdict,
    badge: (document.querySelector("#verdict-badge") || {}).textContent,
    badge_visible: !!document.querySelector("#verdict-badge") && visible(document.querySelector("#verdict-badge")),
    problems: q("#verdict li.problem").map((e) => ({kind: e.dataset.problem, text: e.textContent})),
    flags: q("#verdict .badge.flag").map((e) => ({flag: e.dataset.flag, text: e.textContent, visible: visible(e)})),
    reasons: q("table.cases td.why").map((e) => e.textContent).filter((t) => t.length > 0),
    charts: q("svg[data-chart]").map((e) => e.dataset.chart),
    plotted: [], listed: q("tr.viol[data-violating-token]").map((e) => ({
      token: e.dataset.violatingToken, table: e.closest("table").className,
      case: e.closest("details") ? e.closest("details").id.slice(5) : ""})),
    headers: q("th").map((e) => e.textContent),
    text: document.body.innerText,
    dots_fail: q("svg[data-chart='logprob-error'] circle.dot-fail").length,
    dots: q("svg[data-chart='logprob-error'] circle[data-side]").length,
    resources: performance.getEntriesByType("resource").map((e) => e.name),
  };
  // Open every case so that its charts are laid out, then measure the violating tokens' marks.
  q("details").forEach((d) => { d.open = true; });
  q("svg [data-violating-token]").forEach((e) => {
    const svg = e.closest("svg"), b = e.getBoundingClientRect(), s = svg.getBoundingClientRect();
    out.plotted.push({token: e.dataset.violatingToken, chart: svg.dataset.chart, fill: getComputedStyle(e).fill,
      case: e.closest("details").id.slice(5), width: b.width, height: b.height,
      inside: b.left >= s.left - 0.5 && b.right <= s.right + 0.5 && b.top >= s.top - 0.5 && b.bottom <= s.bottom + 0.5});
  });
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
EOF
for name in sampler_fail sampler_pass capped_pass skipped_fail replay_pass replay_fail spec_pass; do
  { sed 's#</body></html>##' "$dir/$name.html"; printf '<script>\n'; cat "$dir/probe.js"; printf '</script></body></html>\n'; } \
    > "$dir/$name.probe.html"
  render "$dir/$name.probe.html" > "$dir/$name.dom.html"
  [ -s "$dir/$name.dom.html" ] || fail "chromium rendered nothing for $name.html: $(tail -n 3 "$dir/chromium.err")"
done

python3 - "$dir" <<'EOF' || fail "the rendered pages do not show what they must (above)"
import html, json, re, sys
d = sys.argv[1]
failures = []
def probe(name):
    dom = open(f"{d}/{name}.dom.html", encoding="utf-8").read()
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    if not m:
        failures.append(f"{name}: the probe did not run in the page")
        return None
    return json.loads(html.unescape(m.group(1)))
def check(name, ok, what):
    if not ok: failures.append(f"{name}: {what}")
def common(name, p, verdict, layout):
    check(name, p["verdict"] == verdict and p["badge"] == verdict and p["badge_visible"],
          f"verdict {verdict} not shown (data-verdict {p['verdict']}, badge {p['badge']!r})")
    check(name, p["layout"] == layout, f"layout {p['layout']}, expected {layout}")
    check(name, all(r.startswith(("file:", "data:")) for r in p["resources"]), f"fetched {p['resources']}")
    check(name, (verdict == "PASS") == (not p["problems"]), f"reasons {p['problems']} under {verdict}")

p = probe("sampler_fail")
if p:
    common("sampler_fail", p, "FAIL", "sampler")
    texts = [x["text"] for x in p["problems"]]
    check("sampler_fail", "FAIL: 2 case(s) failed (support violations: V4-minp-order, combined)" in texts,
          f"the failed cases' reason missing: {texts}")
    report = json.load(open(f"{d}/sampler_fail.json"))
    for case in report["cases"]:
        if case["status"] != "fail":
            continue
        tokens = [str(t["token"]) for t in case["support"]["tokens"]]
        for chart in ("head", "residuals"):
            marks = [m for m in p["plotted"] if m["case"] == case["name"] and m["chart"] == chart]
            check("sampler_fail", sorted(m["token"] for m in marks) == sorted(tokens),
                  f"{case['name']}: {chart} chart draws {[m['token'] for m in marks]}, the report lists {tokens}")
            for m in marks:
                check("sampler_fail", m["width"] >= 1 and m["height"] >= 2.5 and m["inside"],
                      f"{case['name']}: token {m['token']} in the {chart} chart is not visible inside it: {m}")
                check("sampler_fail", m["fill"] == "rgb(207, 34, 46)", f"token {m['token']} is not red: {m['fill']}")
        for table in ("residuals", "support-violations"):
            rows = [x["token"] for x in p["listed"] if x["case"] == case["name"] and x["table"] == table]
            check("sampler_fail", sorted(rows) == sorted(tokens), f"{case['name']}: {table} table lists {rows}")
        check("sampler_fail", case["reason"] in p["reasons"], f"reason column lacks {case['reason']!r}")

p = probe("sampler_pass")
if p:
    common("sampler_pass", p, "PASS", "sampler")
    check("sampler_pass", not p["plotted"] and not p["listed"] and not p["flags"], "a plain pass shows violations or flags")
    check("sampler_pass", p["charts"].count("head") == 3, f"charts {p['charts']}")

p = probe("capped_pass")
if p:
    common("capped_pass", p, "PASS", "sampler")
    flags = {f["flag"]: f for f in p["flags"]}
    check("capped_pass", "underpowered" in flags and flags["underpowered"]["visible"], f"no underpowered badge: {flags}")
    check("capped_pass", flags.get("capped", {}).get("text") == "--max-draws 3000", f"no --max-draws badge: {flags}")
    check("capped_pass", "lowest power" in p["text"] and "--allow-underpowered accepted" in p["text"],
          "the power reached is not said")

p = probe("skipped_fail")
if p:
    common("skipped_fail", p, "FAIL", "sampler")
    skipped = [x["text"] for x in p["problems"] if x["kind"] == "skipped"]
    check("skipped_fail", len(skipped) == 1 and "--allow-skipped" in skipped[0] and
          "params invalid under profile tokenspeed" in skipped[0] and "topk-200" in skipped[0],
          f"the skipped reason is not at the top: {p['problems']}")
    check("skipped_fail", any("params invalid under profile tokenspeed" in r for r in p["reasons"]), "no reason in the cases table")

for name, verdict in (("replay_pass", "PASS"), ("replay_fail", "FAIL")):
    p = probe(name)
    if not p:
        continue
    common(name, p, verdict, "replay")
    report = json.load(open(f"{d}/{name}.json"))
    rows = [c for c in report["cases"] if c["name"] != "aggregate" and c["status"] != "skipped"]
    check(name, "logprob-error" in p["charts"] and p["dots"] > 0, f"no logprob error plot: {p['charts']}")
    check(name, "kept / V" not in p["headers"] and "power" not in p["headers"], f"sampler columns: {p['headers']}")
    check(name, "One kept token" not in p["text"], "the sampler layout's note on a replay row")
    for h in ("mean ratio", "mismatch KL", "violations"):
        check(name, h in p["headers"], f"no {h} column")
    failed = sum(c["status"] == "fail" for c in rows)
    check(name, p["dots_fail"] == failed, f"{p['dots_fail']} red points for {failed} failed rows")
    if verdict == "FAIL":
        texts = " ".join(x["text"] for x in p["problems"])
        check(name, "trainer replay:" in texts and "importance ratio bias: aggregate" in texts, f"reasons: {texts}")

p = probe("spec_pass")
if p:
    common("spec_pass", p, "PASS", "speculative")
    check("spec_pass", "acceptance" in p["charts"], f"no acceptance chart: {p['charts']}")
    check("spec_pass", "acceptance by position: observed / beta (p)" in p["headers"], "no acceptance table")

for f in failures:
    print("  " + f)
sys.exit(1 if failures else 0)
EOF
echo "html_browser: 7 reports rendered in $browser; verdicts, reasons, flags, violating tokens and layouts as expected"
