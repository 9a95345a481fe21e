"""Saved queries: create, change (rename, a new query, share or unshare) and delete. Each
obeys claims.services.rules (nothing while read-only) and writes an operator record
(claims.services.audit) in the transaction of its change.

Who may: only the owner changes or deletes a saved query; a shared one is everyone's to
read, not to change. Sharing needs ``claims.share_query``: creating one shared, sharing
one, or changing one that stays shared. Unsharing or deleting one's own needs nothing more,
so an owner can always take back what they shared.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from claims.fleet_clock import fleet_clock
from claims.models import SAVED_QUERY_NAME_MAX_LENGTH, AuditSubject, BulkList, SavedQuery
from claims.protocol.errors import ConflictError, InvalidInputError
from claims.protocol.text import check_identifier
from claims.query import MAX_LENGTH as QUERY_MAX_LENGTH
from claims.query import format_query, parse

from .audit import audit_record
from .rules import refuse_if_read_only

SHARE_QUERY = "claims.share_query"

User = AbstractUser | AnonymousUser


def saved_query_name(value: object) -> str:
    """A name, stripped: 1 to 100 characters of text without control characters."""
    name = check_identifier(
        value.strip() if isinstance(value, str) else value,
        what="a saved query's name",
        max_length=SAVED_QUERY_NAME_MAX_LENGTH,
    )
    if not name:
        raise InvalidInputError("a saved query needs a name")
    return name


def saved_query_text(value: object) -> str:
    """The query in its canonical printed form; a query that cannot be read raises the
    parser's QueryError (what is wrong, and where)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"a query is text; got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError("a saved query needs a query")
    text = format_query(parse(value))
    # The canonical form spaces what a person may have run together; a link to a list must
    # still be a query the list reads.
    if len(text) > QUERY_MAX_LENGTH:
        raise InvalidInputError(
            f"written out in full the query has {len(text)} characters, more than the"
            f" {QUERY_MAX_LENGTH} a list reads; shorten it"
        )
    return text


def saved_query_list(value: object) -> str:
    if value not in BulkList.values:
        raise InvalidInputError(f"list must be one of {', '.join(BulkList.values)}, not {value!r}")
    return str(value)


def saved_query_create(
    user: User,
    *,
    name: object,
    list_name: object,
    query: object,
    shared: bool = False,
    actor: str | None = None,
) -> SavedQuery:
    """Save ``query`` under ``name`` for ``user``. Raises InvalidInputError (a QueryError for
    the query) for bad input, PermissionDenied to share without ``claims.share_query``,
    ConflictError when the user already has a query of that name for that list."""
    refuse_if_read_only()
    saved = SavedQuery(
        name=saved_query_name(name),
        list_name=saved_query_list(list_name),
        query=saved_query_text(query),
        shared=bool(shared),
    )
    _check_sharing(user, saved.shared)
    saved.owner_id = cast(int, user.pk)  # signed in: _check_sharing saw to it
    saved.created_at_ms = saved.updated_at_ms = fleet_clock()()
    with _name_taken_is_a_conflict(saved):
        saved.save()
        _record(saved, "create", actor or user.get_username())
    return saved


def saved_query_update(
    user: User,
    saved_query_id: int,
    *,
    name: object = None,
    query: object = None,
    shared: bool | None = None,
    actor: str | None = None,
) -> SavedQuery:
    """Rename it, give it another query, or share or unshare it (what is None stays;
    with nothing to change, the row as it is).
    Raises SavedQuery.DoesNotExist for a query the user cannot see (another's private
    one), PermissionDenied for another's shared one or sharing without the permission, and
    what saved_query_create raises for bad input or a name taken."""
    refuse_if_read_only()
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = saved_query_name(name)
    if query is not None:
        changes["query"] = saved_query_text(query)
    if shared is not None:
        changes["shared"] = bool(shared)
    with transaction.atomic():
        saved = _owned(user, saved_query_id)
        if not changes:  # nothing asked: nothing written, nothing recorded
            return saved
        _check_sharing(user, changes.get("shared", saved.shared))
        before = {field: getattr(saved, field) for field in changes}
        for field, value in changes.items():
            setattr(saved, field, value)
        saved.updated_at_ms = fleet_clock()()
        with _name_taken_is_a_conflict(saved):
            saved.save(update_fields=[*changes, "updated_at_ms"])
            was = {f: v for f, v in before.items() if v != changes[f]}
            _record(saved, "update", actor or user.get_username(), was=was)
    return saved


def saved_query_delete(user: User, saved_query_id: int, *, actor: str | None = None) -> SavedQuery:
    """Delete one of the user's own saved queries, shared or not; the operator record
    keeps what it was, and so does the row returned (its pk gone)."""
    refuse_if_read_only()
    with transaction.atomic():
        saved = _owned(user, saved_query_id)
        _record(saved, "delete", actor or user.get_username())
        saved.delete()
    return saved


def _owned(user: User, saved_query_id: int) -> SavedQuery:
    """The row, locked, when the user owns it. Another's private query does not exist for
    them (404, as it would when read); another's shared one is seen but not theirs (403)."""
    saved = SavedQuery.objects.select_for_update().filter(pk=saved_query_id).first()
    if saved is None or (saved.owner_id != user.pk and not saved.shared):
        raise SavedQuery.DoesNotExist(f"no saved query #{saved_query_id}")
    if saved.owner_id != user.pk:
        raise PermissionDenied("only its owner may change or delete a saved query")
    return saved


def _check_sharing(user: User, shared: bool) -> None:
    if not user.is_authenticated:
        raise PermissionDenied("saved queries belong to a signed-in user")
    if shared and not user.has_perm(SHARE_QUERY):
        raise PermissionDenied(f"sharing a saved query with everyone needs {SHARE_QUERY}")


@contextmanager
def _name_taken_is_a_conflict(saved: SavedQuery) -> Iterator[None]:
    """The unique (owner, list, name) refusal as a ConflictError. Caught from the database
    rather than checked first, so two saves racing for one name get the same answer; the
    savepoint lets the caller's transaction carry on after it."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        raise ConflictError(
            f"you already have a saved query named {saved.name!r} for the {saved.list_name} list"
        ) from error


def _record(saved: SavedQuery, action: str, actor: str, **extra: Any) -> None:
    detail: dict[str, Any] = {
        "name": saved.name,
        "list": saved.list_name,
        "query": saved.query,
        "shared": saved.shared,
        **extra,
    }
    audit_record(AuditSubject.SAVED_QUERY, saved.pk, action, actor=actor[:150], detail=detail)
