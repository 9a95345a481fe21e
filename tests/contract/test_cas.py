"""The store's compare-and-swaps, called directly: the epoch and the holder columns are
compared exactly, and a null only ever equals a null (docs/design.md §2-§3). All five
holder columns are varied here, the session epoch last (test_renew_all.py varies it for
renew_many, test_session_claims.py the grants from a session holder)."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimRow, Holder
from claims.protocol.records import ClaimEventRecord

from .stores import START_MS, TTL_MS

T0 = START_MS
OBSERVED = Holder("b", 3, T0 + TTL_MS, T0)
MINE = Holder("a", 4, T0 + 2 * TTL_MS, T0 + TTL_MS)

# One column off each way, a value where the row has a value, then a null in its place.
NOT_OBSERVED = {
    "other engine": Holder("c", 3, T0 + TTL_MS, T0),
    "other holder epoch": Holder("b", 2, T0 + TTL_MS, T0),
    "other expiry": Holder("b", 3, T0 + TTL_MS + 1, T0),
    "other claimed at": Holder("b", 3, T0 + TTL_MS, T0 + 1),
    "null engine": Holder(None, 3, T0 + TTL_MS, T0),
    "null holder epoch": Holder("b", None, T0 + TTL_MS, T0),
    "null expiry": Holder("b", 3, None, T0),
    "null claimed at": Holder("b", 3, T0 + TTL_MS, None),
}
# Garbage holders a row may carry: each null must be matched by a null, nothing else.
GARBAGE = {
    "null engine": (Holder(None, 3, T0, T0), Holder("", 3, T0, T0)),
    "null holder epoch": (Holder("b", None, T0, T0), Holder("b", 0, T0, T0)),
    "null expiry": (Holder("b", 3, None, T0), Holder("b", 3, 0, T0)),
    "null claimed at": (Holder("b", 3, T0, None), Holder("b", 3, T0, 0)),
    "only claimed at": (Holder(None, None, None, T0), Holder(None, None, 0, T0)),
}


def _event(kind: str, before: int, after: int | None) -> ClaimEventRecord:
    return ClaimEventRecord("wf", kind, before, after, "a", T0)  # type: ignore[arg-type]


@pytest.mark.parametrize("expected", NOT_OBSERVED.values(), ids=NOT_OBSERVED.keys())
def test_grant_applies_only_when_every_holder_column_is_as_observed(store, arrange, expected):
    """A grant conditioned on a holder that differs in any one column changes nothing."""
    arrange.put_row("wf", epoch=3, holder=OBSERVED)
    event = _event("takeover", 3, 4)

    def takeover_expecting(holder: Holder) -> bool:
        return store.cas_grant(
            "wf", expected_epoch=3, expected_holder=holder, holder=MINE, event=event
        )

    assert not takeover_expecting(expected)
    assert arrange.read("wf") == ClaimRow("wf", 3, OBSERVED)
    assert arrange.events("wf") == []

    assert takeover_expecting(OBSERVED)
    assert arrange.read("wf") == ClaimRow("wf", 4, MINE)
    assert arrange.events("wf") == [("takeover", 3, 4, "a")]


def test_grant_of_a_held_row_expecting_no_holder_changes_nothing(store, arrange):
    arrange.put_row("wf", epoch=3, holder=OBSERVED)

    assert not store.cas_grant(
        "wf", expected_epoch=3, expected_holder=None, holder=MINE, event=_event("acquired", 3, 4)
    )
    assert arrange.read("wf") == ClaimRow("wf", 3, OBSERVED)


def test_grant_expecting_another_epoch_changes_nothing(store, arrange):
    arrange.put_row("wf", epoch=3, holder=None)

    assert not store.cas_grant(
        "wf", expected_epoch=2, expected_holder=None, holder=MINE, event=_event("acquired", 2, 3)
    )
    assert arrange.read("wf") == ClaimRow("wf", 3, None)
    assert arrange.events("wf") == []


@pytest.mark.parametrize(("garbage", "near_miss"), GARBAGE.values(), ids=GARBAGE.keys())
def test_grant_matches_a_garbage_holder_null_for_null(store, arrange, garbage, near_miss):
    """A null column matches only an expected null, never an empty string or a zero."""
    arrange.put_row("wf", epoch=3, holder=garbage)

    assert not store.cas_grant(
        "wf", expected_epoch=3, expected_holder=near_miss, holder=MINE, event=None
    )
    assert arrange.read("wf") == ClaimRow("wf", 3, garbage)

    assert store.cas_grant("wf", expected_epoch=3, expected_holder=garbage, holder=MINE, event=None)
    assert arrange.read("wf") == ClaimRow("wf", 4, MINE)


@pytest.mark.parametrize("held", NOT_OBSERVED.values(), ids=NOT_OBSERVED.keys())
def test_renew_and_release_need_the_exact_holder(store, arrange, held):
    arrange.put_row("wf", epoch=3, holder=OBSERVED)

    assert not store.cas_renew("wf", held=held, expires_at_ms=T0 + 3 * TTL_MS)
    assert not store.cas_release("wf", held=held, event=_event("released", 3, 3))
    assert arrange.read("wf") == ClaimRow("wf", 3, OBSERVED)
    assert arrange.events("wf") == []


def test_renew_and_release_compare_the_epoch_column_too(store, arrange):
    """A holder copy that still says epoch 3 on a row moved to epoch 4 is not held."""
    arrange.put_row("wf", epoch=4, holder=OBSERVED)

    assert not store.cas_renew("wf", held=OBSERVED, expires_at_ms=T0 + 3 * TTL_MS)
    assert not store.cas_release("wf", held=OBSERVED, event=_event("released", 3, 3))
    assert arrange.read("wf") == ClaimRow("wf", 4, OBSERVED)


def test_renew_moves_only_the_expiry(store, arrange):
    arrange.put_row("wf", epoch=3, holder=OBSERVED)

    assert store.cas_renew("wf", held=OBSERVED, expires_at_ms=T0 + 3 * TTL_MS)
    assert arrange.read("wf") == ClaimRow("wf", 3, Holder("b", 3, T0 + 3 * TTL_MS, T0))
    assert arrange.events("wf") == []


def test_release_clears_the_holder_keeps_the_epoch_and_logs_once(store, arrange):
    arrange.put_row("wf", epoch=3, holder=OBSERVED)

    assert store.cas_release("wf", held=OBSERVED, event=_event("released", 3, 3))
    assert not store.cas_release("wf", held=OBSERVED, event=_event("released", 3, 3))
    assert arrange.read("wf") == ClaimRow("wf", 3, None)
    assert arrange.events("wf") == [("released", 3, 3, "a")]


def test_insert_creates_epoch_one_once_and_logs_once(store, arrange):
    holder = Holder("a", 1, T0 + TTL_MS, T0)

    assert store.cas_insert("wf", holder=holder, event=_event("acquired", 0, 1))
    assert not store.cas_insert("wf", holder=MINE, event=_event("acquired", 0, 1))
    assert arrange.read("wf") == ClaimRow("wf", 1, holder)
    assert arrange.events("wf") == [("acquired", 0, 1, "a")]


def test_rotate_is_conditioned_on_the_epoch_alone(store, arrange):
    """An external transition wins over whatever holder the row has, but not a moved epoch."""
    arrange.put_row("wf", epoch=3, holder=OBSERVED)

    assert not store.cas_rotate("wf", expected_epoch=2, holder=None, event=_event("rotated", 2, 3))
    assert store.cas_rotate("wf", expected_epoch=3, holder=None, event=_event("rotated", 3, 4))
    assert arrange.read("wf") == ClaimRow("wf", 4, None)
    assert arrange.events("wf") == [("rotated", 3, 4, "a")]


def test_a_missing_row_is_never_granted_renewed_or_released(store, arrange):
    assert not store.cas_grant(
        "wf", expected_epoch=1, expected_holder=None, holder=MINE, event=None
    )
    assert not store.cas_rotate("wf", expected_epoch=1, holder=None, event=None)
    assert not store.cas_renew("wf", held=OBSERVED, expires_at_ms=T0)
    assert not store.cas_release("wf", held=OBSERVED, event=None)
    assert arrange.read("wf") is None


# The fifth column: a session holder (no expiry of its own) against the same holder under
# another session or under none, and a per-claim holder against the same under a session.
SESSION_NEAR_MISSES = {
    "another session": (Holder("b", 3, None, T0, 7), Holder("b", 3, None, T0, 8)),
    "no session where one is": (Holder("b", 3, None, T0, 7), Holder("b", 3, None, T0)),
    "a session where none is": (OBSERVED, Holder("b", 3, T0 + TTL_MS, T0, 7)),
}


@pytest.mark.parametrize(
    ("row", "near_miss"), SESSION_NEAR_MISSES.values(), ids=SESSION_NEAR_MISSES.keys()
)
def test_every_single_row_statement_compares_the_session_epoch(store, arrange, row, near_miss):
    """Grant, renew and release compare the session epoch like the other four columns,
    a null only equal to a null; the holder as it is still matches."""
    arrange.put_row("wf", epoch=3, holder=row)
    event = _event("takeover", 3, 4)

    assert not store.cas_grant(
        "wf", expected_epoch=3, expected_holder=near_miss, holder=MINE, event=event
    )
    assert not store.cas_renew("wf", held=near_miss, expires_at_ms=T0 + 3 * TTL_MS)
    assert not store.cas_release("wf", held=near_miss, event=_event("released", 3, 3))
    assert arrange.read("wf") == ClaimRow("wf", 3, row)
    assert arrange.events("wf") == []

    assert store.cas_grant("wf", expected_epoch=3, expected_holder=row, holder=MINE, event=event)
    assert arrange.read("wf") == ClaimRow("wf", 4, MINE)
