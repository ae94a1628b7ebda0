"""The seven sections of the morning report. Each takes the loaded data (dbread.load) and a context
(output folder, time origin, per-case work, ceilings, baseline) and returns (id, title, HTML body)."""
import analysis as an
import plots
from dbread import params_of
from page import duration, esc, fmt, img, note, noun, num, table

FAMILY_SCOPES = ["sliding_window", "sliding_window_global", "sliding_window_retrieval"]


def _short(text, n=90):
    text = text or ""
    return text if len(text) <= n else text[: n - 1] + "…"


def timeline(data, ctx):
    runs = ctx["runs"]
    its = data["iterations"]
    counts = {s: sum(1 for it in its if it["status"] == s)
              for s in ("keep", "discard", "crash", "interrupted", "running")}
    fv = an.full_fidelity_value(its)
    screened = sum(1 for it in its if it["status"] != "running" and not an.is_full(it, fv))
    total_wall = sum(r["wall_h"] for r in runs)
    finished = len(its) - counts["running"]
    body = (f"<p>{num('iterations.total', len(its))} iterations of suite {esc(data['suite'])} in "
            f"{num('runs.count', len(runs))} {noun(len(runs), 'run')}: keep "
            f"{num('iterations.keep', counts['keep'])}, discard "
            f"{num('iterations.discard', counts['discard'])}, crash {num('iterations.crash', counts['crash'])}, "
            f"interrupted {num('iterations.interrupted', counts['interrupted'])}, running "
            f"{num('iterations.running', counts['running'])}. ")
    if data["has_fidelity"]:
        body += (f"Screened (low fidelity) {num('iterations.screened', screened)}, whole suite "
                 f"{num('iterations.full', finished - screened)}. ")
    else:
        body += "This DB records no fidelity: every iteration ran the whole suite. "
    body += (f"{duration(total_wall)} of runs, {fmt(finished / total_wall if total_wall > 0 else None, '{:.0f}')}"
             " configs/hour overall.</p>\n")
    if not its:
        body += note(f"No iterations of suite {data['suite']} yet.", "no-iterations")
    else:
        body += img(plots.timeline(ctx["out"], runs, its, ctx["clock"], data["has_fidelity"], fv, an.is_full,
                                   an.parse_time), "iterations over time and time per run")
    rows = []
    for r in runs:
        rows.append([num(f"run.{r['id']}.id", r["id"]), esc(r["started_at"]), esc(r["ended_at"] or "-"),
                     esc(r["status"]), esc(_short(r["stop_reason"]) or "-"), esc(r["strategy"]), esc(r["gpu_name"]),
                     num(f"run.{r['id']}.iterations", r["iterations"]),
                     " / ".join(str(r["counts"][s]) for s in ("keep", "discard", "crash", "interrupted")),
                     f"{r['screened']} / {r['full']}", duration(r["wall_h"]), duration(r["gpu_h"]),
                     duration(r["compile_h"]), fmt(r["configs_per_h"], "{:.0f}")])
    body += table(["run", "started", "ended", "status", "stop reason", "strategy", "GPU", "iterations",
                   "keep / discard / crash / interrupted", "screened / full", "wall", "GPU busy", "NVRTC",
                   "configs/h"], rows, text_cols=(1, 2, 3, 4, 5, 6))
    body += ('<p class="small">GPU-busy: time in the worker (validation, timing, A/B/A re-timing). NVRTC: compile '
             "time summed over the compile threads, overlapped with the GPU. configs/h: finished iterations per "
             "wall hour of the run.</p>\n")
    return "timeline", "Run timeline", body


def _lineage_templates(data):
    """The overall champion's lineage as template names, root first ([] without a champion)."""
    overall = next((c for c in data["champions"] if c["scope"] == "overall"), None)
    it = next((it for it in data["iterations"] if overall and it["id"] == overall["iteration_id"]), None)
    return [s["template"] for s in an.champion_lineage(it["template"], data["ideas"], data["proposals"])] if it else []


