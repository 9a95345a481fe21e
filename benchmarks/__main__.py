"""python -m benchmarks [--both] [--large] [--only PARTS] [--strict] [--publish]

Runs on SQLite by default, on PostgreSQL when DATABASE_URL points at one; ``--both``
runs SQLite then PostgreSQL, each in its own process, and prints one summary of both.
Every figure is measured side by side with its baseline in the same run and printed as
a ratio. Each run writes var/bench/results-<vendor>.json and PNG charts under
var/bench/charts/ (with WEFTBOARD_BENCH_DB_NAME set to another database name, both get
that name as a suffix, so concurrent runs keep apart).

Parts (``--only``, comma-separated; all by default):
  renew     the renew pass over 10,000 held claims against one batched UPDATE
  reclaim   discovery and a whole pass over 100,000 workflows, then the pass at scale:
            10,000 and 100,000 workflows with 1,000 and 10,000 stranded
  failover  10,000 claims of a killed engine taken over by another (TTL 3 s, real clock)
  micro     single-claim calls against the raw statements
  pages     the claims page, every live fragment and /metrics: 100,000 claims, 50 engines
  sessions  the renew pass of both ownership modes at 1,000, 10,000 and 100,000 claims,
            and failover of an engine-lease engine's 20,000 claims
  fleet     row writes and WAL per renew interval, 1,000,000 workflows over 50 engines,
            in both ownership modes (with --large, or by name)
  pages-1m  the pages part over 1,000,000 claims (900,000 more parked, held live), in both
            ownership modes (with --large, or by name)

Options:
  --large    renew also 100,000 claims; reclaim at scale over 100,000 and 1,000,000
             workflows (1,000 and 10,000 stranded); and the fleet and pages-1m parts.
             A default --both takes about 4 minutes; the larger reclaim adds about 2 per
             database, fleet and pages-1m several each (pages-1m: 7 on PostgreSQL).
  --strict   exit 1 when a binding target (PostgreSQL) is missed
  --publish  also copy the charts to docs/benchmarks/
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from typing import Any

from .report import (
    Section,
    Target,
    charts_dir,
    combined_summary,
    results_path,
    targets_section,
    write_json,
)
from .setup import ROOT, configure_django, database_version, throwaway_database

POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test"
PARTS = ("renew", "reclaim", "failover", "micro", "pages", "sessions", "fleet", "pages-1m")
# "fleet" and "pages-1m" seed 1,000,000 workflows twice (minutes each): run with --large, or
# ask for them by name.
LARGE_PARTS = ("fleet", "pages-1m")
DEFAULT_PARTS = tuple(part for part in PARTS if part not in LARGE_PARTS)
# The pages at a million claims: the pages part's 100,000 and this many parked.
PAGES_PARKED = 900_000
# The engine-lease mode's failover: one engine's whole session of claims.
SESSION_FAILOVER_WORKFLOWS = 20_000
DOCS_CHARTS = ROOT / "docs" / "benchmarks"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench",
        description=__doc__.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--both", action="store_true", help="SQLite, then PostgreSQL")
    parser.add_argument(
        "--large",
        action="store_true",
        help="also renew 100,000 claims, reclaim over 1,000,000 workflows, and run the fleet "
        "and pages-1m parts",
    )
    parser.add_argument(
        "--only",
        default=None,
        help=f"comma-separated subset of {','.join(PARTS)} (default: all but fleet and "
        "pages-1m, which --large adds)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a binding target is missed"
    )
    parser.add_argument(
        "--publish", action="store_true", help="copy the charts to docs/benchmarks/"
    )
    # --both draws the charts of both databases once they have both run.
    parser.add_argument("--no-charts", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    default = ",".join(PARTS if args.large else DEFAULT_PARTS)
    args.parts = [part.strip() for part in (args.only or default).split(",") if part.strip()]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}; choose from {PARTS}")
    return args


def draw_charts(vendors: list[str], *, publish: bool) -> None:
    from .charts import draw
    from .charts import publish as copy_to_docs

    try:
        written = draw([results_path(vendor) for vendor in vendors], charts_dir())
    except ImportError as exc:
        print(f"charts: skipped ({exc}; ./scripts/venv installs matplotlib)")
        return
    for path in written:
        print(f"chart: {path.relative_to(ROOT)}")
    if publish:
        for path in copy_to_docs(written, DOCS_CHARTS):
            print(f"published: {path.relative_to(ROOT)}")


def run_both(argv: list[str], args: argparse.Namespace) -> int:
    passed_on = [arg for arg in argv if arg not in ("--both", "--publish")] + ["--no-charts"]
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    url = os.environ.get("DATABASE_URL", "")
    postgres = url if url.startswith(("postgres://", "postgresql://")) else POSTGRES_URL
    status = 0
    started = time.perf_counter()
    for vendor, extra in (("sqlite", {}), ("postgresql", {"DATABASE_URL": postgres})):
        results_path(vendor).unlink(missing_ok=True)
        code = subprocess.call(
            [sys.executable, "-m", "benchmarks", *passed_on], env={**env, **extra}, cwd=ROOT
        )
        print(flush=True)
        status = status or code
    print("\n".join(combined_summary([results_path("sqlite"), results_path("postgresql")])))
    print(f"  * both databases {time.perf_counter() - started:.0f} s")
    if not args.no_charts:
        draw_charts(["sqlite", "postgresql"], publish=args.publish)
    return status


def git_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' (uncommitted changes)' if dirty else ''}" if head else "unknown"


def load_average() -> str:
    try:
        return " ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "n/a"


def run_parts(args: argparse.Namespace, binding: bool) -> tuple[dict[str, Any], list[Target]]:
    """Run the chosen parts in order, printing each table as it is ready."""
    from . import (
        failover,
        fleet_scale,
        micro,
        pages,
        reclaim,
        reclaim_scale,
        renew,
        session_renew,
    )

    payload: dict[str, Any] = {}
    targets: list[Target] = []

    def show(section: Section, found: list[Target]) -> None:
        targets.extend(found)
        print("\n".join(["", *section.render()]), flush=True)

    if "renew" in args.parts:
        payload["renew"] = []
        for n in [10_000, 100_000] if args.large else [10_000]:
            data, section, found = renew.run(n, binding=binding)
            payload["renew"].append(data)
            show(section, found)
    if "reclaim" in args.parts:
        payload["reclaim"], section, found = reclaim.run(binding=binding)
        show(section, found)
        payload["reclaim_scale"], section, found = reclaim_scale.run(
            binding=binding, large=args.large
        )
        show(section, found)
    if "failover" in args.parts:
        payload["failover"], section, found = failover.run(binding=binding)
        show(section, found)
    if "micro" in args.parts:
        payload["micro"], section, found = micro.run(binding=binding)
        show(section, found)
    if "sessions" in args.parts:
        payload["sessions"], section, found = session_renew.run(binding=binding)
        show(section, found)
        payload["failover_sessions"], section, found = failover.run(
            binding=binding, mode="engine-lease", workflows=SESSION_FAILOVER_WORKFLOWS
        )
        show(section, found)
        payload["pages_sessions"], section, found = pages.run(binding=binding, sessions=True)
        show(section, found)
    if "pages" in args.parts:
        payload["pages"], section, found = pages.run(binding=binding)
        show(section, found)
    if "fleet" in args.parts:
        payload["fleet"], section, found = fleet_scale.run(binding=binding)
        show(section, found)
    if "pages-1m" in args.parts:
        for sessions in (False, True):
            key = "pages_1m_sessions" if sessions else "pages_1m"
            payload[key], section, found = pages.run(
                binding=binding, sessions=sessions, parked=PAGES_PARKED
            )
            show(section, found)
    return payload, targets


def run_one(args: argparse.Namespace) -> int:
    configure_django()
    from django.db import connection

    vendor = connection.vendor
    # The requirement's targets are on PostgreSQL; on SQLite they are reported for reference.
    binding = vendor == "postgresql"
    started = time.perf_counter()
    load_before = load_average()
    with throwaway_database() as name:
        version = database_version()
        header = (
            f"weftboard benchmarks on {version} (throwaway database {name}, dropped after); "
            f"{os.cpu_count()} CPUs, load {load_before}; {datetime.datetime.now():%Y-%m-%d %H:%M}"
        )
        print(header, flush=True)
        payload, targets = run_parts(args, binding)
    elapsed = time.perf_counter() - started
    summary = targets_section(targets)
    summary.notes.append(
        "binding = the requirement's targets (PostgreSQL); (ref) = reported for reference"
        if binding
        else "SQLite: every target is reported for reference (the requirement binds PostgreSQL)"
    )
    summary.notes.append(f"whole run {elapsed:.0f} s; load average now {load_average()}")
    print("\n".join(["", *summary.render()]), flush=True)
    payload = {
        "vendor": vendor,
        **payload,
        "database": version,
        "when": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": load_average(),
            "python": platform.python_version(),
        },
        "commit": git_commit(),
        "options": {"large": args.large, "parts": args.parts},
        "elapsed_s": round(elapsed, 1),
        "targets": [target.as_json() for target in targets],
    }
    path = write_json(vendor, payload)
    print(f"results: {path.relative_to(ROOT)}")
    if not args.no_charts:
        draw_charts([vendor], publish=args.publish)
    missed = [t for t in targets if t.binding and not t.met]
    return 1 if args.strict and missed else 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.both:
        return run_both(argv, args)
    return run_one(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
