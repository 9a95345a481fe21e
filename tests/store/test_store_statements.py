"""What the ORM store sends for one claim: on PostgreSQL a transition and its event are one
prepared statement; inside a caller's transaction they join it, on either database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from claims.models import ClaimEvent, WorkflowClaim
from claims.protocol import ClaimRow, Holder
from claims.protocol.records import ClaimEventRecord
from claims.store import OrmClaimStore

T0 = 1_000_000
HELD = Holder("a", 2, T0 + 30_000, T0)
_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def _event(kind: str, before: int | None, after: int) -> ClaimEventRecord:
    return ClaimEventRecord("wf", kind, before, after, "a", T0)  # type: ignore[arg-type]


def _insert(store: OrmClaimStore) -> bool:
    return store.cas_insert("wf", holder=Holder("a", 1, T0, T0), event=_event("acquired", None, 1))


def _grant(store: OrmClaimStore) -> bool:
    return store.cas_grant(
        "wf", expected_epoch=1, expected_holder=None, holder=HELD, event=_event("acquired", 1, 2)
    )


def _rotate(store: OrmClaimStore) -> bool:
    return store.cas_rotate("wf", expected_epoch=2, holder=None, event=_event("rotated", 2, 3))


def _release(store: OrmClaimStore) -> bool:
    return store.cas_release("wf", held=HELD, event=_event("released", 2, 2))


# Each transition with the row it applies to (None: no row yet).
TRANSITIONS: dict[str, tuple[Callable[[OrmClaimStore], bool], tuple[int, Holder | None] | None]] = {
    "insert": (_insert, None),
    "grant": (_grant, (1, None)),
    "rotate": (_rotate, (2, HELD)),
    "release": (_release, (2, HELD)),
}


@pytest.fixture
def postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"needs PostgreSQL (DATABASE_URL=postgres://...), not {connection.vendor}")


def _put(row: tuple[int, Holder | None] | None) -> None:
    if row is None:
        return
    epoch, holder = row
    values = holder or Holder(None, None, None, None)
    WorkflowClaim.objects.create(
        workflow_id="wf",
        epoch=epoch,
        holder_engine_id=values.engine_id,
        holder_epoch=values.epoch,
        holder_expires_at_ms=values.expires_at_ms,
        holder_claimed_at_ms=values.claimed_at_ms,
    )


class CallerGaveUp(Exception):
    pass


def _give_up_after(call: Callable[[], bool]) -> None:
    """The caller's transaction: the store's call applies, then the caller fails."""
    with transaction.atomic():
        assert call()
        raise CallerGaveUp


def _data_statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(_CONTROL)]


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", TRANSITIONS)
def test_on_postgresql_a_transition_and_its_event_are_one_statement(postgres, name):
    """In autocommit: no BEGIN/COMMIT around it, and the event row is there after."""
    apply, row = TRANSITIONS[name]
    _put(row)

    with CaptureQueriesContext(connection) as queries:
        assert apply(OrmClaimStore())

    assert len(queries.captured_queries) == 1
    # Logged with its values, as Django logs any other statement.
    assert "'wf'" in queries.captured_queries[0]["sql"]
    assert ClaimEvent.objects.filter(workflow_id="wf").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_renewal_is_one_statement():
    _put((2, HELD))

    with CaptureQueriesContext(connection) as queries:
        assert OrmClaimStore().cas_renew("wf", held=HELD, expires_at_ms=T0 + 60_000)

    assert len(queries.captured_queries) == 1


@pytest.mark.django_db
@pytest.mark.parametrize("name", TRANSITIONS)
def test_a_transition_inside_the_callers_transaction_rolls_back_with_it(name):
    apply, row = TRANSITIONS[name]
    _put(row)
    store = OrmClaimStore()
    before = store.read_claim("wf")

    with pytest.raises(CallerGaveUp):
        _give_up_after(lambda: apply(store))

    assert store.read_claim("wf") == before
    assert not ClaimEvent.objects.exists()


@pytest.mark.django_db
def test_a_renewal_inside_the_callers_transaction_rolls_back_with_it():
    _put((2, HELD))
    store = OrmClaimStore()

    with pytest.raises(CallerGaveUp):
        _give_up_after(lambda: store.cas_renew("wf", held=HELD, expires_at_ms=T0 + 60_000))

    assert store.read_claim("wf") == ClaimRow("wf", 2, HELD)


@pytest.mark.django_db
def test_a_transition_inside_the_callers_transaction_is_one_statement_there(postgres):
    """Joined to the caller's transaction (with a savepoint around it), not a second one."""
    _put((1, None))

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert _grant(OrmClaimStore())

    assert len(_data_statements(queries)) == 1
    assert not any(q["sql"] == "BEGIN" for q in queries.captured_queries)


@pytest.mark.django_db
def test_on_postgresql_the_claim_statements_are_prepared_on_the_server(postgres):
    store = OrmClaimStore()
    _insert(store)
    store.read_claim("wf")
    store.cas_renew("wf", held=Holder("a", 1, T0, T0), expires_at_ms=T0 + 1)

    prepared = _prepared_statements()

    assert any(s.startswith("WITH applied AS (INSERT INTO") for s in prepared)
    assert any(s.startswith("SELECT") and "$1" in s for s in prepared)
    assert any(s.startswith("UPDATE") and "holder_expires_at_ms" in s for s in prepared)


@pytest.fixture
def no_prepared_statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A database configured the way a deployment behind a transaction pooler would be."""
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "prepare_threshold", None)
    connection.close()
    yield
    # The next test connects with the usual options again.
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_database_configured_without_prepared_statements_gets_none(
    postgres, no_prepared_statements: Any
):
    store = OrmClaimStore()
    assert _insert(store)
    assert store.read_claim("wf") is not None
    assert store.cas_renew("wf", held=Holder("a", 1, T0, T0), expires_at_ms=T0 + 1)

    assert _prepared_statements() == []


@pytest.mark.django_db
def test_each_statement_counts_in_the_database_metrics():
    """django-prometheus counts the store's statements like any other query."""
    from prometheus_client import REGISTRY

    labels = {"alias": connection.alias, "vendor": connection.vendor}
    store = OrmClaimStore()
    _insert(store)
    before = REGISTRY.get_sample_value("django_db_execute_total", labels) or 0.0

    store.read_claim("wf")
    store.cas_renew("wf", held=Holder("a", 1, T0, T0), expires_at_ms=T0 + 1)

    assert REGISTRY.get_sample_value("django_db_execute_total", labels) == before + 2