def _promotion_row(p):
    a = p["aba"]
    lead, noise = a.get("lead_ms"), a.get("noise_ms")
    return [str(p["id"]), esc(p["promoted_at"]), esc(p["scope"]), num(f"promotion.{p['id']}.iter", p["iteration_id"]),
            esc(p["previous_iteration_id"] or "-"), fmt(p["previous_score_ms"]),
            num(f"promotion.{p['id']}.score_ms", fmt(p["score_ms"])), fmt(a.get("a1_ms")), fmt(a.get("b_ms")),
            fmt(a.get("a2_ms")), fmt(lead * 1e3 if lead is not None else None, "{:.2f}"),
            fmt(noise * 1e3 if noise is not None else None, "{:.2f}"),
            fmt(lead / noise if lead is not None and noise else None, "{:.1f}")]


def score(data, ctx):
    its = ctx["scored"]
    promotions = data["promotions"]
    body = ""
    if not its:
        return "score", "Score over time", note("No scored iteration yet (keep or discard on the whole suite).",
                                                "no-scores")
    best = an.best_so_far(its)
    body += (f"<p>{len(its)} scored iterations; best {num('score.best_ms', fmt(best[-1][1]))} ms. Score: the "
             "harness's rule, geometric mean over families of the per-family median latency. The champion "
             "promotions carry their A/B/A re-timed score; the last eight are labelled with their lead.")
    if data["has_fidelity"]:
        body += " Screened (low-fidelity) iterations are left out here: their scores cover only part of the suite."
    body += "</p>\n"
    body += img(plots.score_over_time(ctx["out"], its, best, promotions, ctx["clock"], an.parse_time,
                                      an.highlighted_templates(its, _lineage_templates(data))),
                "score over search time")
    header = ["#", "promoted", "scope", "iter", "replaced iter", "replaced ms", "score ms", "A1 ms", "B ms",
              "A2 ms", "lead µs", "noise µs", "lead/noise"]
    overall = [p for p in promotions if p["scope"] == "overall"]
    family = [p for p in promotions if p["scope"] != "overall"]
    if overall:
        body += ("<h3>Overall champion promotions</h3>\n<p class=\"small\">A/B/A: the incumbent (A1), the "
                 "challenger (B) and the incumbent again (A2) re-timed back to back; lead = mean(A1, A2) "
                 "minus B; noise = max(|A1 − A2|, the timings' relative spread × score, 0.5 % of the score); a "
                 "challenger is promoted when its lead exceeds the noise (docs/tuner.md, champion rule).</p>\n")
        body += table(header, [_promotion_row(p) for p in overall], text_cols=(1, 2))
    if family:
        body += "<h3>Per-family champion promotions</h3>\n"
        body += table(header, [_promotion_row(p) for p in family], text_cols=(1, 2))
    if not promotions:
        body += note("No champion promotions yet.")
    return "score", "Score over time", body


# Per-value means and a two-way ANOVA over fewer configs than this are noise: an idea's template is tuned
# with 8 to 24 configs (docs/ideas.md) and judged by its A/B/A in the Ideas section instead.
MIN_CONFIGS_FOR_EFFECTS = 12


def parameters(data, ctx):
    its = ctx["scored"]
    body = ('<p class="small">Per parameter of each template: the scores of the whole-suite keep/discard '
            "iterations per value. Interactions: two-way ANOVA on ln(score) over the search's unbalanced data; a "
            "pair's strength is SS_int / SS_total, SS_int = Σ n_ij (c_ij − a_i − b_j + m)², with cell means "
            "c_ij, "
            "level means a_i, b_j and grand mean m. The two strongest pairs are drawn.</p>\n")
    shown = 0
    for k, tname in enumerate(sorted({it["template"] for it in its})):
        tits = [it for it in its if it["template"] == tname]
        values = an.parameter_values(tits)
        body += f"<h3>{esc(tname)} ({len(tits)} configs)</h3>\n"
        if len(tits) < MIN_CONFIGS_FOR_EFFECTS or not values:
            body += note(f"Too few configs of {tname} with varying parameters to show effects (charts from "
                         f"{MIN_CONFIGS_FOR_EFFECTS}; an idea's few configs are judged in the Ideas section).")
            continue
        body += img(plots.parameter_effects(ctx["out"], tname, tits, values, f"params_{k}.png"),
                    f"parameter effects of {tname}")
        shown += 1
        pairs = [p for p in an.interaction_strengths(tits)[:2] if p[0] > 0]
        if pairs:
            body += img(plots.interactions(ctx["out"], tname, tits, pairs, values, f"interactions_{k}.png"),
                        f"strongest interactions of {tname}")
            body += "<p>" + "; ".join(f"{esc(a)} × {esc(b)}: {100 * s:.1f}% of the variance of ln(score)"
                                      for s, a, b in pairs) + ".</p>\n"
        else:
            body += note("No parameter pair with an interaction (too few filled cells).")
    if not its:
        body += note("No scored iteration yet.", "no-params")
    return "params", "Parameter effects", body


