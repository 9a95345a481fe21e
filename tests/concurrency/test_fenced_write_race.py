"""A holder keeps writing through fenced writes while someone rotates the epoch under it.

The writer appends its epoch to ``Workflow.state["writes"]`` inside each fenced
write; the rotator appends a marker in the transaction of each rotation. Both
lock the workflow row before appending, so the list is in commit order, and
it must show that no write of an epoch commits after that epoch was rotated away.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection, transaction

from claims.models import Workflow
from claims.protocol import (
    ClaimRegistry,
    ClaimTiming,
    EngineDeposedError,
    StaleEpochError,
    rotate_claim,
)
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore

from ._race_checks import replay_events

WORKFLOW_ID = "fenced-wf"
WRITER = "engine-writer"
ROTATIONS = 40
SEED = 7_351
START_MS = 1_700_000_000_000


@dataclass
class FencedRace:
    attempts: list[tuple[int, str]] = field(default_factory=list)  # (epoch, committed|deposed)
    releases: list[tuple[int, str]] = field(default_factory=list)  # after each deposition
    rotations: list[int] = field(default_factory=list)
    stale_rotations: int = 0
    rotation_waits_s: list[float] = field(default_factory=list)  # BEGIN to COMMIT
    errors: list[str] = field(default_factory=list)


def append_to_log(entry: list[Any], now_ms: int) -> None:
    """Append to the workflow's write log under its row lock (SQLite: the write lock)."""
    state = Workflow.objects.select_for_update().values_list("state", flat=True).get(pk=WORKFLOW_ID)
    state["writes"].append(entry)
    Workflow.objects.filter(pk=WORKFLOW_ID).update(state=state, updated_at_ms=now_ms)


