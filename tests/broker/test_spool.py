"""The spool transport: whole messages only, each delivered once, names checked, and a bad
file set aside instead of stopping the consumer."""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from pathlib import Path
from queue import Empty
from typing import Any

import kombu
import pytest
from kombu.exceptions import ChannelError

from claims.engine import broker_guard as guard
from weftboard.broker import register_transports
from weftboard.env_settings import broker_config


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    return tmp_path / "spool"


def connect(spool: Path) -> kombu.Connection:
    register_transports()
    # The options the settings give the embedded broker, but on this test's folder.
    _, options = broker_config("spool://")
    return kombu.Connection("spool://", transport_options={**options, "spool_folder": str(spool)})


def queue(name: str) -> kombu.Queue:
    return kombu.Queue(name, kombu.Exchange(name), name)


def publish(spool: Path, name: str, *bodies: Any, **kwargs: Any) -> None:
    with connect(spool) as connection:
        producer = connection.Producer(serializer="json")
        for body in bodies:
            producer.publish(body, exchange=name, routing_key=name, declare=[queue(name)], **kwargs)


def drain(spool: Path, name: str, *, wait_s: float = 1.0) -> list[Any]:
    got: list[Any] = []

    def on_message(body: Any, message: Any) -> None:
        got.append(body)
        message.ack()

    with (
        connect(spool) as connection,
        connection.Consumer([queue(name)], callbacks=[on_message], accept=["json"]),
    ):
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                connection.drain_events(timeout=0.2)
    return got


def ready_files(spool: Path, name: str) -> list[str]:
    folder = spool / "queues" / name
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_messages_arrive_once_each_in_the_order_they_were_sent(spool):
    publish(spool, "q", *[{"n": n} for n in range(20)])

    assert drain(spool, "q") == [{"n": n} for n in range(20)]
    assert ready_files(spool, "q") == []
    assert drain(spool, "q", wait_s=0.3) == []


def test_a_message_being_written_is_invisible_to_consumers(spool):
    """A half-written file sits in tmp/, which no consumer lists, until it is renamed in."""
    publish(spool, "q", {"n": 1})
    (spool / "tmp" / f"{time.time_ns():020d}-1-000000001.msg").write_bytes(b'{"body": "ab')
    refused = guard.rejected_total()

    assert drain(spool, "q") == [{"n": 1}]
    assert guard.rejected_total() == refused
    assert list((spool / "rejected").iterdir()) == []


def test_a_file_claimed_by_one_consumer_cannot_be_claimed_by_another(spool):
    publish(spool, "q", {"n": 1})
    [name] = ready_files(spool, "q")
    with connect(spool) as first, connect(spool) as second:
        # The second consumer listed the file too, before the first claimed it.
        second.default_channel._ready["q"] = deque([name])
        payload = first.default_channel._get("q")
        with pytest.raises(Empty):
            second.default_channel._get("q")
    assert payload["properties"]["delivery_info"]["routing_key"] == "q"
    assert not (spool / "queues" / "q" / name).exists()


@pytest.mark.parametrize(
    "raw",
    [b"", b'{"body": "eyJ0YXNrIjog', b"[1, 2]", b'{"task": "not an envelope"}'],
    ids=["empty", "truncated", "json-list", "foreign-json"],
)
def test_an_undecodable_file_is_set_aside_counted_and_logged_and_the_next_one_delivered(
    spool, caplog, raw
):
    folder = spool / "queues" / "engine.e1-host"
    folder.mkdir(parents=True)
    (folder / f"{1:020d}-1-000000001.msg").write_bytes(raw)
    publish(spool, "engine.e1-host", {"n": 2})
    before = guard.rejected_total()

    with caplog.at_level("ERROR", logger="weftboard.broker"):
        assert drain(spool, "engine.e1-host") == [{"n": 2}]

    assert guard.rejected_total() == before + 1
    [aside] = list((spool / "rejected" / "engine.e1-host").iterdir())
    assert aside.read_bytes() == raw
    assert "undecodable message on queue 'engine.e1-host'" in caplog.text


def test_a_consumer_that_died_mid_read_gets_its_message_put_back(spool):
    """A claimed file of a process that no longer exists returns to its queue."""
    publish(spool, "q", {"n": 1})
    [name] = ready_files(spool, "q")
    dead_pid = 2**22 + 12345  # above the kernel's pid limit: never a live process
    os.rename(spool / "queues" / "q" / name, spool / "claimed" / f"{dead_pid}~q~{name}")

    assert drain(spool, "q") == [{"n": 1}]
    assert list((spool / "claimed").iterdir()) == []


def test_a_claim_of_a_live_consumer_is_left_alone(spool):
    publish(spool, "q", {"n": 1})
    [name] = ready_files(spool, "q")
    claimed = spool / "claimed" / f"{os.getpid()}~q~{name}"
    os.rename(spool / "queues" / "q" / name, claimed)

    assert drain(spool, "q", wait_s=0.3) == []
    assert claimed.exists()


def test_an_expired_message_is_dropped_unread(spool):
    publish(spool, "q", {"n": 1}, expiration=None, headers={"expires": "2000-01-01T00:00:00+00:00"})
    publish(spool, "q", {"n": 2})

    assert drain(spool, "q") == [{"n": 2}]
    assert ready_files(spool, "q") == []


def test_a_fanout_reaches_every_bound_queue_from_a_publisher_that_never_declared_it(spool):
    exchange = kombu.Exchange("broadcast", type="fanout")
    with connect(spool) as connection:
        for name in ("a", "b"):
            kombu.Queue(name, exchange)(connection.default_channel).declare()
    with connect(spool) as other:  # another process: it knows nothing of "broadcast"
        other.Producer(serializer="json").publish({"hello": 1}, exchange="broadcast")

    assert drain(spool, "a") == [{"hello": 1}]
    assert drain(spool, "b") == [{"hello": 1}]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "with~tilde", "", "x" * 201])
def test_a_queue_name_that_is_not_a_plain_file_name_is_refused(spool, name):
    with connect(spool) as connection, pytest.raises(ChannelError, match="invalid queue name"):
        connection.default_channel._put(name, {"body": ""})
    assert not (spool.parent / "escape").exists()


def test_the_filesystem_transport_is_refused_by_the_settings():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="half-written"):
        broker_config("filesystem://")


def test_names_with_digits_int_refuses_are_left_alone_not_fatal(spool):
    """A file another program named with superscript digits neither expires nor crashes
    the consumer; orphan recovery skips a claim named the same way."""
    folder = spool / "queues" / "q"
    folder.mkdir(parents=True)
    (folder / f"{1:020d}-1-000000001-x²³.msg").write_bytes(b"[]")
    (spool / "claimed").mkdir(parents=True, exist_ok=True)
    (spool / "claimed" / "¹²~q~x.msg").write_bytes(b"[]")
    publish(spool, "q", {"n": 1})

    assert drain(spool, "q") == [{"n": 1}]
    assert (spool / "claimed" / "¹²~q~x.msg").exists()