def _case_rows_html(metrics, key=None):
    rows = []
    for m in metrics:
        w = m["work"] or {}
        us = fmt(m["us"], "{:.1f}")
        rows.append([esc(m["case_id"]), esc(m["family"]), esc(w.get("bucket", "-")),
                     num(f"{key}.{m['case_id']}.us", us) if key else us, fmt(m["tflops"], "{:.1f}"),
                     fmt(m["pct_peak"], "{:.1f}"), fmt(m["x_floor"], "{:.2f}"), fmt(w.get("floor_us"), "{:.1f}"),
                     esc(w.get("bound", "-")), "yes" if m["passed"] else "no"])
    return table(["case", "family", "shape bucket", "µs", "TFLOP/s", "% of peak", "× floor", "floor µs", "bound",
                  "passed"], rows, text_cols=(0, 1, 2, 8))


def champions(data, ctx):
    its_by_id = {it["id"]: it for it in data["iterations"]}
    ceil = ctx["ceilings"]
    body = (f'<p class="small">Peak and floor: {ceil["tflops"]:g} TFLOP/s, {ceil["tbps"]:g} TB/s '
            f"({esc(ceil['source'])}); FLOPs, bytes and floor per case from workload/roofline "
            "(`attn-tuner suites`). % of peak = achieved TFLOP/s over the compute peak; × floor = latency over "
            "max(FLOPs/peak, bytes/bandwidth).</p>\n")
    champs = data["champions"]
    if not champs:
        return "champions", "Champions", body + note(
            f"No champion for suite {data['suite']} yet: no iteration of this suite has been kept "
            "(see the failures below).", "no-champion")
    rows = []
    for c in champs:
        it = its_by_id.get(c["iteration_id"], {})
        rows.append([esc(c["scope"]), num(f"champion.{c['scope']}.iter", c["iteration_id"]),
                     num(f"champion.{c['scope']}.score_ms", fmt(c["score_ms"])), fmt(c["aba_b_ms"]),
                     esc(it.get("template", "-")), esc(params_of(it)), esc(c["promoted_at"])])
    body += table(["scope", "iter", "score ms", "A/B/A B ms (its promotion)", "template", "params", "promoted"], rows,
                  text_cols=(0, 4, 5, 6))
    body += ('<p class="small">Score: the champion iteration\'s whole-suite score as the search measured it (the '
             "family's median for a family champion), the number <code>status</code> and <code>query best</code> "
             "show; A/B/A B: its time in the back-to-back re-timing against the incumbent that promoted it.</p>\n")
    by_scope = {c["scope"]: c for c in champs}
    for scope in ["overall"] + FAMILY_SCOPES:
        c = by_scope.get(scope)
        if not c:
            continue
        it = its_by_id.get(c["iteration_id"])
        metrics = ctx["champion_metrics"].get(c["iteration_id"], [])
        if scope != "overall":
            metrics = [m for m in metrics if m["family"] == scope]
        body += f"<h3>{esc(scope)} champion: iter {c['iteration_id']}"
        body += f" ({esc(it['template'])} {esc(params_of(it))})</h3>\n" if it else "</h3>\n"
        body += _case_rows_html(metrics, "case" if scope == "overall" else None) if metrics else note(
            "No case results for this champion.")
    overall = by_scope.get("overall")
    if overall and ctx["champion_metrics"].get(overall["iteration_id"]):
        rl = [m for m in ctx["champion_metrics"][overall["iteration_id"]] if m["work"] and m["tflops"]]
        if rl:
            body += img(plots.roofline(ctx["out"], rl, ctx["baseline_rows"], ceil,
                                       f"Roofline: cases of the overall champion (iter {overall['iteration_id']})"),
                        "roofline of the overall champion's cases")
    buckets = ctx["buckets"]
    if buckets:
        body += ("<h3>Per shape bucket (t_max, batch·heads)</h3>\n<p class=\"small\">The whole-suite iteration with "
                 "the lowest geometric mean of its case latencies over the bucket's cases, beside the overall "
                 "champion's on the same cases.</p>\n")
        overall_cases = {m["case_id"]: m for m in ctx["champion_metrics"].get(overall["iteration_id"], [])} \
            if overall else {}
        rows = []
        for b in buckets:
            ref = an.geomean([overall_cases[c]["us"] for c in b["case_ids"] if c in overall_cases])
            mine = b["score_ms"] * 1e3
            rows.append([esc(f"t_max {b['bucket'][0]}, B·H {b['bucket'][1]}"), esc(", ".join(b["case_ids"])),
                         str(b["iter"]["id"]), esc(b["iter"]["template"]), esc(params_of(b["iter"])),
                         fmt(mine, "{:.1f}"), fmt(ref, "{:.1f}"),
                         fmt(100 * (ref - mine) / ref if ref else None, "{:.1f}")])
        body += table(["bucket", "cases", "best iter", "template", "params", "geomean µs", "overall champion µs",
                       "gain %"], rows, text_cols=(0, 1, 3, 4))
        for b in buckets:
            if overall and b["iter"]["id"] == overall["iteration_id"]:
                continue  # its cases are in the overall champion's table
            ms = [m for m in ctx["metrics_of"](b["iter"]) if m["case_id"] in b["case_ids"]]
            body += f"<h3>bucket t_max {b['bucket'][0]}, B·H {b['bucket'][1]}: iter {b['iter']['id']}</h3>\n"
            body += _case_rows_html(ms)
    return "champions", "Champions", body


