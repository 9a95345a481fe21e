"""PNG charts of a run, drawn from its results files (matplotlib, Agg backend).

ratios.png: every ratio figure of the run (a target in ``x``, or a ``*_over_*`` value
anywhere in a part's results), one bar per database, its target marked. reclaim-scale.png:
reclaim pass time against the stranded count and against the total. failover.png:
workflows held again over time after an engine died. pages.png: server time per page in
calibration requests (its target); pages-1m.png: the same at a million claims in both
ownership modes.
ownership-modes.png: the renew pass of one engine in each ownership mode, its time and its
WAL against the claims it holds.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COLORS = {"sqlite": "#4C72B0", "postgresql": "#DD8452"}
NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
PAGE_PARTS = ("pages.", "pages_")
META_KEYS = {"vendor", "database", "when", "machine", "commit", "elapsed_s", "targets", "options"}


@dataclass(frozen=True)
class RatioFigure:
    key: str
    label: str
    value: float
    limit: float | None


def _scan(node: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], float]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and "_over_" in key:
                yield (*path, key), float(value)
            else:
                yield from _scan(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _scan(value, (*path, str(i)))


def ratio_figures(run: dict[str, Any]) -> list[RatioFigure]:
    """The run's ratios: its targets in ``x``, then any other ``*_over_*`` value in it."""
    figures = [
        RatioFigure(t["key"], t["label"], float(t["value"]), float(t["limit"]))
        for t in run.get("targets", [])
        # The pages' ratios, one per endpoint, have charts of their own.
        if t.get("unit") == "x" and not t["key"].startswith(PAGE_PARTS)
    ]
    unmatched = list(figures)
    for part, payload in run.items():
        if part in META_KEYS:
            continue
        for path, value in _scan(payload, (part,)):
            # A ratio that is also a target of the same part is drawn once, as the target;
            # each target stands for one value, preferably one under its own key.
            same = [
                f
                for f in unmatched
                if f.key.split(".")[0] == part and round(f.value, 3) == round(value, 3)
            ]
            same.sort(key=lambda f: not ".".join(path).startswith(f.key + "."))
            if same:
                unmatched.remove(same[0])
                continue
            label = f"{part} {' '.join(path[1:-1])}: {path[-1].replace('_', ' ')}"
            figures.append(RatioFigure(".".join(path), label, value, None))
    return figures


