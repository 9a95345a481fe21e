"""python -m modelcheck [--mode M] [--engines N] [--workflows N] [--depth N] [--variant V] ...

Explores every schedule of the configuration up to the bounds and prints the states, the
depth and the time, or the shortest counterexample found, step by step. ``--variant``
switches in one of the deliberately broken variants (``modelcheck.variants``), which the
checker must catch. ``--save FILE`` writes a counterexample's schedule as JSON; ``--replay
FILE`` runs a saved schedule step by step. Exits 1 on a violation (0 with ``--variant``
only when the variant was caught).
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from dataclasses import asdict
from typing import Any

from .checker import explore, replay
from .variants import VARIANTS
from .world import Config


def _config(args: argparse.Namespace) -> Config:
    return Config(
        mode=args.mode,
        engines=tuple("abcdefgh"[: args.engines]),
        workflows=tuple(f"wf{n}" for n in range(1, args.workflows + 1)),
        max_faults=args.faults,
        max_crashes=args.crashes,
        max_lapses=args.lapses,
        max_ticks=args.ticks,
        max_preemptions=args.preemptions,
        operators=not args.no_operators,
        every_read=args.every_read,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m modelcheck", description=__doc__)
    parser.add_argument(
        "--mode", default="workflow-lease", choices=["workflow-lease", "engine-lease"]
    )
    parser.add_argument("--engines", type=int, default=2)
    parser.add_argument("--workflows", type=int, default=1)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--faults", type=int, default=1)
    parser.add_argument("--crashes", type=int, default=1)
    parser.add_argument("--lapses", type=int, default=2)
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--preemptions", type=int, default=2)
    parser.add_argument("--no-operators", action="store_true")
    parser.add_argument("--every-read", action="store_true")
    parser.add_argument("--variant", choices=sorted(VARIANTS))
    parser.add_argument("--save", metavar="FILE")
    parser.add_argument("--replay", metavar="FILE")
    args = parser.parse_args(argv)
    if args.replay:
        return _replay(args.replay)
    config = _config(args)
    with VARIANTS[args.variant]() if args.variant else nullcontext():
        report = explore(config, args.depth)
    print(report.summary())
    found = report.counterexample
    if found is not None:
        print(found.render())
        if args.save:
            _save(args.save, config, found.schedule, args.variant)
    if args.variant:
        return 0 if found is not None else 1
    return 1 if found is not None else 0


def _save(path: str, config: Config, schedule: list[tuple[str, ...]], variant: str | None) -> None:
    with open(path, "w") as out:
        json.dump(
            {"config": asdict(config), "variant": variant, "schedule": schedule}, out, indent=1
        )


def load(path: str) -> tuple[Config, list[tuple[str, ...]], str | None]:
    with open(path) as saved:
        data: dict[str, Any] = json.load(saved)
    fields: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in data["config"].items()
    }
    return Config(**fields), [tuple(step) for step in data["schedule"]], data.get("variant")


def _replay(path: str) -> int:
    config, schedule, variant = load(path)
    violated = False
    with VARIANTS[variant]() if variant else nullcontext():
        for n, (step, what, found) in enumerate(replay(config, schedule), start=1):
            print(f"{n:3d}. {' '.join(step)}: {what}")
            for violation in found:
                print(f"     violation: {violation}")
                violated = True
    return 1 if violated else 0


if __name__ == "__main__":
    sys.exit(main())
