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


def _since(t, t0, unit):
    return (t - t0).total_seconds() / unit[0]


def _cumulative(xs, max_points=4000):
    """A cumulative count over sorted times xs as (x, count) steps, at most about max_points of them (every k-th
    and the last): a night's million iterations draw the same line from a few thousand."""
    k = max(1, len(xs) // max_points)
    idx = list(range(0, len(xs), k))
    if xs and idx[-1] != len(xs) - 1:
        idx.append(len(xs) - 1)
    return [xs[i] for i in idx], [i + 1 for i in idx]


def timeline(out_dir, runs, iterations, t0, has_fidelity, full_value, is_full, parse_time):
    """Cumulative finished iterations over time (all, and screened vs full when the DB records fidelity),
    runs as shaded spans; beside it per run the wall, GPU-busy and NVRTC hours."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    done = sorted(((parse_time(it["finished_at"]), it) for it in iterations if it["finished_at"]),
                  key=lambda p: p[0])
    unit = time_unit(max([(r["end"] - t0).total_seconds() for r in runs] + [1]))
    xs = [_since(t, t0, unit) for t, _ in done]
    ax.step(*_cumulative(xs), where="post", color="black", label="all finished")
    if has_fidelity:
        full = [x for x, (_, it) in zip(xs, done) if is_full(it, full_value)]
        scr = [x for x, (_, it) in zip(xs, done) if not is_full(it, full_value)]
        ax.step(*_cumulative(full), where="post", color="tab:blue", label="full suite")
        ax.step(*_cumulative(scr), where="post", color="tab:orange", label="screened")
    crash_x = [x for x, (_, it) in zip(xs, done) if it["status"] == "crash"]
    ax.step(*_cumulative(crash_x), where="post", color="tab:red", label="crashed")
    for i, r in enumerate(runs):
        a, b = _since(r["start"], t0, unit), _since(r["end"], t0, unit)
        ax.axvspan(a, max(b, a + 1e-4), color="tab:blue" if i % 2 == 0 else "tab:cyan", alpha=0.12,
                   label="runs (shaded)" if i == 0 else None)
        ax.annotate(f"run {r['id']}", (a, 1), xycoords=("data", "axes fraction"), va="top", fontsize=7)
    ax.set_title("Iterations over time")
    ax.set_xlabel(f"time since the first run started ({unit[1]})")
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


def score_over_time(out_dir, its, best, promotions, t0, parse_time):
    """Every scored iteration by template, the best-so-far line, and the overall champion's promotions."""
    fig, ax = plt.subplots(figsize=(9, 4))
    unit = time_unit(max((parse_time(it["finished_at"]) - t0).total_seconds() for it in its))
    for tname in sorted({it["template"] for it in its}):
        pts = [(_since(parse_time(it["finished_at"]), t0, unit), it["geomean_ms"])
               for it in its if it["template"] == tname]
        ax.scatter(*zip(*pts), s=10, alpha=0.6, label=tname)
    bx = [_since(parse_time(it["finished_at"]), t0, unit) for it, _ in best]
    ax.step(bx, [b for _, b in best], where="post", color="black", linewidth=1.2, label="best so far")
    ov = [p for p in promotions if p["scope"] == "overall"]
    if ov:
        px = [_since(parse_time(p["promoted_at"]), t0, unit) for p in ov]
        ax.scatter(px, [p["score_ms"] for p in ov], marker="*", s=120, color="gold", edgecolor="black",
                   zorder=5, label="champion promotion (A/B/A score)")
        for x, p in list(zip(px, ov))[-8:]:  # the last eight: more would hide the points
            lead, noise = p["aba"].get("lead_ms"), p["aba"].get("noise_ms")
            if lead is not None and noise:
                ax.annotate(f"−{lead * 1e3:.1f} µs\n(noise {noise * 1e3:.1f} µs)", (x, p["score_ms"]), fontsize=6,
                            xytext=(4, 6), textcoords="offset points")
    scores = [it["geomean_ms"] for it in its]
    if max(scores) / min(scores) > 3:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set_title("Score over time (geomean of family medians)")
    ax.set_xlabel(f"time since the first run started ({unit[1]})")
    ax.set_ylabel("score (ms)")
    ax.legend(fontsize=7, ncol=2, loc="best")
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
                    r, g, b, _ = im.cmap(im.norm(grid[i, j]))
                    ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"  # readable on the cell
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


def roofline(out_dir, champ_rows, baseline_rows, ceilings, title):
    """Achieved TFLOP/s over arithmetic intensity (FLOP/byte) for the champion's cases, under the
    ceilings min(peak, intensity x bandwidth)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ai = [r["work"]["flops"] / r["work"]["bytes"] for r in champ_rows]
    lo, hi = min(ai) / 4, max(ai) * 4
    x = np.geomspace(min(lo, 1.0), max(hi, 2 * ceilings["tflops"] / ceilings["tbps"]), 200)
    ax.plot(x, np.minimum(ceilings["tflops"], x * ceilings["tbps"]), color="black",
            label=f"roofline ({ceilings['tflops']:g} TFLOP/s, {ceilings['tbps']:g} TB/s)")
    for fam, marker in FAMILY_MARKER.items():
        pts = [(a, r["tflops"]) for a, r in zip(ai, champ_rows) if r["family"] == fam and r["tflops"]]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, s=30, label=f"champion, {FAMILY_SHORT[fam]}")
    for a, r in zip(ai, champ_rows):
        if r["tflops"]:
            ax.annotate(r["case_id"], (a, r["tflops"]), fontsize=6, xytext=(3, -8), textcoords="offset points")
    bpts = [(r["work"]["flops"] / r["work"]["bytes"], r["work"]["flops"] / (r["baseline_us"] * 1e-6) / 1e12)
            for r in baseline_rows if r.get("work") and r.get("baseline_us")]
    if bpts:
        ax.scatter(*zip(*bpts), marker="o", s=30, facecolors="none", edgecolors="tab:red", label="baseline")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved (TFLOP/s)")
    ax.legend(fontsize=7)
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


def ideas(out_dir, ranked):
    """The idea queue's measured ideas, ranked: each idea's effect on the suite score against its parent
    (delta %, A/B/A re-timing; negative is faster) as a bar coloured by its verdict, with the champion rule's
    noise (± noise %) as an error bar and as a band around the bar's end."""
    fig, ax = plt.subplots(figsize=(8, max(2.4, 0.42 * len(ranked) + 1.4)))
    y = np.arange(len(ranked))
    for k, i in enumerate(ranked):
        d, n = i["delta_pct"], i["noise_pct"] or 0.0
        ax.barh(k, d, 0.6, color=VERDICT_COLOR.get(i["verdict"], "tab:blue"))
        if n:
            ax.fill_betweenx([k - 0.38, k + 0.38], d - n, d + n, color="black", alpha=0.12, linewidth=0)
            ax.errorbar(d, k, xerr=n, fmt="none", ecolor="black", capsize=3, linewidth=1)
    for verdict, color in VERDICT_COLOR.items():
        if any(i["verdict"] == verdict for i in ranked):
            ax.barh(0, 0, 0, color=color, label=verdict)  # legend entries only
    ax.errorbar([], [], xerr=[], fmt="none", ecolor="black", capsize=3, label="± noise (A/B/A)")
    ax.axvline(0, color="black", linewidth=0.8)
    labels = [f"#{i['id']} {i['file']}" for i in ranked]
    ax.set_yticks(y, [t if len(t) <= 38 else t[:37] + "…" for t in labels], fontsize=7)
    ax.invert_yaxis()  # the best on top
    ax.set_title("Ideas ranked by measured effect vs their parent")
    ax.set_xlabel("score change vs parent (%; negative = faster)")
    ax.set_ylabel("idea (best first)")
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, out_dir, "ideas.png")
