"""The claims list sorted by expiry (``expires_at``, docs/design.md §7): by each claim's
effective expiry, its own ``holder_expires_at_ms`` when set, else the expiry of the session
its holder names when that session row is there and valid at that epoch (the engine-lease
mode, docs/design.md §12). Ties go by workflow id in the same direction; rows with no
effective expiry (ownerless rows, holders of a missing, garbled or moved-on session) come
last in both directions, in workflow-id order.

A session holder stores no expiry, so no index holds the effective one, and sorting every
claim by a CASE would sort the whole table per page. Sessions are few (one row per engine)
while claims are many, so a page is gathered from short reads instead:

1. the rows with an expiry of their own, along the expiry index (as every nullable sort);
2. the session groups, the pairs the claims name grouped by their session's expiry, walked
   in expiry order from the cursor: each group's claims in workflow-id order, until the
   page is full or the groups fall past the page's last own row;
3. (1) and (2) merged by (expiry, workflow id), cut to the page;
4. then the rows without one, as every nullable sort, leaving out the holders of a session
   with an expiry (they were read in (2)).

When no claim names a session (the workflow-lease mode) the page is read exactly as the
other nullable sorts read theirs, in the same queries: whether any claim names a session
rides along in the first of them as one probe of the sessions' partial index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.db.models import Exists, QuerySet

from claims.models import WorkflowClaim

from .session_holders import SessionPair, holders_of, session_expiries
from .sorting import ClaimSort, Cursor, after, after_in_nulls

COLUMN = "holder_expires_at_ms"
# A row's effective expiry (None: it has none) and its values.
Keyed = tuple[int | None, tuple[Any, ...]]
_NAMES_SESSIONS = "names_sessions"


def _read(
    query: QuerySet[Any], columns: Sequence[str], n: int, key_at: int | None
) -> tuple[list[Keyed], bool | None]:
    """Up to ``n`` rows of ``query`` keyed by the value at ``key_at`` (None: no key), and
    whether any claim names a session (None when no row came back to carry the answer)."""
    probe = Exists(WorkflowClaim.objects.filter(holder_session_epoch__isnull=False))
    flagged = query.annotate(**{_NAMES_SESSIONS: probe})
    read = list(flagged.values_list(*columns, _NAMES_SESSIONS)[:n])
    named = bool(read[0][-1]) if read else None
    return [(None if key_at is None else v[key_at], tuple(v[:-1])) for v in read], named


def _position(keyed: Keyed) -> tuple[int, str]:
    """Where a row with an expiry stands in the expiry sort: its expiry, then its id."""
    return cast(int, keyed[0]), keyed[1][0]


def _comes_after(sort: ClaimSort, a: int, b: int) -> bool:
    """Whether expiry ``a`` comes after expiry ``b`` in ``sort``."""
    return a < b if sort.descending else a > b


def _session_rows(
    rows: QuerySet[Any],
    sort: ClaimSort,
    cursor: Cursor | None,
    n: int,
    columns: Sequence[str],
    bound: int | None,
    expiries: dict[SessionPair, int],
) -> list[Keyed]:
    """Up to ``n`` session holders after ``cursor`` in ``sort``, group by group: one read per
    group whose expiry falls between the cursor and ``bound`` (the last own row the page can
    hold; None: no such bound), none for the groups before or past them."""
    groups: dict[int, list[SessionPair]] = {}
    for pair, expiry in expiries.items():
        groups.setdefault(expiry, []).append(pair)
    found: list[Keyed] = []
    at = None if cursor is None else cursor.value
    for expiry in sorted(groups, reverse=sort.descending):
        if isinstance(at, int) and _comes_after(sort, at, expiry):
            continue  # the whole group is before the cursor
        if len(found) >= n or (bound is not None and _comes_after(sort, expiry, bound)):
            break  # every later group comes after the rows already found
        part = rows.filter(holders_of(groups[expiry]), **{f"{COLUMN}__isnull": True})
        if cursor is not None and expiry == at:
            part = part.filter(after(sort, "workflow_id", cursor))
        ordered = part.order_by(*sort.order_by("workflow_id"))
        found += [(expiry, tuple(v)) for v in ordered.values_list(*columns)[: n - len(found)]]
    return found


def expiry_values(
    rows: QuerySet[Any], sort: ClaimSort, cursor: Cursor | None, n: int, columns: Sequence[str]
) -> list[Keyed]:
    """Up to ``n`` rows after ``cursor`` in the expiry sort ``sort``, each with its effective
    expiry (the cursor's value). ``columns`` are the values read, ``holder_expires_at_ms``
    among them. The reads are the module's (1) to (4): with no claim naming a session, one
    or two queries as for any nullable sort; else also the session pairs and their sessions
    (session_holders.session_expiries), one read per session group in the page's range, and
    the rows without an expiry once more (the first read of them did not know to leave
    out the session holders)."""
    key_at = list(columns).index(COLUMN)
    in_nulls = cursor is not None and cursor.value is None
    nulls = rows.filter(after_in_nulls(sort, cursor), **{f"{COLUMN}__isnull": True})
    nulls = nulls.order_by(*sort.order_by("workflow_id"))
    own: list[Keyed] = []
    named: bool | None = None
    if not in_nulls:
        having = rows.filter(**{f"{COLUMN}__isnull": False})
        if cursor is not None:
            having = having.filter(after(sort, COLUMN, cursor))
        own, named = _read(having.order_by(*sort.order_by(COLUMN)), columns, n, key_at)
    if named is None:
        # No own row came back to say whether any claim names a session: the rows without
        # an expiry say it, read as they would be next anyway.
        missing, named = _read(nulls, columns, n, None)
        if not named:
            return missing  # none names a session (or there are no rows): as always
    elif not named:
        if len(own) < n:
            own += [(None, tuple(v)) for v in nulls.values_list(*columns)[: n - len(own)]]
        return own
    # Some claim names a session: the session groups between the own rows, then the rest.
    expiries = session_expiries()
    found = own
    if not in_nulls and expiries:
        bound = own[n - 1][0] if len(own) >= n else None
        held = _session_rows(rows, sort, cursor, n, columns, bound, expiries)
        merged = sorted(own + held, key=_position, reverse=sort.descending)
        found = merged[:n]
    if len(found) < n:
        rest = nulls.exclude(holders_of(list(expiries))) if expiries else nulls
        found += [(None, tuple(v)) for v in rest.values_list(*columns)[: n - len(found)]]
    return found