def failures(data, ctx):
    crashes = [it for it in data["iterations"] if it["status"] in ("crash", "interrupted")]
    counts = {k: sum(1 for it in crashes if it["failure_kind"] == k) for k in an.FAILURE_KINDS}
    body = ""
    rows = [[esc(k), num(f"failures.{k}", counts[k])] for k in an.FAILURE_KINDS]
    body += table(["failure kind", "iterations"], rows, text_cols=(0,))
    if not crashes:
        return "failures", "Failures", body + note("No failures.", "no-failures")
    by_kt = {}
    for it in crashes:
        by_kt[(it["failure_kind"], it["template"])] = by_kt.get((it["failure_kind"], it["template"]), 0) + 1
    body += img(plots.failures(ctx["out"], by_kt), "failures by kind")
    for k in an.FAILURE_KINDS:
        ex = [it for it in crashes if it["failure_kind"] == k]
        if not ex:
            continue
        it = ex[-1]  # the latest
        body += (f"<h3>{esc(k)}: latest example, iter {it['id']} ({esc(it['template'])} {esc(params_of(it))})"
                 "</h3>\n")
        log = it["description"] or ""
        if k == "compile" and data["compile_logs"].get(it["variant_id"]):
            lines = data["compile_logs"][it["variant_id"]].splitlines()
            log += "\n\nNVRTC log" + (f" (first 40 of {len(lines)} lines)" if len(lines) > 40 else "") + ":\n"
            log += "\n".join(lines[:40])
        body += f'<pre class="log" data-kind="{esc(k)}">{esc(log)}</pre>\n'
    return "failures", "Failures", body


