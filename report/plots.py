"""The morning report's images (matplotlib, Agg backend): each function draws one PNG into the output
folder and returns its file name. Every plot has a title, axis labels with units and a legend."""
import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, MaxNLocator  # noqa: E402
from PIL import Image  # noqa: E402

DPI = 80  # small images: about 700 x 350 px for the wide plots
MAX_STRIP_POINTS = 100  # configs drawn as points per box (a random sample beyond that), to keep PNGs small
FAMILY_SHORT = {"sliding_window": "window", "sliding_window_global": "global",
                "sliding_window_retrieval": "retrieval"}
FAMILY_MARKER = {"sliding_window": "o", "sliding_window_global": "s", "sliding_window_retrieval": "^"}
VERDICT_COLOR = {"win": "tab:green", "no_gain": "tab:gray", "slower": "tab:orange", "broken": "tab:red"}
STATUS_COLOR = {"keep": "tab:green", "discard": "tab:gray", "crash": "tab:red", "interrupted": "tab:orange",
                "running": "tab:blue"}


def _save(fig, out_dir, name):
    """Saves as an 8-bit palette PNG (Pillow, a dependency of matplotlib): plots use few colours, and the
    palette makes the files about three times smaller than RGBA."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    buf.seek(0)
    Image.open(buf).convert("RGB").quantize(colors=256).save(out_dir / name, optimize=True)
    return name


def time_unit(span_s):
    """(seconds per unit, unit name) that suits a span: s up to 2 min, min up to 2 h, else h."""
    if span_s <= 120:
        return 1.0, "s"
    if span_s <= 7200:
        return 60.0, "min"
    return 3600.0, "h"


def _cumulative(xs, max_points=4000):
    """A cumulative count over sorted times xs as (x, count) steps, at most about max_points of them (every k-th
    and the last): a night's million iterations draw the same line from a few thousand."""
    k = max(1, len(xs) // max_points)
    idx = list(range(0, len(xs), k))
    if xs and idx[-1] != len(xs) - 1:
        idx.append(len(xs) - 1)
    return [xs[i] for i in idx], [i + 1 for i in idx]


def _run_labels(ax, spans, unit, legend=True):
    """Shades each run's span of search time (alternating colours) and names it at the top, on alternating rows so
    that the names of short runs do not overlap; `legend`: one legend entry for the shading."""
    for i, (rid, a, b) in enumerate(spans):
        a, b = a / unit[0], b / unit[0]
        ax.axvspan(a, max(b, a + 1e-4), color="tab:blue" if i % 2 == 0 else "tab:cyan", alpha=0.12, linewidth=0,
                   label="runs (shaded)" if i == 0 and legend else None)
        ax.annotate(f"run {rid}", (a, 1 - 0.05 * (i % 3)), xycoords=("data", "axes fraction"), va="top", fontsize=6)


def timeline(out_dir, runs, iterations, clock, has_fidelity, full_value, is_full, parse_time):
    """Cumulative finished iterations over search time (the runs end to end: analysis.SearchClock), all and screened
    vs full when the DB records fidelity, runs as shaded spans; beside it per run the wall, GPU-busy and NVRTC
    hours."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    done = sorted(((clock.seconds(parse_time(it["finished_at"]), it["run_id"]), it) for it in iterations
                   if it["finished_at"]), key=lambda p: p[0])
    unit = time_unit(max(clock.total_s, 1))
    xs = [s / unit[0] for s, _ in done]
    ax.step(*_cumulative(xs), where="post", color="black", label="all finished")
    if has_fidelity:
        full = [x for x, (_, it) in zip(xs, done) if is_full(it, full_value)]
        scr = [x for x, (_, it) in zip(xs, done) if not is_full(it, full_value)]
        ax.step(*_cumulative(full), where="post", color="tab:blue", label="full suite")
        ax.step(*_cumulative(scr), where="post", color="tab:orange", label="screened")
    crash_x = [x for x, (_, it) in zip(xs, done) if it["status"] == "crash"]
    ax.step(*_cumulative(crash_x), where="post", color="tab:red", label="crashed")
    _run_labels(ax, clock.run_spans(), unit)
    ax.set_title("Iterations over search time")
    ax.set_xlabel(f"search time: the runs end to end, gaps between them cut ({unit[1]})")
    ax.set_ylabel("iterations (cumulative)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))

    bunit = time_unit(max([r["wall_h"] * 3600 for r in runs] + [1]))
    ids = [f"run {r['id']}" for r in runs]
    y = np.arange(len(runs))
    h = 0.27
    scale = 3600 / bunit[0]
    bx.barh(y - h, [r["wall_h"] * scale for r in runs], h, label="wall", color="tab:gray")
    bx.barh(y, [r["gpu_h"] * scale for r in runs], h, label="GPU busy", color="tab:green")
    bx.barh(y + h, [r["compile_h"] * scale for r in runs], h, label="NVRTC (all threads)", color="tab:purple")
    bx.set_yticks(y, ids)
    bx.invert_yaxis()
    bx.set_title("Time per run")
    bx.set_xlabel(f"time ({bunit[1]})")
    bx.legend(fontsize=7)
    bx.grid(axis="x", alpha=0.3)
    return _save(fig, out_dir, "timeline.png")


TEMPLATE_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                   "tab:olive"]  # no grey: the templates not highlighted are grey
SCORE_WINDOW = 1.5  # the score plot's axis: up to 1.5 x the best score (the rest is counted, not drawn)


def score_over_time(out_dir, its, best, promotions, clock, parse_time, highlighted):
    """Every scored iteration over search time (analysis.SearchClock), the templates of `highlighted` in colours
    and the others in one grey group, the best-so-far line and the overall champion's promotions (the last five
    labelled with their lead). The score axis spans the best score to SCORE_WINDOW x it: the iterations above are
    counted in the legend."""
    fig, ax = plt.subplots(figsize=(11, 4.2))
    unit = time_unit(max(clock.total_s, 1))

    def x_of(it):
        return clock.seconds(parse_time(it["finished_at"]), it["run_id"]) / unit[0]

    _run_labels(ax, clock.run_spans(), unit, legend=False)
    lowest = min([b for _, b in best] + [p["score_ms"] for p in promotions if p["scope"] == "overall"])
    top = lowest * SCORE_WINDOW
    above = sum(1 for it in its if it["geomean_ms"] > top)
    others = [it for it in its if it["template"] not in highlighted]
    if others:
        n = len({it["template"] for it in others})
        ax.scatter([x_of(it) for it in others], [it["geomean_ms"] for it in others], s=6, alpha=0.35,
                   color="tab:gray", linewidths=0, label=f"{n} other {'template' if n == 1 else 'templates'}")
    for k, tname in enumerate(highlighted):  # the lineage first in the legend and on top of the others
        pts = [(x_of(it), it["geomean_ms"]) for it in its if it["template"] == tname]
        if pts:
            ax.scatter(*zip(*pts), s=9, alpha=0.7, linewidths=0, label=tname, zorder=3 + len(highlighted) - k,
                       color=TEMPLATE_COLORS[k % len(TEMPLATE_COLORS)])
    ax.step([x_of(it) for it, _ in best], [b for _, b in best], where="post", color="black", linewidth=1.3,
            label="best so far")
    ov = [p for p in promotions if p["scope"] == "overall"]
    if ov:
        px = [clock.seconds(parse_time(p["promoted_at"])) / unit[0] for p in ov]
        ax.scatter(px, [p["score_ms"] for p in ov], marker="*", s=110, color="gold", edgecolor="black",
                   zorder=5, label="champion promotion (A/B/A score)")
        for k, (x, p) in enumerate(list(zip(px, ov))[-5:]):  # the last five: more would hide the points
            lead, noise = p["aba"].get("lead_ms"), p["aba"].get("noise_ms")
            if lead is not None and noise:  # above and below in turn: promotions minutes apart sit close
                ax.annotate(f"−{lead * 1e3:.1f} µs (noise {noise * 1e3:.1f})", (x, p["score_ms"]), fontsize=6,
                            xytext=(-5, 7 if k % 2 else -11), textcoords="offset points", ha="right")
    ax.set_ylim(lowest * 0.985, top)
    ax.set_xlim(0, clock.total_s / unit[0])
    ax.set_title("Score over search time (geomean of family medians)")
    ax.set_xlabel(f"search time: the runs end to end, gaps between them cut ({unit[1]})")
    ax.set_ylabel("score (ms)")
    handles, labels = ax.get_legend_handles_labels()
    if above:
        handles.append(plt.Line2D([], [], linestyle="none"))
        labels.append(f"{above} iterations above {top:.3g} ms not drawn")
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(alpha=0.3)
    return _save(fig, out_dir, "score.png")


def parameter_effects(out_dir, tname, its, values, file_name):
    """Per parameter of one template: the score distribution per value (box plot with the points)."""
    names = list(values)
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.6 * nrows), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, name in zip(axes.flat, names):
        by_value = {v: [] for v in values[name]}  # one pass over a night's 200,000 configs per parameter
        for it in its:
            group = by_value.get(it["config"].get(name))
            if group is not None:
                group.append(it["geomean_ms"])
        groups = list(by_value.values())
        ax.boxplot(groups, showfliers=False)
        for k, g in enumerate(groups, 1):
            pts = rng.choice(g, MAX_STRIP_POINTS, replace=False) if len(g) > MAX_STRIP_POINTS else g
            ax.scatter(k + rng.uniform(-0.15, 0.15, len(pts)), pts, s=4, color="tab:blue", linewidths=0,
                       label="one config" if k == 1 else None)
        ax.set_xticks(range(1, len(groups) + 1), [str(v) for v in values[name]], fontsize=7)
        ax.set_title(f"{name}", fontsize=9)
        ax.set_xlabel(f"{name} value", fontsize=8)
        ax.set_ylabel("score (ms)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"Parameter effects: {tname} (box: quartiles, whiskers 1.5 IQR; points: up to "
                 f"{MAX_STRIP_POINTS} per value)", fontsize=10)
    return _save(fig, out_dir, file_name)


def interactions(out_dir, tname, its, pairs, values, file_name):
    """Heat maps of the geometric-mean score per (value of a, value of b) for the strongest pairs."""
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.6 * len(pairs), 3.6), squeeze=False)
    for ax, (strength, a, b) in zip(axes.flat, pairs):
        va, vb = values[a], values[b]
        grid = np.full((len(va), len(vb)), np.nan)
        count = np.zeros((len(va), len(vb)), dtype=int)
        for i, x in enumerate(va):
            for j, y in enumerate(vb):
                s = [it["geomean_ms"] for it in its if it["config"].get(a) == x and it["config"].get(b) == y]
                if s:
                    grid[i, j] = math.exp(sum(math.log(v) for v in s) / len(s))
                    count[i, j] = len(s)
        im = ax.imshow(grid, cmap="viridis_r", aspect="auto")
        for i in range(len(va)):
            for j in range(len(vb)):
                if count[i, j]:
                    red, green, blue, _ = im.cmap(im.norm(grid[i, j]))  # not b: the pair's second parameter
                    ink = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"  # readable
                    ax.text(j, i, f"{grid[i, j]:.3g}\nn={count[i, j]}", ha="center", va="center", fontsize=6,
                            color=ink)
        ax.set_xticks(range(len(vb)), [str(v) for v in vb], fontsize=7)
        ax.set_yticks(range(len(va)), [str(v) for v in va], fontsize=7)
        ax.set_xlabel(f"{b} value")
        ax.set_ylabel(f"{a} value")
        ax.set_title(f"{a} x {b}: {100 * strength:.1f}% of variance", fontsize=9)
        fig.colorbar(im, ax=ax, label="geomean score (ms)")
    fig.suptitle(f"Strongest interactions: {tname}", fontsize=10)
    return _save(fig, out_dir, file_name)


def _side_labels(ax, points, texts, fontsize=6):
    """Names points in a column beside the axes, in the order of their heights, each joined to its point by a thin
    line: labels written at the points overlapped where cases of one shape sit close together."""
    order = sorted(range(len(points)), key=lambda k: -points[k][1])
    n = len(order)
    for rank, k in enumerate(order):
        y = 1.0 - (rank + 0.5) / n if n > 1 else 0.5
        ax.annotate(texts[k], points[k], xycoords="data", xytext=(1.03, y), textcoords="axes fraction",
                    fontsize=fontsize, va="center", annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": "0.6", "linewidth": 0.5, "shrinkA": 0, "shrinkB": 2})


def roofline(out_dir, champ_rows, baseline_rows, ceilings, title):
    """Achieved TFLOP/s over arithmetic intensity (FLOP/byte) for the champion's cases, under the ceilings
    min(peak, intensity x bandwidth); the axes span the cases and the ridge point, the case names stand in a
    column at the right, each joined to its point."""
    fig, ax = plt.subplots(figsize=(8, 4.4))
    ai = [r["work"]["flops"] / r["work"]["bytes"] for r in champ_rows]
    ridge = ceilings["tflops"] / ceilings["tbps"]
    bpts = [(r["work"]["flops"] / r["work"]["bytes"], r["work"]["flops"] / (r["baseline_us"] * 1e-6) / 1e12)
            for r in baseline_rows if r.get("work") and r.get("baseline_us")]
    tf = [r["tflops"] for r in champ_rows if r["tflops"]] + [p[1] for p in bpts]
    x = np.geomspace(min(ai + [ridge]) / 2, max(ai + [ridge]) * 2, 200)
    ax.plot(x, np.minimum(ceilings["tflops"], x * ceilings["tbps"]), color="black",
            label=f"roofline ({ceilings['tflops']:g} TFLOP/s, {ceilings['tbps']:g} TB/s)")
    for fam, marker in FAMILY_MARKER.items():
        pts = [(a, r["tflops"]) for a, r in zip(ai, champ_rows) if r["family"] == fam and r["tflops"]]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, s=30, label=f"champion, {FAMILY_SHORT[fam]}", zorder=3)
    labelled = [((a, r["tflops"]), r["case_id"]) for a, r in zip(ai, champ_rows) if r["tflops"]]
    if bpts:
        ax.scatter(*zip(*bpts), marker="o", s=30, facecolors="none", edgecolors="tab:red", label="baseline")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(min(tf) / 2, ceilings["tflops"] * 1.6)
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers: a zoomed log axis may hold one power of ten or none
        axis.set_major_formatter(FormatStrFormatter("%g"))
        axis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.tick_params(which="minor", labelsize=6)
    _side_labels(ax, [p for p, _ in labelled], [t for _, t in labelled])
    ax.set_title(title)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved (TFLOP/s)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    return _save(fig, out_dir, "roofline.png")


def failures(out_dir, by_kind_template):
    """Crashes per failure kind, stacked by template."""
    kinds = sorted({k for k, _ in by_kind_template})
    templates = sorted({t for _, t in by_kind_template})
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bottom = np.zeros(len(kinds))
    for t in templates:
        h = np.array([by_kind_template.get((k, t), 0) for k in kinds])
        ax.bar(kinds, h, bottom=bottom, label=t)
        bottom += h
    ax.set_title("Failures by kind")
    ax.set_xlabel("failure kind")
    ax.set_ylabel("iterations (count)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=7, title="template", title_fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, out_dir, "failures.png")


def baseline(out_dir, rows, label):
    """Per case: the overall champion's latency beside the baseline's."""
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(rows) + 2), 3.6))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["us"] for r in rows], 0.4, label="champion", color="tab:blue")
    ax.bar(x + 0.2, [r["baseline_us"] for r in rows], 0.4, label=f"baseline: {label}", color="tab:red")
    ax.set_xticks(x, [r["case_id"] for r in rows], rotation=30, ha="right", fontsize=7)
    ax.set_title("Champion vs baseline per case")
    ax.set_xlabel("case")
    ax.set_ylabel("latency (µs)")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, out_dir, "baseline.png")


def ideas(out_dir, ranked, broken=()):
    """The idea queue's measured ideas, ranked: each idea's effect on the suite score against its parent (delta %,
    A/B/A re-timing; negative is faster) as a bar coloured by its verdict, with the champion rule's noise (± noise
    %) as an error bar and as a band around the bar's end; the broken ideas below them, named with their kind. The
    axis spans the bulk of the effects (analysis.axis_window): a bar beyond it is cut at the edge and its value
    written there."""
    from analysis import axis_window
    rows = list(ranked) + list(broken)
    fig, ax = plt.subplots(figsize=(8, max(2.4, 0.3 * len(rows) + 1.6)))
    y = np.arange(len(rows))
    lo, hi = axis_window([i["delta_pct"] for i in ranked])
    for k, i in enumerate(ranked):
        d, n = i["delta_pct"], i["noise_pct"] or 0.0
        shown = min(max(d, lo), hi)
        ax.barh(k, shown, 0.6, color=VERDICT_COLOR.get(i["verdict"], "tab:blue"))
        if shown != d:  # cut at the axis' edge: its value written inside the bar's end
            ax.annotate(f"{d:+.1f} % →" if d > 0 else f"← {d:+.1f} %", (shown, k), fontsize=6, va="center",
                        ha="right" if d > 0 else "left", xytext=(-3 if d > 0 else 3, 0), textcoords="offset points",
                        color="white", fontweight="bold")
        elif n:
            ax.fill_betweenx([k - 0.38, k + 0.38], d - n, d + n, color="black", alpha=0.12, linewidth=0)
            ax.errorbar(d, k, xerr=n, fmt="none", ecolor="black", capsize=2, linewidth=0.8)
    for k, i in enumerate(broken, len(ranked)):
        ax.annotate(f"broken ({i['broken_kind'] or 'no kind'}): no effect measured", (0, k), fontsize=6, va="center",
                    xytext=(4, 0), textcoords="offset points", color=VERDICT_COLOR["broken"])
    for verdict, color in VERDICT_COLOR.items():
        if any(i["verdict"] == verdict for i in rows):
            ax.barh(0, 0, 0, color=color, label=verdict)  # legend entries only
    ax.errorbar([], [], xerr=[], fmt="none", ecolor="black", capsize=2, label="± noise (A/B/A)")
    ax.axvline(0, color="black", linewidth=0.8)
    labels = [f"#{i['id']} {i['file']}" for i in rows]
    ax.set_yticks(y, [t if len(t) <= 38 else t[:37] + "…" for t in labels], fontsize=6)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the best on top
    ax.set_xlim(lo, hi)
    ax.set_title("Ideas ranked by measured effect vs their parent")
    ax.set_xlabel("score change vs parent (%; negative = faster)")
    ax.set_ylabel("idea (best first)")
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, out_dir, "ideas.png")
