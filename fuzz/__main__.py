"""python -m fuzz [--max-time 1200] [--ci] [--server URL]

Fuzzes the JSON API of a live server with schemathesis: a fresh PostgreSQL database with
the demo fleet, gunicorn in front of it, and every operation of the OpenAPI schema run
once with a read token and once with a write token. Fails on a server error, an answer
that is not JSON, an answer or status the schema does not document, bad input accepted,
or a traceback in the server's log. Exit status 1 on a failure, 2 on a harness failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .api import FuzzOptions, run

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/test"


def parse_args(argv: list[str]) -> FuzzOptions:
    parser = argparse.ArgumentParser(prog="scripts/fuzz-api", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-time",
        type=float,
        default=1_200,
        help="seconds of fuzzing in all, shared by the two tokens (1200)",
    )
    parser.add_argument("--ci", action="store_true", help="the CI budget: 150 s in all")
    parser.add_argument("--seed", type=int, default=None, help="replay a run's choices")
    parser.add_argument(
        "--server",
        default=os.environ.get("WEFTBOARD_FUZZ_SERVER", DEFAULT_SERVER),
        help="a PostgreSQL server URL; the run creates database weftboard_fuzz on it",
    )
    args = parser.parse_args(argv)
    max_time = 150.0 if args.ci else args.max_time
    if max_time < 20:
        parser.error("--max-time must be at least 20 seconds")
    return FuzzOptions(
        max_time_s=max_time,
        server_url=args.server,
        seed=args.seed if args.seed is not None else int(time.time()) % 1_000_000,
    )


def main(argv: list[str]) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