def baseline(data, ctx):
    if ctx["baseline"] is None:
        return None
    per_case, label = ctx["baseline"]
    body = f"<p>Baseline: {esc(label)}, from {esc(ctx['baseline_path'])}.</p>\n"
    rows = ctx["baseline_rows"]
    if not rows:
        return "baseline", "Baseline", body + note(
            "No overall champion, or no case shared by the champion and the baseline: nothing to compare.",
            "no-baseline-overlap")
    body += img(plots.baseline(ctx["out"], rows, label), "champion vs baseline")
    t = [[esc(r["case_id"]), esc(r["family"]), fmt(r["us"], "{:.1f}"),
          num(f"baseline.{r['case_id']}.us", fmt(r["baseline_us"], "{:.1f}")),
          fmt(r["baseline_us"] / r["us"], "{:.2f}")] for r in rows]
    body += table(["case", "family", "champion µs", "baseline µs", "baseline / champion"], t, text_cols=(0, 1))
    ratio = an.geomean([r["baseline_us"] / r["us"] for r in rows])
    body += f"<p>Geometric mean of baseline / champion over {len(rows)} cases: {fmt(ratio, '{:.2f}')}×.</p>\n"
    missing = sorted(set(per_case) - {r["case_id"] for r in rows})
    if missing:
        body += note(f"Baseline cases not in the champion's results: {', '.join(missing)}")
    return "baseline", "Baseline", body


def _pct(v, signed=True):
    return "-" if v is None else (f"{v:+.2f}" if signed else f"{v:.2f}")


def _verdict(i, landed=None):
    """An idea's verdict, coloured (CSS class v-<verdict>) and tagged idea.<id>.verdict; broken with its kind; a win
    with whether it is landed in a repository template (`landed`: idea hash -> template, `attn-tuner idea land`)."""
    text = i["verdict"] or i["status"]
    if i["verdict"] == "broken" and i["broken_kind"]:
        text += f" ({i['broken_kind']})"
    if i["verdict"] == "win" and landed is not None:
        text += f", landed in {landed[i['idea_hash']]}" if i["idea_hash"] in landed else ", not landed"
    return f'<span class="verdict v-{esc(i["verdict"] or "none")}" data-key="idea.{i["id"]}.verdict">{esc(text)}</span>'


def _lineage_html(data, ctx):
    overall = next((c for c in data["champions"] if c["scope"] == "overall"), None)
    its_by_id = {it["id"]: it for it in data["iterations"]}
    it = its_by_id.get(overall["iteration_id"]) if overall else None
    if not it:
        return note("No overall champion yet: no lineage to show.", "no-lineage")
    steps = an.champion_lineage(it["template"], data["ideas"], data["proposals"])
    n_ideas = sum(1 for s in steps if s["idea"])
    body = (f"<p>The overall champion (iter {it['id']}, template {esc(it['template'])}) stacks "
            f"{num('ideas.lineage.count', n_ideas)} {noun(n_ideas, 'idea')}, from its repository template "
            "down (templates are named &lt;root&gt;_p&lt;proposal id&gt;; each step was applied to the one above):"
            "</p>\n<ol id=\"idea-lineage\">\n")
    for s in steps:
        i, p = s["idea"], s["proposal"]
        if i:
            what = (f"idea {i['id']} ({esc(i['file'])}): {esc(_short(i['description']))} — {_verdict(i)}, "
                    f"Δ {_pct(i['delta_pct'])} % ± {_pct(i['noise_pct'], False)} % vs {esc(i['parent_template'])}")
            attr = f' data-idea="{i["id"]}"'
        elif p:
            what = f"proposal {p['id']} ({esc(p['status'])}): {esc(_short(p['description']))}"
            attr = f' data-proposal="{p["id"]}"'
        else:
            what = "the repository template"
            attr = ""
        body += f'<li data-template="{esc(s["template"])}"{attr}><b>{esc(s["template"])}</b>: {what}</li>\n'
    return body + "</ol>\n"


