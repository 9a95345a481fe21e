"""The decoding guard: what a consumer refuses, and that it says why."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from claims.engine.broker_guard import UndecodableMessage, decode_envelope


def envelope(body: object, *, content_type: str = "application/json") -> dict[str, object]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return {
        "body": base64.b64encode(raw).decode(),
        "content-type": content_type,
        "content-encoding": "utf-8",
        "headers": {},
        "properties": {
            "body_encoding": "base64",
            "delivery_info": {"exchange": "x", "routing_key": "q"},
            "delivery_tag": "tag",
        },
    }


def test_a_well_formed_message_decodes_to_its_envelope():
    payload = envelope({"task": "claims.engine_tick"})
    assert decode_envelope(json.dumps(payload).encode()) == payload


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"", "not JSON", id="empty-file"),
        pytest.param(b'{"body": "eyJ0YXNrIjog', "not JSON", id="truncated-write"),
        pytest.param(b"\xff\xfe\x00garbage", "not JSON", id="binary"),
        pytest.param(b"[1, 2, 3]", "a JSON list", id="json-not-an-envelope"),
        pytest.param(b'{"hello": "world"}', "envelope lacks", id="foreign-json-object"),
    ],
)
def test_raw_bytes_that_are_not_a_message_are_refused_with_the_reason(raw, reason):
    with pytest.raises(UndecodableMessage, match=reason):
        decode_envelope(raw)


def test_a_body_that_is_not_base64_is_refused():
    payload = envelope({"task": "x"})
    payload["body"] = "%%%not base64%%%"
    with pytest.raises(UndecodableMessage, match="does not decode"):
        decode_envelope(json.dumps(payload).encode())


def test_a_json_body_that_does_not_parse_is_refused():
    payload = envelope(b'{"task": ')
    with pytest.raises(UndecodableMessage, match="does not decode"):
        decode_envelope(json.dumps(payload).encode())


class ExplodesWhenUnpickled:
    def __reduce__(self):
        return (pytest.fail, ("the guard unpickled a message body",))


def test_a_pickled_body_is_refused_without_being_unpickled():
    """Unpickling would run code chosen by whoever could write to the queue."""
    raw = pickle.dumps(ExplodesWhenUnpickled())
    payload = envelope(raw, content_type="application/x-python-serialize")
    with pytest.raises(UndecodableMessage, match="does not decode"):
        decode_envelope(json.dumps(payload).encode())


def test_properties_without_delivery_info_are_refused():
    payload = envelope({"task": "x"})
    payload["properties"] = {"delivery_tag": "t"}
    with pytest.raises(UndecodableMessage, match="delivery_info"):
        decode_envelope(json.dumps(payload).encode())
