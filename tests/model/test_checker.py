"""The model checker over the real protocol (docs/design.md §13): within a small bound it
finds no violation on the real code in either mode, a schedule replays step by step, and
no product code can reach it. Larger bounds run by hand: ``python -m modelcheck``."""

from __future__ import annotations

import pathlib

import pytest

from modelcheck.checker import explore, replay
from modelcheck.world import Config

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mode", ["workflow-lease", "engine-lease"])
def test_races_between_two_engines_keep_every_invariant(mode):
    config = Config(
        mode=mode,
        max_faults=0,
        max_crashes=0,
        operators=False,
        max_preemptions=1,
        max_ticks=1,
        max_lapses=1,
    )

    report = explore(config, 4)

    assert report.counterexample is None, report.counterexample.render()
    assert report.states > 100
    assert {"reclaim", "renew", "write", "lapse"} <= report.steps_seen


def test_a_schedule_replays_step_by_step_and_fences_the_deposed_engine():
    config = Config(mode="workflow-lease", operators=False)
    schedule = [
        ("reclaim", "a", "-"),  # its one write, the grant, is made at once
        ("write", "a", "wf1", "-"),
        ("lapse",),
        ("reclaim", "b", "-"),
        ("write", "b", "wf1", "-"),
        ("write", "a", "wf1", "-"),
    ]

    steps = list(replay(config, schedule))

    assert [found for _step, _what, found in steps] == [[]] * len(schedule)
    outcomes = [what for _step, what, _found in steps]
    assert "wrote at epoch 1" in outcomes[1]
    assert "wrote at epoch 2" in outcomes[4]
    assert "wrote" not in outcomes[5]  # a's deadline passed, and its epoch is gone


def test_no_product_code_imports_the_checker():
    importers = [
        path
        for package in ("claims", "weftboard")
        for path in (ROOT / package).rglob("*.py")
        if "modelcheck" in path.read_text()
    ]

    assert importers == []
