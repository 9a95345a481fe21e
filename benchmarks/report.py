"""Figures, targets, the printed table and the JSON file of one run."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .setup import BENCH_DB_NAME, BENCH_DIR, DEFAULT_DB_NAME


@dataclass(frozen=True)
class Timing:
    """Repeated measurements of one thing, in milliseconds."""

    samples_ms: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def low(self) -> float:
        return min(self.samples_ms)

    @property
    def high(self) -> float:
        return max(self.samples_ms)

    def spread(self) -> str:
        return f"{fmt(self.low)}-{fmt(self.high)}"

    def as_json(self) -> dict[str, Any]:
        return {
            "median_ms": round(self.median, 3),
            "min_ms": round(self.low, 3),
            "max_ms": round(self.high, 3),
            "samples_ms": [round(s, 3) for s in self.samples_ms],
        }


@dataclass(frozen=True)
class Target:
    """A figure against its limit. ``binding`` targets are the requirement on this
    database; the others are reference values from the anchors, reported only."""

    key: str
    label: str
    value: float
    limit: float
    unit: str
    binding: bool

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def verdict(self) -> str:
        if self.met:
            return "MET" if self.binding else "met (ref)"
        return "MISSED" if self.binding else "missed (ref)"

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "value": round(self.value, 3),
            "limit": self.limit,
            "unit": self.unit,
            "binding": self.binding,
            "met": self.met,
        }


@dataclass
class Section:
    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def render(self) -> list[str]:
        widths = [
            max(len(row[i]) for row in [self.header, *self.rows]) for i in range(len(self.header))
        ]

        def line(row: tuple[str, ...]) -> str:
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
            return "  " + "  ".join(cells).rstrip()

        out = [self.title, line(self.header), "  " + "-" * (sum(widths) + 2 * len(widths) - 2)]
        out += [line(row) for row in self.rows]
        out += [f"  * {note}" for note in self.notes]
        return out


def fmt(value: float) -> str:
    """Milliseconds (or any magnitude) with sensible precision."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(value: float) -> str:
    return f"{value:.2f}x"


def value_text(value: float, unit: str) -> str:
    if unit == "x":
        return ratio(value)
    if unit == "statements":
        return f"{value:.0f} {unit}"
    return f"{fmt(value)} {unit}"


def limit_text(target: Target) -> str:
    if target.unit == "x":
        return f"<= {target.limit:g}x"
    return f"<= {target.limit:g} {target.unit}"


def targets_section(targets: list[Target]) -> Section:
    section = Section("TARGETS", ("figure", "value", "target", "verdict"))
    for target in targets:
        section.rows.append(
            (
                target.label,
                value_text(target.value, target.unit),
                limit_text(target),
                target.verdict(),
            )
        )
    return section


def _run_name() -> str:
    """'' for the default benchmark database, '-<name>' for one named by the environment."""
    return "" if BENCH_DB_NAME == DEFAULT_DB_NAME else f"-{BENCH_DB_NAME}"


def results_path(vendor: str) -> Path:
    return BENCH_DIR / f"results-{vendor}{_run_name()}.json"


def charts_dir() -> Path:
    return BENCH_DIR / f"charts{_run_name()}"


def write_json(vendor: str, payload: dict[str, Any]) -> Path:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = results_path(vendor)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def combined_summary(paths: list[Path]) -> list[str]:
    """One table of every target, one column per database, from the JSON files of a run."""
    runs = [json.loads(path.read_text()) for path in paths if path.exists()]
    if not runs:
        return ["(no results to summarise)"]
    vendors = [run["vendor"] for run in runs]
    by_key: dict[str, dict[str, dict[str, Any]]] = {}
    labels: dict[str, str] = {}
    for run in runs:
        for target in run["targets"]:
            by_key.setdefault(target["key"], {})[run["vendor"]] = target
            labels.setdefault(target["key"], target["label"])
    section = Section("SUMMARY (both databases)", ("figure", *vendors))
    for key, per_vendor in by_key.items():
        cells = []
        for vendor in vendors:
            target = per_vendor.get(vendor)
            if target is None:
                cells.append("-")
                continue
            shown = value_text(target["value"], target["unit"])
            if target["binding"]:
                mark = "MET" if target["met"] else "MISSED"
            else:
                mark = "ref ok" if target["met"] else "ref over"
            cells.append(f"{shown} [{mark}]")
        section.rows.append((labels[key], *cells))
    return section.render()
