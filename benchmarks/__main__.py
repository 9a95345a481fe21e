"""python -m benchmarks [--large] [--only renew,reclaim,micro,pages] [--both] [--strict]

Runs on SQLite by default, on PostgreSQL when DATABASE_URL points at one; ``--both``
runs SQLite then PostgreSQL, each in its own process. Prints one table per database
and writes the same figures to var/bench/results-<vendor>.json.
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

from .report import Section, Target, combined_summary, results_path, targets_section, write_json
from .setup import ROOT, configure_django, database_version, throwaway_database

POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test"
PARTS = ("renew", "reclaim", "micro", "pages")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.splitlines()[0])
    parser.add_argument("--both", action="store_true", help="SQLite, then PostgreSQL")
    parser.add_argument("--large", action="store_true", help="also renew 100,000 claims")
    parser.add_argument(
        "--only",
        default=",".join(PARTS),
        help=f"comma-separated subset of {','.join(PARTS)} (default: all)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a binding target is missed"
    )
    args = parser.parse_args(argv)
    args.parts = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}; choose from {PARTS}")
    return args


def run_both(argv: list[str]) -> int:
    passed_on = [arg for arg in argv if arg != "--both"]
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    url = os.environ.get("DATABASE_URL", "")
    postgres = url if url.startswith(("postgres://", "postgresql://")) else POSTGRES_URL
    status = 0
    for vendor, extra in (("sqlite", {}), ("postgresql", {"DATABASE_URL": postgres})):
        results_path(vendor).unlink(missing_ok=True)
        code = subprocess.call(
            [sys.executable, "-m", "benchmarks", *passed_on], env={**env, **extra}, cwd=ROOT
        )
        print(flush=True)
        status = status or code
    print("\n".join(combined_summary([results_path("sqlite"), results_path("postgresql")])))
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

    from . import micro, pages, reclaim, renew

    vendor = connection.vendor
    # The requirement's targets are on PostgreSQL; on SQLite they are reported for reference.
    binding = vendor == "postgresql"
    started = time.perf_counter()
    load_before = load_average()
    sections: list[Section] = []
    targets: list[Target] = []
    payload: dict[str, Any] = {"vendor": vendor}
    with throwaway_database() as name:
        version = database_version()
        header = (
            f"weftboard benchmarks on {version} (throwaway database {name}, dropped after); "
            f"{os.cpu_count()} CPUs, load {load_before}; {datetime.datetime.now():%Y-%m-%d %H:%M}"
        )
        print(header, flush=True)
        if "renew" in args.parts:
            sizes = [10_000, 100_000] if args.large else [10_000]
            payload["renew"] = []
            for n in sizes:
                data, section, found = renew.run(n, binding=binding)
                payload["renew"].append(data)
                sections.append(section)
                targets += found
                print("\n".join(["", *section.render()]), flush=True)
        if "reclaim" in args.parts:
            payload["reclaim"], section, found = reclaim.run(binding=binding)
            sections.append(section)
            targets += found
            print("\n".join(["", *section.render()]), flush=True)
        if "micro" in args.parts:
            payload["micro"], section, found = micro.run(binding=binding)
            sections.append(section)
            targets += found
            print("\n".join(["", *section.render()]), flush=True)
        if "pages" in args.parts:
            payload["pages"], section, found = pages.run(binding=binding)
            sections.append(section)
            targets += found
            print("\n".join(["", *section.render()]), flush=True)
    elapsed = time.perf_counter() - started
    summary = targets_section(targets)
    summary.notes.append(
        "binding = the requirement's targets (PostgreSQL); (ref) = reported for reference"
        if binding
        else "SQLite: every target is reported for reference (the requirement binds PostgreSQL)"
    )
    summary.notes.append(f"whole run {elapsed:.0f} s; load average now {load_average()}")
    print("\n".join(["", *summary.render()]), flush=True)
    payload.update(
        {
            "database": version,
            "when": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": {
                "cpus": os.cpu_count(),
                "load_before": load_before,
                "load_after": load_average(),
                "python": platform.python_version(),
            },
            "commit": git_commit(),
            "elapsed_s": round(elapsed, 1),
            "targets": [target.as_json() for target in targets],
        }
    )
    path = write_json(vendor, payload)
    print(f"results: {path.relative_to(ROOT)}")
    missed = [t for t in targets if t.binding and not t.met]
    return 1 if args.strict and missed else 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.both:
        return run_both(argv)
    return run_one(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
