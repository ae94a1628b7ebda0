"""The numbers behind the morning report's sections, computed from dbread.load() output and the
per-case work that `attn-tuner report` writes (cases.json, from workload/roofline)."""
import csv
import datetime as dt
import json
import math
import pathlib
import re
import statistics

import numpy as np

from dbread import ReportError

FAILURE_KINDS = ["compile", "device_limit", "fault", "hang", "wrong_result", "worker_died", "interrupted", "proposal",
                 "inconsistent", "below_floor"]
SCORED = ("keep", "discard")


def parse_time(text):
    """ISO-8601 UTC text as the DB writes it ("2026-11-05T12:34:56.789Z") -> aware datetime; None for ''."""
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def full_fidelity_value(iterations):
    """The fidelity value that means "whole suite": the column holds either text ('full' is the whole suite,
    anything else a screening level) or numbers (the largest is the whole suite). NULL counts as full."""
    values = {it["fidelity"] for it in iterations if it["fidelity"] is not None}
    if values and all(isinstance(v, (int, float)) for v in values):
        return max(values)
    return "full"


def is_full(it, full_value):
    f = it["fidelity"]
    return f is None or f == full_value or (isinstance(f, str) and f.lower() == str(full_value).lower())


def scored(data):
    """keep/discard iterations evaluated on the whole suite with a score, oldest first."""
    fv = full_fidelity_value(data["iterations"])
    return [it for it in data["iterations"]
            if it["status"] in SCORED and it["geomean_ms"] is not None and is_full(it, fv)]


def run_rows(data, now=None):
    """One row per run: status, stop reason, counts by status, screened/full, wall hours (started to ended,
    or to its last finished iteration while running), GPU-busy and NVRTC hours, configs per hour."""
    fv = full_fidelity_value(data["iterations"])
    by_run = {}  # one pass: a night's DB has a million iterations
    for it in data["iterations"]:
        by_run.setdefault(it["run_id"], []).append(it)
    rows = []
    for run in data["runs"]:
        its = by_run.get(run["id"], [])
        finished = [it for it in its if it["status"] != "running"]
        start = parse_time(run["started_at"])
        end = parse_time(run["ended_at"]) or max((parse_time(it["finished_at"]) for it in finished), default=None) \
            or now or start
        wall_h = max((end - start).total_seconds(), 0.0) / 3600
        counts = {s: sum(1 for it in its if it["status"] == s)
                  for s in ("keep", "discard", "crash", "interrupted", "running")}
        screened = sum(1 for it in finished if not is_full(it, fv))
        rows.append({"id": run["id"], "status": run["status"], "stop_reason": run["stop_reason"] or "",
                     "started_at": run["started_at"], "ended_at": run["ended_at"] or "", "strategy": run["strategy"],
                     "gpu_name": run["gpu_name"], "iterations": len(its), "counts": counts,
                     "screened": screened, "full": len(finished) - screened, "wall_h": wall_h,
                     "gpu_h": sum(it["gpu_ms"] or 0 for it in its) / 3.6e6,
                     "compile_h": sum(it["compile_ms"] or 0 for it in its) / 3.6e6,
                     "configs_per_h": len(finished) / wall_h if wall_h > 0 else None,
                     "start": start, "end": end})
    return rows


class SearchClock:
    """Search time: seconds inside the runs, the wall-clock gaps between them cut out (a DB resumed over two days
    holds a few hours of runs: on wall-clock time its plots were 50 h of gaps). Runs are laid end to end in order
    of their start; a time inside run r maps to the runs before r plus the time since r started, clamped to r's
    span. `runs`: run_rows() output (id, start, end)."""

    def __init__(self, runs):
        self.spans = []  # (run id, start, duration s, offset s), in order of start
        offset = 0.0
        for r in sorted(runs, key=lambda r: r["start"]):
            duration = max((r["end"] - r["start"]).total_seconds(), 0.0)
            self.spans.append((r["id"], r["start"], duration, offset))
            offset += duration
        self.total_s = offset
        self._by_id = {s[0]: s for s in self.spans}

    def seconds(self, t, run_id=None):
        """Search seconds of wall-clock time `t` (aware datetime) in run `run_id`, or, without it, in the latest
        run started at or before t (the first run for an earlier t)."""
        span = self._by_id.get(run_id)
        if span is None:
            span = self.spans[0]
            for s in self.spans:
                if s[1] <= t:
                    span = s
        _, start, duration, offset = span
        return offset + min(max((t - start).total_seconds(), 0.0), duration)

    def run_spans(self):
        """[(run id, start s, end s)] in search seconds."""
        return [(rid, off, off + d) for rid, _, d, off in self.spans]


