"""Many publishing and many consuming processes on one kombu transport, and a ledger of
what arrived: every message lost, duplicated, corrupted or refused, and every consumer
that died.

Each message carries its publisher, its sequence number, a padding of varying size (up to
64 KiB, so a write that is read before it ends shows) and the padding's digest. The test
suite (tests/broker) and the broker benchmark both run it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

QUEUE_PREFIX = "stress.q"
MAX_PAD = 64 * 1024
DRAIN_GRACE_S = 2.0


@dataclass(frozen=True)
class Transport:
    """A kombu URL and its transport options, as a child process rebuilds them."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)

    def connection(self) -> Any:
        import kombu

        from weftboard.broker import register_transports

        register_transports()
        return kombu.Connection(self.url, transport_options=dict(self.options))


@dataclass
class StressResult:
    expected: int
    received: int
    unique: int
    lost: int
    duplicates: int
    corrupted: int
    rejected: int
    consumer_exits: list[int | None]
    publisher_exits: list[int | None]
    seconds: float

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.corrupted == 0
            and self.rejected == 0
            and all(code == 0 for code in self.consumer_exits + self.publisher_exits)
        )

    def describe(self) -> str:
        rate = self.received / self.seconds if self.seconds else 0.0
        return (
            f"{self.expected} sent, {self.unique} arrived ({self.received} deliveries), "
            f"{self.lost} lost, {self.duplicates} duplicates, {self.corrupted} corrupted, "
            f"{self.rejected} refused as undecodable; consumer exits {self.consumer_exits}, "
            f"publisher exits {self.publisher_exits}; {self.seconds:.1f} s ({rate:,.0f}/s)"
        )


def _queues(count: int) -> list[Any]:
    import kombu

    names = [f"{QUEUE_PREFIX}{k}" for k in range(count)]
    return [kombu.Queue(name, kombu.Exchange(name), name) for name in names]


def _digest(pad: str) -> str:
    return hashlib.sha256(pad.encode()).hexdigest()[:32]


def publish(
    transport: Transport, publisher: int, count: int, queue_count: int, max_pad: int
) -> None:
    rng = random.Random(publisher)
    queues = _queues(queue_count)
    with transport.connection() as connection:
        producer = connection.Producer(serializer="json")
        for seq in range(count):
            # Mostly small, like ticks; now and then large, as a torn write would show.
            size = rng.choice((16, 200, 2_000)) if rng.random() < 0.9 else rng.randint(1, max_pad)
            pad = rng.randbytes(size // 2 + 1).hex()[:size]
            queue = queues[seq % queue_count]
            producer.publish(
                {"p": publisher, "n": seq, "pad": pad, "sum": _digest(pad)},
                exchange=queue.exchange,
                routing_key=queue.routing_key,
                declare=[queue],
                retry=True,
            )


def consume(
    transport: Transport, consumer: int, queue_count: int, stop: Event, out: str, progress: Any
) -> None:
    from claims.engine.broker_guard import rejected_total

    seen: list[list[int]] = []
    corrupted = 0

    def on_message(body: Any, message: Any) -> None:
        nonlocal corrupted
        message.ack()
        if not isinstance(body, dict) or _digest(str(body.get("pad"))) != body.get("sum"):
            corrupted += 1
            return
        seen.append([int(body["p"]), int(body["n"])])
        with progress.get_lock():
            progress.value += 1

    with (
        transport.connection() as connection,
        connection.Consumer(_queues(queue_count), callbacks=[on_message], accept=["json"]),
    ):
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                connection.drain_events(timeout=0.5)
    Path(out).write_text(
        json.dumps({"seen": seen, "corrupted": corrupted, "rejected": rejected_total()})
    )


def run_stress(
    transport: Transport,
    *,
    workdir: Path,
    publishers: int = 4,
    consumers: int = 3,
    messages: int = 20_000,
    queues: int = 5,
    max_pad: int = MAX_PAD,
    timeout_s: float = 600.0,
) -> StressResult:
    """Start the consumers, then the publishers; stop once every message arrived (or the
    deliveries stopped growing for the timeout), and read what each consumer kept."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    progress = context.Value("q", 0)
    per_publisher = messages // publishers
    expected = per_publisher * publishers
    outputs = [workdir / f"consumer-{c}.json" for c in range(consumers)]
    consumer_procs = [
        context.Process(
            target=consume,
            args=(transport, c, queues, stop, str(outputs[c]), progress),
            name=f"consumer-{c}",
        )
        for c in range(consumers)
    ]
    publisher_procs = [
        context.Process(
            target=publish,
            args=(transport, p, per_publisher, queues, max_pad),
            name=f"publisher-{p}",
        )
        for p in range(publishers)
    ]
    started = time.monotonic()
    for proc in consumer_procs + publisher_procs:
        proc.start()
    last_progress, last_change = -1, time.monotonic()
    while True:
        time.sleep(0.2)
        value = progress.value
        if value != last_progress:
            last_progress, last_change = value, time.monotonic()
        publishers_done = all(not p.is_alive() for p in publisher_procs)
        consumers_alive = any(c.is_alive() for c in consumer_procs)
        if publishers_done and value >= expected:
            break
        if not consumers_alive or time.monotonic() - last_change > timeout_s:
            break
    seconds = time.monotonic() - started
    time.sleep(DRAIN_GRACE_S)  # a duplicate still on its way would land now
    stop.set()
    for proc in publisher_procs + consumer_procs:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    deliveries: Counter[tuple[int, int]] = Counter()
    corrupted = rejected = 0
    for out in outputs:
        if not out.exists():
            continue
        data = json.loads(out.read_text())
        deliveries.update((p, n) for p, n in data["seen"])
        corrupted += data["corrupted"]
        rejected += data["rejected"]
    wanted = {(p, n) for p in range(publishers) for n in range(per_publisher)}
    return StressResult(
        expected=expected,
        received=sum(deliveries.values()),
        unique=len(wanted & set(deliveries)),
        lost=len(wanted - set(deliveries)),
        duplicates=sum(count - 1 for count in deliveries.values() if count > 1),
        corrupted=corrupted,
        rejected=rejected,
        consumer_exits=[proc.exitcode for proc in consumer_procs],
        publisher_exits=[proc.exitcode for proc in publisher_procs],
        seconds=seconds,
    )


def spool_transport(folder: Path) -> Transport:
    return Transport("spool://", {"spool_folder": str(folder)})


if __name__ == "__main__":  # a quick look: python -m benchmarks.broker_stress [folder]
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp) / "spool"
        print(run_stress(spool_transport(folder), workdir=Path(tmp)).describe())
