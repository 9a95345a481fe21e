"""An engine outlives what goes wrong around it: messages it cannot decode on its own queue,
a Redis restart, its database sessions dropped. Each time it goes on ticking."""

from __future__ import annotations

import base64
import json
import signal
import time
from pathlib import Path

import pytest
from django.db import connection

from claims.engine.worker import engine_queue
from claims.models import ClaimCounter, Engine
from claims.selectors import fleet_metrics
from faults.processes import Process, free_port, redis_answers

from ._fleet import RENEW_INTERVAL_MS, Fleet, wait_until

pytestmark = pytest.mark.slow

# Ticks come once per renew interval; a few of them prove the engine goes on.
TICKS = 4


def heartbeat(engine_id: str) -> int:
    return Engine.objects.get(engine_id=engine_id).heartbeat_at_ms


def wait_ticking(fleet: Fleet, engine_id: str, *, after_ms: int, what: str) -> None:
    """Until the engine's heartbeat has moved TICKS renew intervals past ``after_ms``."""
    wait_until(
        lambda: heartbeat(engine_id) >= after_ms + TICKS * RENEW_INTERVAL_MS,
        timeout_s=30,
        what=what,
        check=fleet.check_alive,
    )


def foreign_messages() -> list[bytes]:
    """What another program, a torn write or a corrupted row may leave on a queue."""
    bad_body = {
        "body": base64.b64encode(b'{"task": ').decode(),
        "content-type": "application/json",
        "content-encoding": "utf-8",
        "headers": {},
        "properties": {
            "body_encoding": "base64",
            "delivery_info": {"exchange": "", "routing_key": "x"},
            "delivery_tag": "t",
        },
    }
    return [
        b"",
        b'{"body": "eyJ0YXNrIjog',
        b"[1, 2, 3]",
        b'{"greeting": "from another program"}',
        json.dumps(bad_body).encode(),
    ]


def put_on_queue(fleet: Fleet, queue: str, raw: list[bytes]) -> None:
    if fleet.broker_url.startswith("spool://"):
        folder = fleet.var_dir / "broker" / "queues" / queue
        folder.mkdir(parents=True, exist_ok=True)
        for n, data in enumerate(raw):
            # Oldest names first: these are read before any tick waiting behind them.
            (folder / f"{n:020d}-1-{n:09d}.msg").write_bytes(data)
        return
    import redis

    client = redis.Redis.from_url(fleet.broker_url)
    try:
        for data in raw:
            client.rpush(queue, data)  # kombu pops from the right: these come first
    finally:
        client.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fleet", ["spool", "redis"], indirect=True)
def test_undecodable_messages_are_set_aside_and_the_engine_goes_on_ticking(
    fleet: Fleet,
) -> None:
    engine = fleet.start_engine("engine1")
    fleet.start_beat()
    engine_id = fleet.wait_registered([engine])["engine1"].engine_id
    queue = engine_queue(f"engine1@{fleet.hostname}")
    wait_ticking(fleet, engine_id, after_ms=heartbeat(engine_id), what="the first ticks")
    bad = foreign_messages()

    put_on_queue(fleet, queue, bad)
    injected_at = heartbeat(engine_id)

    wait_ticking(fleet, engine_id, after_ms=injected_at, what="ticks after the bad messages")
    wait_until(
        lambda: (
            ClaimCounter.objects.filter(engine_id=engine_id, name="broker_rejected")
            .values_list("value", flat=True)
            .first()
            == len(bad)
        ),
        timeout_s=10,
        what="the engine to count the refused messages",
        check=fleet.check_alive,
    )
    assert engine.alive()
    assert fleet_metrics().counters["broker_rejected"] == len(bad)
    log = engine.log_path.read_text(errors="replace")
    assert log.count(f"undecodable message on queue '{queue}'") == len(bad)
    assert "Unrecoverable error" not in log
    if fleet.broker_url.startswith("spool://"):
        aside = sorted((fleet.var_dir / "broker" / "rejected" / queue).iterdir())
        assert [path.read_bytes() for path in aside] == bad


