"""python -m benchmarks.broker [--messages N] [--only spool,filesystem,sqlalchemy,redis]

The embedded broker, chosen by measurement: each candidate transport, in one run, under
  stress    4 publishing and 3 consuming processes, N messages (20,000, up to 64 KiB) over
            5 queues: lost, duplicated, corrupted, refused; processes that died; throughput
  large     the same with 2,000 messages of up to 4 MiB, where a write takes long enough
            for a consumer to read it half-done
  latency   the path of a tick: publisher -> relay consumer -> final consumer (beat sends
            the fan-out task to any engine, which sends each engine its tick), 200 pings
  idle      CPU used by 3 idle consumers, each polling 3 queues as an engine does, for 20 s
  fleet     CPU used by an idle fleet (3 engines and beat, nothing to run, SQLite) for 60 s

Candidates: ``spool`` (weftboard's, the default), ``filesystem`` (kombu's, as shipped),
``sqlalchemy`` (kombu's, on a SQLite file; needs SQLAlchemy installed) and ``redis``
(the production broker, for reference; needs a server at 127.0.0.1:6379).
Results: var/bench/broker.json, and a table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from .broker_stress import Transport, run_stress

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = ("spool", "filesystem", "sqlalchemy", "redis")
REDIS_URL = "redis://127.0.0.1:6379/12"
PINGS = 200
PING_EVERY_S = 0.05
IDLE_S = 20.0
IDLE_CONSUMERS = 3
FLEET_WARMUP_S = 20.0
FLEET_IDLE_S = 60.0
LARGE_MESSAGES = 2_000
LARGE_PAD = 4 << 20
# The engines' setting for every virtual transport that accepts it (see weftboard/settings).
POLLING_INTERVAL_S = 0.1


def candidate(name: str, folder: Path) -> Transport | str:
    """The transport, or why it cannot run here."""
    if name == "spool":
        return Transport(
            "spool://", {"spool_folder": str(folder), "polling_interval": POLLING_INTERVAL_S}
        )
    if name == "filesystem":
        for sub in ("out", "control", "processed"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return Transport(
            "filesystem://",
            {
                "data_folder_in": str(folder / "out"),
                "data_folder_out": str(folder / "out"),
                "control_folder": str(folder / "control"),
                "processed_folder": str(folder / "processed"),
                "polling_interval": POLLING_INTERVAL_S,
            },
        )
    if name == "sqlalchemy":
        try:
            import sqlalchemy  # noqa: F401
        except ImportError:
            return "SQLAlchemy is not installed (pip install sqlalchemy)"
        folder.mkdir(parents=True, exist_ok=True)
        # kombu hands every transport option to create_engine, which refuses
        # polling_interval: this transport polls at kombu's default of 1 s.
        return Transport(f"sqla+sqlite:///{folder / 'broker.sqlite3'}")
    if name == "redis":
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
        try:
            client.ping()
            client.flushdb()
        except Exception as error:
            return f"no Redis at {REDIS_URL}: {error}"
        finally:
            client.close()
        return Transport(REDIS_URL)
    raise ValueError(name)


def _queue(name: str) -> Any:
    import kombu

    return kombu.Queue(name, kombu.Exchange(name), name)


def _relay(transport: Transport, ready: Event, stop: Event) -> None:
    """Takes each ping from hop1 and sends it on to hop2, as the fan-out task does."""
    with transport.connection() as connection:
        producer = connection.Producer(serializer="json")
        hop2 = _queue("bench.hop2")

        def forward(body: Any, message: Any) -> None:
            message.ack()
            producer.publish(
                body, exchange=hop2.exchange, routing_key=hop2.routing_key, declare=[hop2]
            )

        with connection.Consumer([_queue("bench.hop1")], callbacks=[forward], accept=["json"]):
            ready.set()
            while not stop.is_set():
                with contextlib.suppress(TimeoutError, OSError):
                    connection.drain_events(timeout=0.5)


def _receiver(transport: Transport, ready: Event, stop: Event, out: str) -> None:
    lags: list[float] = []

    def receive(body: Any, message: Any) -> None:
        message.ack()
        lags.append(time.time() - float(body["sent"]))

    with (
        transport.connection() as connection,
        connection.Consumer([_queue("bench.hop2")], callbacks=[receive], accept=["json"]),
    ):
        ready.set()
        while not stop.is_set() and len(lags) < PINGS:
            with contextlib.suppress(TimeoutError, OSError):
                connection.drain_events(timeout=0.5)
    Path(out).write_text(json.dumps(lags))


def measure_latency(transport: Transport, workdir: Path) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    ready = [context.Event(), context.Event()]
    out = workdir / "lags.json"
    procs = [
        context.Process(target=_relay, args=(transport, ready[0], stop)),
        context.Process(target=_receiver, args=(transport, ready[1], stop, str(out))),
    ]
    for proc in procs:
        proc.start()
    for event in ready:
        event.wait(30)
    hop1 = _queue("bench.hop1")
    with transport.connection() as connection:
        producer = connection.Producer(serializer="json")
        for _ in range(PINGS):
            producer.publish(
                {"sent": time.time()},
                exchange=hop1.exchange,
                routing_key=hop1.routing_key,
                declare=[hop1],
            )
            time.sleep(PING_EVERY_S)
    procs[1].join(30)
    stop.set()
    for proc in procs:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    lags = sorted(json.loads(out.read_text())) if out.exists() else []
    if not lags:
        return {"received": 0}
    return {
        "received": len(lags),
        "median_ms": statistics.median(lags) * 1000,
        "p95_ms": lags[int(len(lags) * 0.95) - 1] * 1000,
        "max_ms": lags[-1] * 1000,
    }


def _idle_consumer(transport: Transport, index: int, out: str) -> None:
    names = [f"bench.idle{index}", "bench.idle-shared", f"bench.idle{index}.pidbox"]
    with (
        transport.connection() as connection,
        connection.Consumer([_queue(n) for n in names], callbacks=[], accept=["json"]),
    ):
        with contextlib.suppress(TimeoutError, OSError):
            connection.drain_events(timeout=1.0)  # connect and declare before measuring
        cpu_start, wall_end = time.process_time(), time.monotonic() + IDLE_S
        while time.monotonic() < wall_end:
            with contextlib.suppress(TimeoutError, OSError):
                connection.drain_events(timeout=wall_end - time.monotonic())
        Path(out).write_text(json.dumps(time.process_time() - cpu_start))


def measure_idle_cpu(transport: Transport, workdir: Path) -> dict[str, float]:
    """CPU seconds per second of wall time, summed over the idle consumers."""
    context = multiprocessing.get_context("spawn")
    outs = [workdir / f"idle-{i}.json" for i in range(IDLE_CONSUMERS)]
    procs = [
        context.Process(target=_idle_consumer, args=(transport, i, str(outs[i])))
        for i in range(IDLE_CONSUMERS)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(IDLE_S + 60)
    cpu = sum(json.loads(out.read_text()) for out in outs if out.exists())
    return {"cpu_percent_of_one_core": 100 * cpu / IDLE_S}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_idle_fleet(transport: Transport, workdir: Path) -> dict[str, float]:
    """CPU of 3 engines and beat with nothing to do, as a share of one core."""
    from faults.processes import Process, beat_argv, engine_argv, manage

    workdir.mkdir(parents=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("WEFTBOARD_", "WEFT_", "CELERY_", "DATABASE_URL"))
    }
    env.update(
        DATABASE_URL=f"sqlite:///{workdir / 'fleet.sqlite3'}",
        CELERY_BROKER_URL=transport.url,
        WEFTBOARD_VAR_DIR=str(workdir / "var"),
        WEFTBOARD_SECRET_KEY="benchmark-only",
    )
    manage("migrate", "--noinput", env=env)
    processes = [
        Process(f"engine{n}", engine_argv(f"engine{n}"), env, workdir / f"engine{n}.log")
        for n in (1, 2, 3)
    ]
    processes.append(
        Process("beat", beat_argv(workdir / "beat-schedule"), env, workdir / "beat.log")
    )
    try:
        time.sleep(FLEET_WARMUP_S)
        if not all(p.alive() for p in processes):
            return {"cpu_percent_of_one_core": float("nan")}
        before = {p.pid: _cpu_seconds(p.pid) for p in processes}
        time.sleep(FLEET_IDLE_S)
        used = sum(_cpu_seconds(pid) - cpu for pid, cpu in before.items())
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.close()
    return {"cpu_percent_of_one_core": 100 * used / FLEET_IDLE_S}


def run(name: str, messages: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-broker-{name}-") as tmp:
        workdir = Path(tmp)
        transport = candidate(name, workdir / "broker")
        if isinstance(transport, str):
            return {"skipped": transport}
        stress = run_stress(transport, workdir=workdir, messages=messages, timeout_s=60)
        result: dict[str, Any] = {"stress": {**vars(stress), "ok": stress.ok}}
        transport = candidate(name, workdir / "broker-large")
        assert not isinstance(transport, str)
        large = run_stress(
            transport, workdir=workdir, messages=LARGE_MESSAGES, max_pad=LARGE_PAD, timeout_s=60
        )
        result["large"] = {**vars(large), "ok": large.ok}
        transport = candidate(name, workdir / "broker-latency")
        assert not isinstance(transport, str)
        result["latency"] = measure_latency(transport, workdir)
        transport = candidate(name, workdir / "broker-idle")
        assert not isinstance(transport, str)
        result["idle"] = measure_idle_cpu(transport, workdir)
        if name != "filesystem":  # the settings refuse it for a fleet
            result["fleet"] = measure_idle_fleet(transport, workdir / "fleet")
        return result


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"{'transport':<11} {'stress: 20,000 messages':<44} {'large: 2,000 of up to 4 MiB':<44} "
        f"{'tick path ms (med/p95/max)':<27} {'idle consumers':<16} idle fleet",
    ]
    for name, result in results.items():
        if "skipped" in result:
            lines.append(f"{name:<11} skipped: {result['skipped']}")
            continue
        stress = _stress_cell(result["stress"])
        large = _stress_cell(result["large"])
        lat = result["latency"]
        latency = (
            f"{lat['median_ms']:.0f} / {lat['p95_ms']:.0f} / {lat['max_ms']:.0f}"
            if lat.get("received")
            else "no pings arrived"
        )
        idle = f"{result['idle']['cpu_percent_of_one_core']:.1f}% of a core"
        fleet = result.get("fleet", {}).get("cpu_percent_of_one_core")
        fleet_cell = "refused" if fleet is None else f"{fleet:.1f}% of a core"
        lines.append(f"{name:<11} {stress:<44} {large:<44} {latency:<27} {idle:<16} {fleet_cell}")
    return "\n".join(lines)


def _stress_cell(s: dict[str, Any]) -> str:
    died = sum(code != 0 for code in s["consumer_exits"] + s["publisher_exits"])
    rate = s["received"] / s["seconds"] if s["seconds"] else 0.0
    return (
        f"{'ok' if s['ok'] else 'FAILED'}: {s['lost']} lost, {s['duplicates']} dup, "
        f"{s['corrupted']} bad, {died} died, {rate:,.0f}/s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench broker", description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--only", default=",".join(CANDIDATES))
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = set(names) - set(CANDIDATES)
    if unknown:
        parser.error(f"unknown candidates: {', '.join(sorted(unknown))}")
    results = {}
    for name in names:
        print(f"broker benchmark: {name} ...", flush=True)
        results[name] = run(name, args.messages)
    out = ROOT / "var" / "bench" / "broker.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"(results in {out.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
