"""Saved queries: who may save, change, share and delete them, what a bad name or query
leaves behind (nothing), and the operator record each change writes."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import PermissionDenied

from claims.models import AuditEntry, AuditSubject, SavedQuery
from claims.protocol.errors import ConflictError, InvalidInputError
from claims.query import QueryError
from claims.services.errors import ReadOnlyError
from claims.services.saved_queries import (
    saved_query_create,
    saved_query_delete,
    saved_query_update,
)
from tests import factories

pytestmark = pytest.mark.django_db

QUERY = 'state = "expired" and engine = "e-1"'
CANONICAL = 'state = "expired" AND engine = "e-1"'


@pytest.fixture
def alice() -> Any:
    return factories.make_user("alice")


@pytest.fixture
def bob() -> Any:
    return factories.make_user("bob")


@pytest.fixture
def sharer() -> Any:
    return factories.make_user("sharer", ["share_query"])


def save(user: Any, name: str = "stuck", **fields: Any) -> SavedQuery:
    return saved_query_create(
        user, name=name, list_name=fields.pop("list_name", "claims"), query=QUERY, **fields
    )


def records() -> list[tuple[str, str | None, dict[str, Any]]]:
    return [(e.action, e.actor, e.detail) for e in AuditEntry.objects.order_by("id")]


def test_a_saved_query_is_kept_in_canonical_form_with_its_record(alice):
    saved = save(alice, name="  stuck  ")

    row = SavedQuery.objects.get()
    assert (row.name, row.list_name, row.query, row.owner, row.shared) == (
        "stuck",
        "claims",
        CANONICAL,
        alice,
        False,
    )
    assert row.created_at_ms == row.updated_at_ms > 0
    entry = AuditEntry.objects.get()
    assert (entry.subject, entry.subject_id) == (AuditSubject.SAVED_QUERY, saved.pk)
    assert records() == [
        (
            "create",
            "alice",
            {"name": "stuck", "list": "claims", "query": CANONICAL, "shared": False},
        )
    ]


@pytest.mark.parametrize(
    ("fields", "error", "says"),
    [
        ({"name": ""}, InvalidInputError, "needs a name"),
        ({"name": "   "}, InvalidInputError, "needs a name"),
        ({"name": "x" * 101}, InvalidInputError, "at most 100"),
        ({"name": "bad\x00name"}, InvalidInputError, "control characters"),
        ({"name": "tab\tname"}, InvalidInputError, "control characters"),
        ({"query": 'state = "expired" AND'}, QueryError, "position"),
        ({"query": "nosuchfield = 1"}, QueryError, "nosuchfield"),
        ({"query": "  "}, InvalidInputError, "needs a query"),
        ({"list_name": "engines"}, InvalidInputError, "list must be one of"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(alice, fields, error, says):
    given = {"name": "stuck", "list_name": "claims", "query": QUERY, **fields}

    with pytest.raises(error, match=says):
        saved_query_create(alice, **given)

    assert not SavedQuery.objects.exists()
    assert not AuditEntry.objects.exists()


def test_a_name_is_unique_per_owner_and_list(alice, bob):
    save(alice)

    with pytest.raises(ConflictError, match="already have a saved query named 'stuck'"):
        save(alice)
    save(alice, list_name="workflows")  # another list
    save(bob)  # another owner

    assert SavedQuery.objects.count() == 3
    assert [a for a, _, _ in records()] == ["create"] * 3


def test_sharing_needs_the_permission(alice, sharer):
    with pytest.raises(PermissionDenied, match=r"claims\.share_query"):
        save(alice, shared=True)
    assert not SavedQuery.objects.exists()

    saved = save(sharer, shared=True)
    assert saved.shared


def test_the_owner_renames_requeries_and_the_record_says_what_was(alice):
    saved = save(alice)

    changed = saved_query_update(alice, saved.pk, name="expired", query='engine = "e-2"')

    row = SavedQuery.objects.get()
    assert (row.name, row.query) == ("expired", 'engine = "e-2"')
    assert row.updated_at_ms >= changed.created_at_ms
    assert records()[-1] == (
        "update",
        "alice",
        {
            "name": "expired",
            "list": "claims",
            "query": 'engine = "e-2"',
            "shared": False,
            "was": {"name": "stuck", "query": CANONICAL},
        },
    )


def test_a_rename_onto_a_taken_name_is_a_conflict_and_changes_nothing(alice):
    save(alice, name="one")
    two = save(alice, name="two")

    with pytest.raises(ConflictError):
        saved_query_update(alice, two.pk, name="one")

    assert sorted(SavedQuery.objects.values_list("name", flat=True)) == ["one", "two"]
    assert [a for a, _, _ in records()] == ["create", "create"]


def test_a_bad_update_changes_nothing(alice):
    saved = save(alice)

    with pytest.raises(QueryError):
        saved_query_update(alice, saved.pk, name="renamed", query="state =")

    assert SavedQuery.objects.get().name == "stuck"
    assert len(records()) == 1


def test_another_users_private_query_does_not_exist_for_them(alice, bob):
    saved = save(alice)

    with pytest.raises(SavedQuery.DoesNotExist):
        saved_query_update(bob, saved.pk, name="mine now")
    with pytest.raises(SavedQuery.DoesNotExist):
        saved_query_delete(bob, saved.pk)

    assert SavedQuery.objects.get().name == "stuck"
    assert len(records()) == 1


def test_a_shared_query_is_read_by_all_but_changed_by_its_owner_only(sharer, bob):
    other_sharer = factories.make_user("other-sharer", ["share_query"])
    saved = save(sharer, shared=True)

    for user in (bob, other_sharer):
        with pytest.raises(PermissionDenied, match="only its owner"):
            saved_query_update(user, saved.pk, name="taken over")
        with pytest.raises(PermissionDenied, match="only its owner"):
            saved_query_delete(user, saved.pk)

    assert SavedQuery.objects.get().name == "stuck"


def test_an_owner_without_the_permission_may_unshare_or_delete_but_not_edit_a_shared_one(
    sharer,
):
    saved = save(sharer, shared=True)
    sharer.user_permissions.clear()
    owner = type(sharer).objects.get(pk=sharer.pk)  # a fresh permission cache

    with pytest.raises(PermissionDenied, match="share_query"):
        saved_query_update(owner, saved.pk, name="still shared")
    saved_query_update(owner, saved.pk, shared=False, name="private now")
    assert SavedQuery.objects.get().shared is False
    with pytest.raises(PermissionDenied, match="share_query"):
        saved_query_update(owner, saved.pk, shared=True)

    saved_query_delete(owner, saved.pk)
    assert not SavedQuery.objects.exists()
    action, actor, detail = records()[-1]
    assert (action, actor, detail["name"], detail["query"]) == (
        "delete",
        "sharer",
        "private now",
        CANONICAL,
    )


def test_the_api_names_its_actor(alice):
    save(alice, actor="alice (token wb_abc)")

    assert records()[0][1] == "alice (token wb_abc)"


def test_read_only_refuses_every_change(alice, settings):
    saved = save(alice)
    settings.WEFTBOARD_READ_ONLY = "maintenance"

    with pytest.raises(ReadOnlyError):
        save(alice, name="another")
    with pytest.raises(ReadOnlyError):
        saved_query_update(alice, saved.pk, name="renamed")
    with pytest.raises(ReadOnlyError):
        saved_query_delete(alice, saved.pk)

    assert list(SavedQuery.objects.values_list("name", flat=True)) == ["stuck"]
    assert len(records()) == 1


def test_deleting_a_user_deletes_their_saved_queries_but_not_the_records(alice):
    save(alice)

    alice.delete()

    assert not SavedQuery.objects.exists()
    assert [a for a, _, _ in records()] == ["create"]


def test_a_query_too_long_once_written_out_is_refused(alice):
    # 1,806 characters as typed; with a space after each comma, 2,106.
    dense = "id IN(" + ",".join(f'"{n:03d}"' for n in range(300)) + ")"

    with pytest.raises(InvalidInputError, match="2106 characters, more than the 2000"):
        saved_query_create(alice, name="dense", list_name="claims", query=dense)

    assert not SavedQuery.objects.exists()


def test_an_update_with_nothing_to_change_writes_nothing(alice):
    saved = save(alice)

    assert saved_query_update(alice, saved.pk) == saved

    assert SavedQuery.objects.get().updated_at_ms == saved.updated_at_ms
    assert len(records()) == 1