def highlighted_templates(its, lineage, most=8):
    """The templates a score plot colours (the rest are drawn as one grey group): those of the champion's lineage
    (`lineage`: template names, root first), then the templates with the most scored iterations, `most` in all."""
    counts = {}
    for it in its:
        counts[it["template"]] = counts.get(it["template"], 0) + 1
    out = [t for t in lineage if t in counts][-most:]
    for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(out) >= most:
            break
        if t not in out:
            out.append(t)
    return out


def axis_window(values, keep=0.9, floor=3.0, margin=1.15):
    """(lo, hi) of a bar axis that shows the bulk of `values` (signed, e.g. ideas' Δ %): each side reaches its most
    extreme value times `margin` (at least `floor` times it), but no further than the `keep` quantile of |value|
    times `margin` (at least `floor` times it); values beyond are drawn cut at the edge with their value written.
    One outlier (an idea 124 % slower) no longer squeezes the ±3 % effects that matter."""
    if not values:
        return -floor * margin, floor * margin
    mags = sorted(abs(v) for v in values)
    half = max(mags[min(len(mags) - 1, int(math.ceil(keep * len(mags))) - 1)], floor) * margin
    lo = -min(max(floor, -min(values)) * margin, half)
    hi = min(max(floor, max(values)) * margin, half)
    return lo, hi


def best_so_far(its):
    """[(iteration, best score so far in ms)] in iteration order."""
    out, best = [], math.inf
    for it in its:
        best = min(best, it["geomean_ms"])
        out.append((it, best))
    return out


def parameter_values(its):
    """{parameter: sorted distinct values} over `its`, only parameters with at least two values."""
    values = {}
    for it in its:
        for k, v in it["config"].items():
            values.setdefault(k, set()).add(v)
    return {k: sorted(v, key=_sort_key) for k, v in sorted(values.items(), key=lambda kv: _natural(kv[0]))
            if len(v) >= 2}