def redis_server(workdir: Path, port: int) -> Process:
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    server = Process(
        "redis", [*argv, "--appendonly", "no", "--dir", str(workdir)], {}, workdir / "redis.log"
    )

    wait_until(lambda: redis_answers(port), timeout_s=20, what="a private Redis server")
    return server


@pytest.mark.timeout(180)
def test_an_engine_reconnects_after_redis_restarts(
    engine_services: None, transactional_db: None, tmp_path: Path
) -> None:
    """Redis dies and comes back on the same port: while it is away the engine runs its
    passes on its own timer (its heartbeat, and so its renewals, go on), then engine and
    beat reconnect and the ticks resume; neither process exits."""
    from ._fleet import database_url

    port = free_port()
    redis = redis_server(tmp_path, port)
    fleet = Fleet(
        tmp_path,
        database_url=database_url(connection.settings_dict),
        broker_url=f"redis://127.0.0.1:{port}/0",
        var_dir=tmp_path / "var",
    )
    try:
        engine = fleet.start_engine("engine1")
        fleet.start_beat()
        engine_id = fleet.wait_registered([engine])["engine1"].engine_id
        wait_ticking(fleet, engine_id, after_ms=heartbeat(engine_id), what="the first ticks")

        # A slow start may have logged a notice already, before beat's first tick came.
        before = _notices(engine.log_path)
        redis.send(signal.SIGKILL)
        redis.wait(10)
        redis.close()
        # Nothing carries beat's ticks now; the engine's own timer must, once it has noticed
        # (its heartbeat moves on meanwhile, so the notice is waited for, not assumed).
        wait_until(
            lambda: _notices(engine.log_path) > before,
            timeout_s=60,
            what="the engine to notice the missing ticks",
            check=fleet.check_alive,
        )
        noticed_at = heartbeat(engine_id)
        wait_ticking(fleet, engine_id, after_ms=noticed_at, what="passes while Redis is down")
        log = engine.log_path.read_text(errors="replace")
        assert log.count("event=ticks-missing") == before + 1, log[-3000:]  # once per outage
        back_before = _notices(engine.log_path, "event=ticks-back")
        redis = redis_server(tmp_path, port)
        restarted_at = heartbeat(engine_id)

        wait_ticking(fleet, engine_id, after_ms=restarted_at, what="ticks after the restart")
        wait_until(
            lambda: _notices(engine.log_path, "event=ticks-back") > back_before,
            timeout_s=60,
            what="the engine to take beat's ticks again",
            check=fleet.check_alive,
        )
        fleet.check_alive()
        assert "Unrecoverable error" not in engine.log_path.read_text(errors="replace")
    finally:
        fleet.close()
        redis.terminate()
        redis.close()


@pytest.mark.timeout(120)
def test_an_engine_carries_on_after_its_database_sessions_are_dropped(fleet: Fleet) -> None:
    engine = fleet.start_engine("engine1")
    fleet.start_beat()
    engine_id = fleet.wait_registered([engine])["engine1"].engine_id
    wait_ticking(fleet, engine_id, after_ms=heartbeat(engine_id), what="the first ticks")

    # An engine opens a session per pass and closes it after: drop whatever it has open,
    # over and over, for three renew intervals.
    dropped = 0
    until = time.monotonic() + 3 * RENEW_INTERVAL_MS / 1000
    while time.monotonic() < until:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = %s AND datname = current_database()",
                ["weftboard-test-engine1"],
            )
            dropped += cursor.fetchone()[0]
        time.sleep(0.02)
    assert dropped >= 3, f"only {dropped} of the engine's sessions were caught open"
    dropped_at = heartbeat(engine_id)

    wait_ticking(fleet, engine_id, after_ms=dropped_at, what="ticks after the drops")
    fleet.check_alive()


def _notices(log_path: Path, notice: str = "event=ticks-missing") -> int:
    """How many times the engine has logged ``notice`` (by default: that beat's ticks
    stopped coming)."""
    return log_path.read_text(errors="replace").count(notice)