def ideas(data, ctx):
    rows_all = data["ideas"]
    if not rows_all:
        return "ideas", "Ideas", note("No ideas yet (the idea queue: attn-tuner run --ideas DIR).",
                                      "no-ideas")
    measured, broken, pending = an.rank_ideas(rows_all)
    counts = {v: sum(1 for i in rows_all if i["verdict"] == v) for v in an.IDEA_VERDICTS}
    body = (f"<p>{num('ideas.total', len(rows_all))} {noun(len(rows_all), 'idea')} of suite {esc(data['suite'])}: "
            + ", ".join(f"{v} {num('ideas.' + v, counts[v])}" for v in an.IDEA_VERDICTS)
            + f", not judged {num('ideas.pending', len(pending))}.</p>\n"
            '<p class="small">Effect: Δ % = (idea / parent − 1) × 100 on the suite score from the A/B/A re-timing '
            "against the parent's best config (negative is faster); noise: the champion rule's noise relative to "
            "the parent. A win beats its parent by more than the noise and holds on the held-out seed; no_gain "
            "is within the noise; slower loses by more than it.</p>\n")
    wins = [i for i in rows_all if i["verdict"] == "win"]
    if wins:
        landed = ctx.get("landed", {})
        done = [i for i in wins if i["idea_hash"] in landed]
        body += (f"<p>Wins landed in the repository's source (<code>attn-tuner idea land</code>): "
                 f"{num('ideas.wins_landed', len(done))} of {len(wins)}"
                 + (": " + ", ".join(f"idea {i['id']} ({esc(i['file'])}) in {esc(landed[i['idea_hash']])}" for i in done)
                    if done else "")
                 + (("; not yet: " + ", ".join(f"idea {i['id']} ({esc(i['file'])})" for i in wins if i not in done))
                    if len(done) < len(wins) else "") + ".</p>\n")
    body += "<h3>The champion's lineage</h3>\n" + _lineage_html(data, ctx)
    if measured:
        body += "<h3>Ranked by measured effect</h3>\n"
        body += img(plots.ideas(ctx["out"], measured, broken), "ideas ranked by measured effect")
        rows = [[num(f"idea.{i['id']}.rank", k), str(i["id"]), esc(i["file"]), esc(_short(i["description"], 70)),
                 esc(i["parent_template"]), esc(i["template"] or "-"), _verdict(i, ctx.get("landed", {})),
                 num(f"idea.{i['id']}.delta_pct", _pct(i["delta_pct"])), _pct(i["noise_pct"], False),
                 fmt(i["parent_ms"]), fmt(i["idea_ms"]), str(i["configs"]), esc(_short(i["reason"], 120))]
                for k, i in enumerate(measured, 1)]
        body += table(["rank", "idea", "file", "description", "parent", "template", "verdict", "Δ %", "± noise %",
                       "parent ms", "idea ms", "configs", "reason"], rows, text_cols=(2, 3, 4, 5, 6, 12))
    else:
        body += note("No idea has a measured effect yet.", "no-measured-ideas")
    if broken:
        body += "<h3>Broken ideas</h3>\n"
        rows = [[str(i["id"]), esc(i["file"]), esc(_short(i["description"], 70)), esc(i["parent_template"] or "-"),
                 _verdict(i), esc(_short(i["reason"], 160))] for i in broken]
        body += table(["idea", "file", "description", "parent", "verdict (kind)", "reason"], rows,
                      text_cols=(1, 2, 3, 4, 5))
    if pending:
        body += "<h3>Not judged</h3>\n"
        rows = [[str(i["id"]), esc(i["file"]), esc(_short(i["description"], 70)), esc(i["parent_template"] or "-"),
                 _verdict(i), str(i["configs"]), esc(i["started_at"])] for i in pending]
        body += table(["idea", "file", "description", "parent", "status", "configs", "started"], rows,
                      text_cols=(1, 2, 3, 4, 6))
    return "ideas", "Ideas", body


def profile(data, ctx):
    """The champion's profile (`attn-tuner idea context` writes the same): resources, ptxas diagnostics, the SASS
    instruction mix per kv tile, the trace or how to get it. Computed by `attn-tuner report` into cases.json."""
    prof = ctx.get("profile") or {}
    if "markdown" not in prof:
        return "profile", "Champion profile", note("No profile: " + prof.get("error", "not computed") + ".", "no-profile")
    body = ('<p class="small">Where the champion\'s cycles go, from the DB and its cubin (static SASS counts; '
            "the trace per role where measured). The idea author's kit (<code>attn-tuner idea context</code>) holds the "
            "same text as profile/PROFILE.md.</p>\n")
    return "profile", "Champion profile", body + f'<pre class="profile">{esc(prof["markdown"])}</pre>\n'