def _sort_key(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def _natural(name):
    """Sort key that puts P2 before P10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def interaction_strengths(its):
    """Pairwise interactions of one template's parameters on log(score). Method (two-way ANOVA on the
    unbalanced data of a search, stated in the report): with y = ln(geomean_ms), grand mean m, level means
    a_i, b_j and cell means c_ij (n_ij configs), SS_int = sum n_ij (c_ij - a_i - b_j + m)^2; strength =
    SS_int / SS_total, the share of the variance of y that the pair explains beyond its two main effects.
    Returns [(strength, a, b)] strongest first; pairs need two levels each and at least 3 filled cells."""
    values = parameter_values(its)
    ys = np.array([math.log(it["geomean_ms"]) for it in its])
    if len(ys) < 4:
        return []
    m = float(ys.mean())
    ss_total = float(((ys - m) ** 2).sum())
    if ss_total <= 0:
        return []
    names = list(values)
    # Each parameter's value as a level index (-1: the config lacks it), so that a pair's level and cell means are
    # bincounts: a night's DB has 200,000 scored configs and 136 pairs of fa3_tma's 17 parameters.
    codes = {}
    for a in names:
        index = {v: k for k, v in enumerate(values[a])}
        codes[a] = np.array([index.get(it["config"].get(a), -1) if a in it["config"] else -1 for it in its])
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            rows = (codes[a] >= 0) & (codes[b] >= 0)
            ca, cb, y = codes[a][rows], codes[b][rows], ys[rows]
            na, nb = len(values[a]), len(values[b])
            mean_a = np.bincount(ca, y, na) / np.maximum(np.bincount(ca, None, na), 1)
            mean_b = np.bincount(cb, y, nb) / np.maximum(np.bincount(cb, None, nb), 1)
            cell = ca * nb + cb
            n = np.bincount(cell, None, na * nb)
            if np.count_nonzero(n) < 3:
                continue
            filled = n > 0
            c = np.bincount(cell, y, na * nb)[filled] / n[filled]
            ia, ib = np.divmod(np.nonzero(filled)[0], nb)
            ss = float((n[filled] * (c - mean_a[ia] - mean_b[ib] + m) ** 2).sum())
            out.append((ss / ss_total, a, b))
    out.sort(key=lambda t: -t[0])
    return out


def _means(pairs):
    groups = {}
    for k, y in pairs:
        groups.setdefault(k, []).append(y)
    return {k: statistics.fmean(v) for k, v in groups.items()}


def load_case_work(path):
    """cases.json from `attn-tuner report`: {"ceilings": {...}, "runs": {run id: {case_id: work}}}."""
    with open(path) as f:
        doc = json.load(f)
    sets = doc["case_sets"]
    runs = {int(k): {c["case_id"]: c for c in sets[v]} for k, v in doc["run_case_set"].items()}
    return doc["ceilings"], runs


def case_metrics(case_rows, work, ceilings):
    """Per case of an iteration: us, TFLOP/s, % of the compute peak, x the roofline floor (work from
    workload/roofline via cases.json; a case without work or latency gets None there)."""
    out = []
    for c in case_rows:
        w = work.get(c["case_id"])
        us = c["median_ms"] * 1e3 if c["median_ms"] is not None else None
        row = {"case_id": c["case_id"], "family": c["family"], "us": us, "passed": c["passed"], "work": w,
               "tflops": None, "pct_peak": None, "x_floor": None}
        if w and us:
            row["tflops"] = w["flops"] / (us * 1e-6) / 1e12
            row["pct_peak"] = 100 * row["tflops"] / ceilings["tflops"]
            row["x_floor"] = us / w["floor_us"] if w["floor_us"] > 0 else None
        out.append(row)
    return out


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None


def set_champion_scores(data, cases_path):
    """Gives each champion of `data` its score ("score_ms": the one rule of db/champion_score.hpp, the number
    `status` and `query best` show, written by `attn-tuner report` into cases.json "champion_scores") and keeps the
    champions table's own column, the A/B/A re-timing that promoted it, as "aba_b_ms"."""
    with open(cases_path) as f:
        scores = {(c["scope"], c["iteration_id"]): c["score_ms"] for c in json.load(f).get("champion_scores", [])}
    for c in data["champions"]:
        c["aba_b_ms"] = c["score_ms"]
        c["score_ms"] = scores.get((c["scope"], c["iteration_id"]))


def bucket_champions(data, cases_path):
    """Per shape bucket (t_max, batch*heads; issue 9's buckets): the whole-suite keep/discard iteration with
    the lowest geometric mean of its per-case medians over the bucket's cases, among those that timed and
    passed every one. Computed by `attn-tuner report` (db/shape_buckets.cpp, the rule the export's bucket
    champions use) into cases.json "buckets". Returns [{bucket, case_ids, iter, score_ms}] ordered by
    bucket, `iter` the iteration's row of `data`."""
    with open(cases_path) as f:
        rows = json.load(f).get("buckets", [])
    its = {it["id"]: it for it in data["iterations"]}
    return [{"bucket": tuple(b["bucket"]), "case_ids": b["case_ids"], "iter": its[b["iter"]], "score_ms": b["score_ms"]}
            for b in rows if b["iter"] in its]


def load_baseline(path, suite):
    """Per-case latency of a baseline, {case_id: us}, and a description of it. Formats (docs/report.md):
    JSON, one object, a list, or JSON lines, of either the harness's results (case_results[].latency_ms;
    scripts/device/step_harness.sh appends them) or `attn-tuner bench --json` results (cases[].median_ms,
    kernel-only): the objects of `suite`, median per case over them; or CSV case_id,us."""
    with open(path) as f:
        text = f.read()
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        return _json_baseline(path, text, suite)
    return _csv_baseline(path, text)


def _suite_of(doc):
    """The suite a harness or bench result belongs to; a bench "manifest:dir/name.json" is "name"; None
    when it does not say (`attn-tuner bench --json` prints no suite: it counts for any)."""
    name = doc.get("suite_name") or doc.get("suite")
    if not name:
        return None
    name = str(name)
    return pathlib.PurePath(name[len("manifest:"):]).stem if name.startswith("manifest:") else name