def _ratios(plt: Any, runs: list[dict[str, Any]]) -> Any:
    per_run = [{f.key: f for f in ratio_figures(run)} for run in runs]
    keys: list[str] = []
    labels: dict[str, str] = {}
    for figures in per_run:
        for key, figure in figures.items():
            if key not in labels:
                keys.append(key)
                labels[key] = figure.label
    if not keys:
        return None
    height = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.42 * len(keys)))
    target_drawn = False
    top = max(f.value for figures in per_run for f in figures.values())
    for r, (run, figures) in enumerate(zip(runs, per_run, strict=True)):
        vendor = run["vendor"]
        for row, key in enumerate(keys):
            found = figures.get(key)
            if found is None:
                continue
            figure = found
            y = row - 0.4 + height * (r + 0.5)
            ax.barh(y, figure.value, height=height * 0.9, color=COLORS.get(vendor, "gray"))
            ax.text(figure.value, y, f" {figure.value:.2f}x", va="center", fontsize=7)
            if figure.limit is not None:
                ax.plot(
                    [figure.limit, figure.limit],
                    [y - height / 2, y + height / 2],
                    color="crimson",
                    linewidth=2.5,
                    label=None if target_drawn else "target (at most)",
                )
                target_drawn = True
                top = max(top, figure.limit)
    for vendor in dict.fromkeys(run["vendor"] for run in runs):
        ax.bar(0, 0, width=0, color=COLORS.get(vendor, "gray"), label=NAMES.get(vendor, vendor))
    ax.axvline(1.0, color="gray", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(keys)), [labels[k] for k in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.15)
    ax.set_xlabel("ratio (x): ours / baseline measured in the same run, or as labelled")
    ax.set_title("Every ratio of the benchmark run (lower is better; red = target)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=3, fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _reclaim_scale(plt: Any, runs: list[dict[str, Any]]) -> Any:
    runs = [run for run in runs if run.get("reclaim_scale", {}).get("points")]
    if not runs:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    for run in runs:
        vendor, data = run["vendor"], run["reclaim_scale"]
        color = COLORS.get(vendor, "gray")
        points = data["points"]
        for total in sorted({p["total"] for p in points}):
            line = sorted((p for p in points if p["total"] == total), key=lambda p: p["stranded"])
            if len(line) < 2:
                continue
            xs = [p["stranded"] for p in line]
            ys = [p["first_pass"]["median_ms"] for p in line]
            style = "-o" if total == max(p["total"] for p in points) else "--s"
            left.plot(xs, ys, style, color=color, label=f"{NAMES[vendor]}, {total:,} workflows")
            left.plot(xs, [ys[0] * x / xs[0] for x in xs], ":", color=color, alpha=0.6, linewidth=1)
        for stranded in sorted({p["stranded"] for p in points}):
            line = sorted(
                (p for p in points if p["stranded"] == stranded), key=lambda p: p["total"]
            )
            if len(line) < 2:
                continue
            xs = [p["total"] for p in line]
            ys = [p["first_pass"]["median_ms"] for p in line]
            right.plot(xs, ys, "-o", color=color, label=f"{NAMES[vendor]}, {stranded:,} stranded")
            right.plot(
                xs, [ys[0] * x / xs[0] for x in xs], ":", color=color, alpha=0.6, linewidth=1
            )
        idle = sorted(
            (int(total), info["idle_pass"]["median_ms"])
            for total, info in data["per_total"].items()
        )
        if len(idle) > 1:
            right.plot(
                [t for t, _ in idle],
                [ms for _, ms in idle],
                "--^",
                color=color,
                alpha=0.7,
                label=f"{NAMES[vendor]}, nothing stranded",
            )
    plain = plt.FuncFormatter(lambda value, _: f"{value:,.0f}")
    # Minor ticks labelled only at 2 and 5 of each decade, so the log axes stay legible.
    plain_minor = plt.FuncFormatter(
        lambda value, _: f"{value:,.0f}" if f"{value:.0e}"[0] in "25" else ""
    )
    right.axhline(2_000, color="crimson", linewidth=1.5, label="target: 2 s (1M, PostgreSQL)")
    for ax, xlabel, title in (
        (left, "stranded workflows", "Pass time vs stranded count"),
        (right, "workflows in the database", "Pass time vs database size"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(plain_minor)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("whole reclaim pass (ms, median)")
        ax.set_title(title)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Reclaim pass scaling (dotted: what linear growth would give)")
    fig.tight_layout()
    return fig


def _failover(plt: Any, runs: list[dict[str, Any]]) -> Any:
    runs = [run for run in runs if run.get("failover", {}).get("curve")]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(10, 5))
    for run in runs:
        vendor, data = run["vendor"], run["failover"]
        color = COLORS.get(vendor, "gray")
        xs = [ms / 1_000 for ms, _ in data["curve"]]
        ys = [count for _, count in data["curve"]]
        ax.step(xs, ys, where="post", color=color, linewidth=2, label=NAMES[vendor])
        ax.axvline(
            data["bound_ms"] / 1_000,
            color=color,
            linestyle="--",
            label=f"{NAMES[vendor]} bound: TTL + 2 x interval + one pass "
            f"({data['bound_ms'] / 1_000:.1f} s)",
        )
        ax.axvline(
            data["stale_after_ms"] / 1_000,
            color=color,
            linestyle=":",
            label=f"{NAMES[vendor]}: claims stale (TTL + grace)",
        )
    first = runs[0]["failover"]
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("seconds since engine A died")
    ax.set_ylabel("workflows held again (by engine B)")
    ax.set_title(
        f"Failover of {first['workflows']:,} claims (TTL {first['ttl_ms'] / 1000:g} s, "
        f"renew interval {first['renew_interval_ms'] / 1000:g} s, real clock)"
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def _pages(plt: Any, runs: list[dict[str, Any]]) -> Any:
    runs = [run for run in runs if run.get("pages", {}).get("endpoints")]
    if not runs:
        return None
    series = [
        (f"{NAMES[run['vendor']]} median", COLORS.get(run["vendor"], "gray"), run["pages"])
        for run in runs
    ]
    return _page_bars(plt, series)


def _pages_1m(plt: Any, runs: list[dict[str, Any]]) -> Any:
    """The pages at a million claims, both ownership modes side by side (the last database
    given: PostgreSQL with --both)."""
    runs = [run for run in runs if run.get("pages_1m", {}).get("endpoints")]
    if not runs:
        return None
    run = runs[-1]
    series = [
        (f"{mode} median", MODE_STYLES[mode][0], run[key])
        for mode, key in (("workflow-lease", "pages_1m"), ("engine-lease", "pages_1m_sessions"))
        if run.get(key, {}).get("endpoints")
    ]
    return _page_bars(plt, series, f" ({NAMES.get(run['vendor'], '')})")


def _page_bars(plt: Any, series: list[tuple[str, str, dict[str, Any]]], suffix: str = "") -> Any:
    """Per endpoint, its median in calibration requests (a p95 tick, the target line), one
    bar per series."""
    endpoints = [payload["endpoints"] for _, _, payload in series]
    keys = list(dict.fromkeys(e["key"] for found in endpoints for e in found))
    height = 0.8 / len(series)
    # Beyond three times the largest target a bar is cut, its values written on it.
    clip = 3 * max(e["ratio_limit"] for found in endpoints for e in found)
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.38 * len(keys)))
    for r, (label, color, payload) in enumerate(series):
        by_key = {e["key"]: e for e in payload["endpoints"]}
        for row, key in enumerate(keys):
            endpoint = by_key.get(key)
            if endpoint is None:
                continue
            y = row - 0.4 + height * (r + 0.5)
            median, p95 = endpoint["vs_calibration"], endpoint["p95_vs_calibration"]
            if median > clip or p95 > clip:
                shown = f"median {median:,.0f}x, p95 {p95:,.0f}x >"
                ax.text(clip, y, shown, ha="right", va="center", fontsize=7, color="white")
            ax.barh(
                y,
                min(median, clip),
                height=height * 0.9,
                color=color,
                label=label if row == 0 else None,
            )
            ax.plot(
                min(p95, clip),
                y,
                "k|",
                markersize=9,
                label="p95" if row == 0 and r == 0 else None,
            )
            ax.plot(
                [endpoint["ratio_limit"]] * 2,
                [y - height / 2, y + height / 2],
                color="crimson",
                linewidth=2,
                label="target (median)" if row == 0 and r == 0 else None,
            )
    first = series[0][2]
    ax.set_xlim(0, clip)
    ax.set_yticks(range(len(keys)), [k.replace("_", " ") for k in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(
        "server time per request, in calibration requests timed alongside "
        f"(the calibration: {first['calibration']['median_ms']:.1f} ms median)"
    )
    ax.set_title(
        f"Dashboard pages with {first['claims']:,} claims and {first['engines']} engines{suffix}"
    )
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


MODE_STYLES = {"workflow-lease": ("#4C72B0", "o-"), "engine-lease": ("#DD8452", "s-")}


def _ownership_modes(plt: Any, runs: list[dict[str, Any]]) -> Any:
    """Renew pass time and WAL per pass against claims held, both modes, log-log."""
    runs = [run for run in runs if run.get("sessions", {}).get("modes")]
    if not runs:
        return None
    modes = runs[-1]["sessions"]["modes"]  # the last database given (PostgreSQL with --both)
    fig, (time_ax, wal_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for mode, (color, style) in MODE_STYLES.items():
        points = sorted(
            (int(key.split("/")[1]), value)
            for key, value in modes.items()
            if key.split("/")[0] == mode
        )
        if not points:
            continue
        sizes = [n for n, _ in points]
        time_ax.plot(sizes, [v["median_ms"] for _, v in points], style, color=color, label=mode)
        wal = [(n, v["wal_bytes"]) for n, v in points if v.get("wal_bytes")]
        if wal:
            wal_ax.plot([n for n, _ in wal], [b for _, b in wal], style, color=color, label=mode)
    for ax, label in ((time_ax, "renew pass, median ms"), (wal_ax, "WAL bytes per pass")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("claims held by the engine")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    vendor = NAMES.get(runs[-1].get("vendor", ""), "")
    fig.suptitle(f"Renew pass of one engine by ownership mode ({vendor})")
    return fig


def _discovery(plt: Any, runs: list[dict[str, Any]]) -> Any:
    """The fleet's reclaim and wake database time per interval by engine count, now and
    before, on a log scale (the two differ by orders of magnitude)."""
    runs = [run for run in runs if run.get("discovery", {}).get("by_engines")]
    if not runs:
        return None
    data = runs[-1]["discovery"]
    counts = list(data["by_engines"])
    fig, ax = plt.subplots(figsize=(9, 5))
    width = 0.38
    for offset, variant, color, label in (
        (-width / 2, "before", "#999999", "before: anti-join, OR, park by id, page per engine"),
        (width / 2, "now", "#DD8452", "now: marks, due-time index, paced page, audit by grant"),
    ):
        values = [data["by_engines"][n][variant]["passes_ms"] for n in counts]
        xs = [i + offset for i in range(len(counts))]
        bars = ax.bar(xs, values, width, color=color, label=label)
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=8)
    ax.axhline(
        250, color="black", linestyle="--", linewidth=1, label="target at 50 engines: 250 ms"
    )
    ax.set_yscale("log")
    ax.set_xticks(range(len(counts)), [f"{n} engines" for n in counts])
    ax.set_ylabel("database ms per interval (pg_stat_statements)")
    ax.set_title(
        f"Reclaim + wake of the whole fleet, {data['total']:,} held, nothing stranded, "
        f"per {data['interval_ms'] / 1000:g} s interval"
    )
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=1)
    return fig


CHARTS = (
    ("ratios", _ratios),
    ("reclaim-scale", _reclaim_scale),
    ("failover", _failover),
    ("pages", _pages),
    ("pages-1m", _pages_1m),
    ("ownership-modes", _ownership_modes),
    ("fleet-discovery", _discovery),
)


def draw(results: list[Path], out_dir: Path) -> list[Path]:
    """Draw every chart the results have data for; return the files written."""
    runs = [json.loads(path.read_text()) for path in results if path.exists()]
    if not runs:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, chart in CHARTS:
        fig = chart(plt, runs)
        if fig is None:
            continue
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def publish(charts: list[Path], docs_dir: Path) -> list[Path]:
    docs_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for chart in charts:
        target = docs_dir / chart.name
        shutil.copyfile(chart, target)
        copied.append(target)
    return copied
