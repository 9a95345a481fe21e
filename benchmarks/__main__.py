"""python -m benchmarks [--both] [--large] [--only PARTS] [--strict] [--publish] [--smoke]

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
  pages     the claims page, every live fragment and /metrics: 100,000 claims, 50 engines;
            each judged in units of a calibration request timed alongside it
  sessions  the renew pass of both ownership modes at 1,000, 10,000 and 100,000 claims,
            failover of an engine-lease engine's 20,000 claims, and the pages in that mode
  fleet     row writes and WAL per renew interval, 1,000,000 workflows over 50 engines,
            in both ownership modes (with --large, or by name)
  discovery 1,000,000 running workflows held by 5, 20 and 50 engine-lease engines running
            their real passes together for 10 intervals: the fleet's reclaim and wake
            time per interval, now and before the ownerless marks (PostgreSQL; with
            --large, or by name; about 10 minutes)
  failover-mass  100,000 of 1,000,000 claims stranded at once (5 engines' sessions
            expire), taken over by 20 live engine-lease engines running their real passes:
            the time against the bound, the spread of takeovers, the longest pass
            (PostgreSQL; with --large, or by name; about 3 minutes)
  pages-1m  the pages part over 1,000,000 claims (900,000 more parked, held live), in both
            ownership modes (with --large, or by name)
  bulk      a bulk job releasing 100,000 claims by query against a batched compare-and-swap
            UPDATE of the same rows, and 10 engines' renew passes beside the job
  bulk-1m   a bulk job's freeze of 1,000,000 items and an indexed query's preview at
            1,000,000 claims (with --large, or by name)

Options:
  --large    renew also 100,000 claims; reclaim at scale over 100,000 and 1,000,000
             workflows (1,000 and 10,000 stranded); and the fleet and pages-1m parts.
             A default --both takes about 4 minutes; the larger reclaim adds about 2 per
             database, fleet and pages-1m several each (pages-1m: 7 on PostgreSQL).
  --strict   exit 1 when a binding target (PostgreSQL) is missed
  --publish  also copy the charts to docs/benchmarks/
  --smoke    every part (or those --only names) at a few hundred rows: that each runs,
             in well under a minute; nothing is judged or written
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from contextlib import nullcontext

from .parts import DEFAULT_PARTS, PARTS, run_parts
from .report import (
    charts_dir,
    combined_summary,
    results_path,
    targets_section,
    write_json,
)
from .setup import ROOT, configure_django, database_version, throwaway_database
from .smoke import small_sizes

POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test"
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
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every part (or those --only names) at a few hundred rows, to check that each "
        "runs; its figures mean nothing, and no results or charts are written",
    )
    # --both draws the charts of both databases once they have both run.
    parser.add_argument("--no-charts", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    default = ",".join(PARTS if args.large or args.smoke else DEFAULT_PARTS)
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
        if not args.smoke:
            results_path(vendor).unlink(missing_ok=True)
        code = subprocess.call(
            [sys.executable, "-m", "benchmarks", *passed_on], env={**env, **extra}, cwd=ROOT
        )
        print(flush=True)
        status = status or code
    if args.smoke:
        return status
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


def run_one(args: argparse.Namespace) -> int:
    configure_django()
    from django.db import connection

    vendor = connection.vendor
    # The requirement's targets are on PostgreSQL; on SQLite they are reported for reference.
    # A smoke run's figures judge nothing.
    binding = vendor == "postgresql" and not args.smoke
    started = time.perf_counter()
    load_before = load_average()
    with throwaway_database() as name, small_sizes() if args.smoke else nullcontext():
        version = database_version()
        header = (
            f"weftboard benchmarks on {version} (throwaway database {name}, dropped after); "
            f"{os.cpu_count()} CPUs, load {load_before}; {datetime.datetime.now():%Y-%m-%d %H:%M}"
        )
        smoke = "; SMOKE RUN: tiny sizes, figures mean nothing" if args.smoke else ""
        print(header + smoke, flush=True)
        payload, targets = run_parts(args.parts, large=args.large, binding=binding)
    elapsed = time.perf_counter() - started
    if args.smoke:
        print(f"\nsmoke run of {', '.join(args.parts)}: every part ran ({elapsed:.0f} s)")
        return 0
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