def _json_baseline(path, text, suite):
    docs = []
    try:
        parsed = json.loads(text)
        docs = parsed if isinstance(parsed, list) else [parsed]
    except ValueError:
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    docs.append(json.loads(line))
                except ValueError as e:
                    raise ReportError(f"--baseline {path}: line {n} is not JSON: {e}")
    docs = [d for d in docs if isinstance(d, dict)]
    mine = [d for d in docs if _suite_of(d) in (suite, None)]
    if not mine:
        found = sorted({_suite_of(d) for d in docs})
        raise ReportError(f"--baseline {path}: no result for suite {suite} (suites there: "
                          f"{', '.join(found) or 'none'})")
    bench = [d for d in mine if "cases" in d]
    configs = {json.dumps(d.get("config"), sort_keys=True) + str(d.get("template")) for d in bench}
    if len(configs) > 1:
        raise ReportError(f"--baseline {path}: {len(configs)} bench results of suite {suite} with different configs; "
                          "pass a file with the line of one config")
    per_case = {}
    for d in mine:
        for c in d.get("case_results", []):  # harness
            if c.get("latency_ms"):
                per_case.setdefault(c["case_id"], []).append(c["latency_ms"] * 1e3)
        for c in d.get("cases", []):  # bench
            if c.get("median_ms") and c.get("passed", True):
                per_case.setdefault(c["case_id"], []).append(c["median_ms"] * 1e3)
    if not per_case:
        raise ReportError(f"--baseline {path}: the results of suite {suite} have no case latencies")
    kind = "bench (kernel-only)" if bench else "harness"
    what = f"{kind} results, {len(mine)} of {suite}"
    if bench:
        what += f", {bench[0].get('template', '?')} {bench[0].get('label') or ''}".rstrip()
    return {k: statistics.median(v) for k, v in per_case.items()}, what + ", median per case"


def _csv_baseline(path, text):
    out = {}
    for n, row in enumerate(csv.reader(text.splitlines()), 1):
        if not row or not "".join(row).strip() or row[0].startswith("#"):
            continue
        if len(row) < 2:
            raise ReportError(f"--baseline {path}: line {n} needs two columns case_id,us: {','.join(row)}")
        try:
            us = float(row[1])
        except ValueError:
            if n == 1:
                continue  # header
            raise ReportError(f"--baseline {path}: line {n}: '{row[1]}' is not a latency in us")
        if not us > 0:
            raise ReportError(f"--baseline {path}: line {n}: latency {us} us is not positive")
        out[row[0].strip()] = us
    if not out:
        raise ReportError(f"--baseline {path}: no case_id,us rows")
    return out, "CSV of per-case us"


IDEA_VERDICTS = ("win", "no_gain", "slower", "broken")


def rank_ideas(ideas):
    """The idea queue's rows split for the report: (measured, broken, pending). measured: judged ideas with a
    measured effect (verdict win, no_gain or slower and a delta_pct), ranked by delta_pct, most negative (the
    biggest speed-up over the parent) first, ties by id; broken: verdict broken, oldest first; pending: the
    rest (still checking, tuning or judging, interrupted, or judged without a measured effect)."""
    measured = sorted((i for i in ideas if i["verdict"] in ("win", "no_gain", "slower") and i["delta_pct"] is not None),
                      key=lambda i: (i["delta_pct"], i["id"]))
    broken = [i for i in ideas if i["verdict"] == "broken"]
    taken = {i["id"] for i in measured} | {i["id"] for i in broken}
    return measured, broken, [i for i in ideas if i["id"] not in taken]


def champion_lineage(template, ideas, proposals):
    """What the template `template` stacks, root first: a list of steps {"template", "idea", "proposal"} from
    the repository template it descends from (idea and proposal None) to `template`. A step's template was
    made by an idea (ideas.template, the latest such row) or else by a proposal (proposals.template); its
    parent is that row's parent_template. The chain ends at a template no idea or proposal made (the root),
    or at a template seen before (a cycle cannot happen in a sound DB; it stops rather than loops)."""
    by_idea = {i["template"]: i for i in ideas if i["template"]}  # ideas are oldest first: the latest wins
    by_proposal = {p["template"]: p for p in proposals if p["template"]}
    steps, seen, t = [], set(), template
    while t and t not in seen:
        seen.add(t)
        idea, prop = by_idea.get(t), None if t in by_idea else by_proposal.get(t)
        steps.append({"template": t, "idea": idea, "proposal": prop})
        parent = (idea or prop or {}).get("parent_template")
        if not (idea or prop):
            break
        t = parent
    return list(reversed(steps))