def race_fenced_writes(
    store_factory: Any = OrmClaimStore, *, pause_between_writes_s: float = 0.002
) -> FencedRace:
    clock = FakeClock(START_MS)
    race = FencedRace()
    holding = threading.Event()  # the writer holds a grant no rotation has taken yet
    rotations_done = threading.Event()

    def writer() -> None:
        rng = random.Random(SEED)
        registry = ClaimRegistry(
            store_factory(), engine_id=WRITER, clock=clock, timing=ClaimTiming()
        )

        def attempt(epoch: int) -> None:
            def write() -> None:
                # Dawdle between the fence check and the write: a rotation that is
                # not held off by the fence would commit in this window.
                time.sleep(rng.uniform(0, 0.003))
                append_to_log(["w", epoch], clock())

            try:
                registry.fenced_write(WORKFLOW_ID, write)
            except EngineDeposedError:
                race.attempts.append((epoch, "deposed"))
                race.releases.append((epoch, registry.release(WORKFLOW_ID).status))
            else:
                race.attempts.append((epoch, "committed"))

        try:
            while not rotations_done.is_set():
                epoch = registry.current_epoch(WORKFLOW_ID)
                if epoch is None:
                    if registry.acquire(WORKFLOW_ID).status == "acquired":
                        holding.set()
                    continue
                attempt(epoch)
                # Work between checkpoints; without it SQLite's busy handler, which polls
                # with no fairness, lets back-to-back writes starve the rotator for seconds.
                time.sleep(rng.uniform(0, pause_between_writes_s))
            # One more write after the last rotation: it must be refused if that rotation
            # took the epoch this writer still caches.
            epoch = registry.current_epoch(WORKFLOW_ID)
            if epoch is not None:
                attempt(epoch)
        except BaseException:
            race.errors.append(f"writer: {traceback.format_exc()}")
            holding.set()
        finally:
            connection.close()

    def rotator() -> None:
        rng = random.Random(SEED + 1)
        store = store_factory()
        try:
            while len(race.rotations) < ROTATIONS and not race.errors:
                # Rotate each grant once, at a random moment of the writer's writes.
                if not holding.wait(timeout=30):
                    raise RuntimeError("the writer never got its claim back")
                holding.clear()
                time.sleep(rng.uniform(0.002, 0.02))
                began = time.monotonic()
                try:
                    with transaction.atomic():
                        epoch = rotate_claim(store, WORKFLOW_ID, clock=clock)
                        append_to_log(["r", epoch], clock())
                except StaleEpochError:
                    race.stale_rotations += 1  # the writer re-acquired in between: try again
                else:
                    race.rotations.append(epoch)
                    race.rotation_waits_s.append(time.monotonic() - began)
        except BaseException:
            race.errors.append(f"rotator: {traceback.format_exc()}")
        finally:
            rotations_done.set()
            connection.close()

    threads = [threading.Thread(target=writer), threading.Thread(target=rotator)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
    assert not race.errors, "\n".join(race.errors)
    return race


def check_fenced_race(race: FencedRace) -> dict[str, Any]:
    log = Workflow.objects.values_list("state", flat=True).get(pk=WORKFLOW_ID)["writes"]
    failures: list[str] = []
    fail = failures.append

    # Replay the commit-ordered log. After a rotation to n nobody holds n; the writer's
    # next grant is n + 1, so a write committed after marker n must carry exactly n + 1.
    last_rotation, last_write = 0, 0
    for position, (kind, epoch) in enumerate(log):
        if kind == "r":
            if epoch <= max(last_rotation, last_write):
                fail(
                    f"#{position} rotation to {epoch} after epoch {max(last_rotation, last_write)}"
                )
            last_rotation = epoch
        elif epoch != last_rotation + 1:
            fail(f"#{position} write of epoch {epoch} committed after rotation to {last_rotation}")
        elif epoch < last_write:
            fail(f"#{position} write of epoch {epoch} after a write of epoch {last_write}")
        else:
            last_write = epoch

    committed = [epoch for epoch, outcome in race.attempts if outcome == "committed"]
    logged = [epoch for kind, epoch in log if kind == "w"]
    if logged != committed:
        fail(f"log holds writes {logged}, the writer saw {committed} commit")
    if [epoch for kind, epoch in log if kind == "r"] != race.rotations:
        fail(f"log holds rotations {log}, the rotator committed {race.rotations}")

    replay = replay_events([WORKFLOW_ID])
    failures.extend(replay.failures)
    grants = replay.grants[WORKFLOW_ID]
    rotated = {epoch for epoch, grant in grants.items() if grant.kind == "rotated"}
    if rotated != set(race.rotations):
        fail(f"rotated events {sorted(rotated)} != rotations {race.rotations}")
    # Every rotation of an epoch the writer held deposed it: its last attempt at that
    # epoch was refused, and its release afterwards lost the race.
    last_outcome: dict[int, str] = {}
    for epoch, outcome in race.attempts:
        last_outcome[epoch] = outcome
    interrupted = [
        epoch - 1
        for epoch in race.rotations
        if epoch - 1 in grants and grants[epoch - 1][:2] == ("acquired", WRITER)
    ]
    for epoch in interrupted:
        if last_outcome.get(epoch, "deposed") != "deposed":
            fail(f"epoch {epoch} was rotated away, yet the writer's last write at it committed")
    for epoch, outcome in race.attempts:
        if outcome == "deposed" and epoch + 1 not in rotated:
            fail(f"writer deposed at epoch {epoch}, but nobody rotated it")
    for epoch, status in race.releases:
        if status != "lost-race":
            fail(f"release after deposition at epoch {epoch} answered {status}")

    summary = {
        "log_entries": len(log),
        "writes_committed": len(committed),
        "writes_deposed": sum(outcome == "deposed" for _, outcome in race.attempts),
        "rotations": len(race.rotations),
        "rotations_of_a_held_epoch": len(interrupted),
        "stale_rotations": race.stale_rotations,
        "final_epoch": replay.epoch[WORKFLOW_ID],
        "rotation_wait_max_s": round(max(race.rotation_waits_s, default=0.0), 3),
        "rotation_wait_mean_s": round(
            sum(race.rotation_waits_s) / max(len(race.rotation_waits_s), 1), 3
        ),
    }
    assert not failures, (
        f"{len(failures)} violations:\n" + "\n".join(failures[:40]) + f"\n{summary}"
    )
    return summary


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_no_fenced_write_of_a_rotated_epoch_commits() -> None:
    """Rotations at random moments: no old-epoch write commits after, and the writer is deposed."""
    started = time.monotonic()
    Workflow.objects.create(
        workflow_id=WORKFLOW_ID,
        workflow_type="demo",
        status="running",
        state={"writes": []},
        created_at_ms=START_MS,
        updated_at_ms=START_MS,
    )

    race = race_fenced_writes()
    summary = check_fenced_race(race)

    print(
        f"\n[{connection.vendor}, fenced writes] {time.monotonic() - started:.1f}s wall: {summary}"
    )
    assert summary["rotations"] == ROTATIONS
    assert summary["rotations_of_a_held_epoch"] == ROTATIONS, summary
    assert summary["writes_deposed"] == ROTATIONS, summary
    assert summary["writes_committed"] >= ROTATIONS // 2, summary
