"""python -m soak [--duration 600] [--kill-every 120] [--seed N] [--port P] [--var DIR]
[--ownership-mode workflow-lease|engine-lease]

Starts ./scripts/run exactly as the README says, on a fresh var/ folder (var/soak/<time>
unless --var names one) with the demo rate on, kills a random engine (SIGKILL) every
--kill-every seconds for --duration seconds, then checks:
  exits         no process exited but the engines it killed, and supervisord gave up none
  replacement   each killed engine was started again, as a new engine id, within 60 s
  takeover      another engine held the dead one's claims at a higher epoch within
                TTL + 3 x renew interval (45 s), the takeover counter moved, and the
                overview named the dead engine (in its late-pass or dead-engine alert)
  workflows     every workflow is finished, or held by a live engine and driven (it
                moved within 45 s, or is parked until a time still ahead); none failed
  logs          no Traceback and no CRITICAL line in the whole output
  metrics       no /metrics counter ever went down (scraped every 5 s)
  pages         every page answered 200 (loaded every minute and at the end)
  shutdown      Ctrl-C stopped everything and the live engines released their claims
It prints a report (also var/soak/<time>/soak-report.json) and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import socket
import sys
import time
from contextlib import closing
from pathlib import Path

from soak.app import REPO
from soak.run import Options, soak_run


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/soak",
        description=(__doc__ or "").split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (600)")
    parser.add_argument("--kill-every", type=float, default=120.0, help="seconds (120)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--var", type=Path, default=None, help="a new folder for var/")
    parser.add_argument(
        "--ownership-mode",
        choices=("workflow-lease", "engine-lease"),
        default="workflow-lease",
        help="the fleet's ownership mode (workflow-lease)",
    )
    args = parser.parse_args(argv)
    # As under ./scripts/run: the folders, log and report the soak writes under var/ (and
    # what the processes it starts write) are the caller's alone.
    os.umask(0o077)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    var_dir = (args.var or REPO / "var" / "soak" / stamp).resolve()
    if var_dir.exists() and any(var_dir.iterdir()):
        parser.error(f"{var_dir} is not empty: the soak starts on a fresh var/ folder")
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    options = Options(
        duration_s=args.duration,
        kill_every_s=args.kill_every,
        seed=seed,
        var_dir=var_dir,
        port=args.port or free_port(),
        ownership_mode=args.ownership_mode,
    )
    started = time.monotonic()

    def log(line: str) -> None:
        print(f"soak [{time.monotonic() - started:6.0f}s] {line}", flush=True)

    log(f"seed {seed}; {args.ownership_mode}; var {var_dir}; log {var_dir / 'run.log'}")
    passed, results = soak_run(options, log)
    print()
    for check in results:
        print(f"{'PASS' if check.passed else 'FAIL'}  {check.name}")
        for failure in check.failures:
            print(f"      - {failure}")
        for note in check.notes:
            print(f"        {note}")
    print()
    print(f"soak {'passed' if passed else 'FAILED'} (seed {seed}); report in {var_dir}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
