"""python -m faults [--duration 300] [--seed N] [--workflows 2000] [--engines 5] [--smoke]
[--ownership-mode workflow-lease|engine-lease]

Starts a fleet on PostgreSQL (a database of its own, recreated each run) and a private
Redis server, runs the workload and the nemesis, checks the history, prints the report
and writes it to var/faults/. Exit status 1 on any violation, 2 on a harness failure.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time

from claims.protocol.constants import ENGINE_OWNERSHIP_MODES

from .processes import REPO

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/test"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/faults", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=300, help="seconds of faults (300)")
    parser.add_argument("--seed", type=int, default=None, help="replay a run (default: random)")
    parser.add_argument("--workflows", type=int, default=2000, help="workflows to start (2000)")
    parser.add_argument("--engines", type=int, default=5, help="engine processes (5)")
    parser.add_argument(
        "--ownership-mode",
        choices=ENGINE_OWNERSHIP_MODES,
        default="workflow-lease",
        help="the fleet's ownership mode (workflow-lease)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="the CI variant: 60 s of faults, 600 workflows"
    )
    parser.add_argument(
        "--server",
        default=os.environ.get("WEFTBOARD_FAULTS_SERVER", DEFAULT_SERVER),
        help="a PostgreSQL server URL; the run creates database weftboard_faults on it",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.duration, args.workflows = 60.0, 600
    if args.duration < 30:
        parser.error("--duration must be at least 30 seconds: every fault takes a few")
    if args.engines < 2:
        parser.error("--engines must be at least 2: a takeover needs somebody to take over")
    if args.workflows < 1:
        parser.error("--workflows must be at least 1")
    if shutil.which("redis-server") is None:
        parser.error("redis-server is not on PATH: the run restarts a Redis server of its own")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # As under ./scripts/run: the logs and reports under var/faults (and what the fleet's
    # processes write there) are the caller's alone.
    os.umask(0o077)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    from .options import Options, database_recreate

    workdir = REPO / "var" / "faults" / f"seed{seed}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    options = Options(
        seed=seed,
        duration_s=args.duration,
        workflows=args.workflows,
        engines=args.engines,
        server_url=args.server,
        database="weftboard_faults",
        workdir=workdir,
        ownership_mode=args.ownership_mode,
    )

    def log(message: str) -> None:
        print(f"[faults {time.strftime('%H:%M:%S')}] {message}", flush=True)

    log(f"seed {seed}; logs in {workdir}")
    database_recreate(options)
    os.environ["DATABASE_URL"] = options.database_url()
    # Every process of the fleet inherits it, and the harness's own checks read it too.
    os.environ["WEFT_OWNERSHIP_MODE"] = options.ownership_mode
    os.environ.setdefault("WEFTBOARD_SECRET_KEY", "fault-harness-only-key")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "weftboard.settings")
    import django

    django.setup()
    from .report import report_lines, report_write
    from .run import prepare_database, run

    token = prepare_database()
    try:
        outcome = run(options, token, log)
    except Exception as error:
        log(f"the run broke down: {error!r} (seed {seed}); process logs are in {workdir}")
        return 2
    print("\n".join(report_lines(outcome)), flush=True)
    path = report_write(outcome, REPO / "var" / "faults")
    log(f"report written to {path}")
    return 0 if outcome.passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
