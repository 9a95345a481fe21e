"""The claims list's substring search (``q``, docs/design.md §7), and the bounds that keep
one search from reading every id ever claimed.

On PostgreSQL a fragment of three characters or more is looked up in the insert-only id
table (claims.models.id_search) through its trigram index. The index narrows a fragment
by the three-character pieces in it, and every id it cannot rule out is then checked
against the whole fragment: a fragment whose pieces every id holds (``order-`` 42 times)
reads every id. Two bounds:

- A long fragment made of few distinct pieces (as pg_trgm cuts it: letters and digits,
  case folded) is refused before anything is read (``check_search``): it narrows no more
  than its distinct part would, and costs the most to check against each id.
- Every search runs under one time budget for all of its statements,
  WEFTBOARD_SEARCH_TIMEOUT_MS (250 ms unless set; claims.store.time_limit): a search past
  it is stopped and refused as too broad, on both databases.

Either refusal is a SearchTooBroadError (InvalidInputError): 400 on the page, 422 in
the API.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Value
from django.db.models.functions import StrIndex

from claims.models import ClaimIdSearch
from claims.models.claims import WorkflowClaimQuerySet
from claims.selectors.errors import SearchTooBroadError
from claims.store.time_limit import refused_past

# A trigram index finds a substring of at least three characters.
TRIGRAM = 3
# Past this many ids a fragment is common: a scan of the claim rows finds a page sooner.
SEARCH_CANDIDATES = 1_000
# A fragment this long is refused when it holds fewer distinct index pieces than a quarter
# of its length (a part repeated, like "order-" 42 times: six pieces in 252 characters).
# A fragment of distinct parts has about one piece per character, and a digit run such as
# "0000000000000001" still has five pieces in sixteen characters; shorter fragments are
# left to the time budget.
LOW_INFORMATION_LENGTH = 16
LOW_INFORMATION_RATIO = 4
# A run of letters and digits: what pg_trgm cuts a text into before taking its pieces.
_WORDS = re.compile(r"[^\W_]+")

logger = logging.getLogger("weftboard.reads")
Read = TypeVar("Read", bound=Callable[..., Any])


def search_timeout_ms() -> int:
    return int(settings.WEFTBOARD_SEARCH_TIMEOUT_MS)


def index_pieces(fragment: str) -> set[str]:
    """The three-character pieces pg_trgm keys a fragment by: each run of letters and
    digits, lower-cased, with two spaces before it and one after; punctuation gives none."""
    pieces: set[str] = set()
    for word in _WORDS.findall(fragment.lower()):
        padded = f"  {word} "
        pieces.update(padded[i : i + TRIGRAM] for i in range(len(padded) - TRIGRAM + 1))
    return pieces


def check_search(search: str | None) -> None:
    """Refuse a long fragment of few distinct pieces before it reads anything."""
    if not search or len(search) < LOW_INFORMATION_LENGTH:
        return
    pieces = index_pieces(search)
    if len(pieces) * LOW_INFORMATION_RATIO < len(search):
        raise SearchTooBroadError(
            f"q is {len(search)} characters long but holds only {len(pieces)} different "
            "three-character pieces the id index can look up (a part repeated, or mostly "
            "punctuation), so the index cannot narrow it and it would read every id; search "
            "for a shorter part of the id that does not repeat"
        )


@contextmanager
def search_time_limit(search: str | None, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Every statement the block runs shares the search budget; a search past it is a
    SearchTooBroadError. Without ``search`` (or with the budget off) nothing is added."""
    ms = search_timeout_ms() if search else 0

    def refusal() -> SearchTooBroadError:
        logger.warning(
            "search stopped after %d ms (WEFTBOARD_SEARCH_TIMEOUT_MS): q of %d characters",
            ms,
            len(search or ""),
        )
        return SearchTooBroadError(
            f"the search for {(search or '')[:40]!r} took longer than {ms:,} ms, the limit on "
            "one search (WEFTBOARD_SEARCH_TIMEOUT_MS), and was stopped: it matches too little "
            "for the index to narrow; search for a longer or more distinctive part of the "
            "id, or filter by state or engine"
        )

    with refused_past(ms, refusal, using=using):
        yield


def search_bounded(read: Read) -> Read:
    """``read`` (keyword arguments only) with its ``search`` checked first, then run under
    the search budget."""

    @functools.wraps(read)
    def bounded(**kwargs: Any) -> Any:
        search = kwargs.get("search")
        check_search(search)
        with search_time_limit(search):
            return read(**kwargs)

    return cast(Read, bounded)


def with_substring(rows: WorkflowClaimQuerySet, search: str) -> WorkflowClaimQuerySet:
    """The rows whose workflow id contains ``search``, case-sensitive as ids are. On
    PostgreSQL, for three characters or more, the ids are first found through the trigram
    index over the insert-only id table (claims.models.id_search), up to
    SEARCH_CANDIDATES of them, and the claim rows read by primary key: a literal list, so
    no join plan rests on an estimate of how many claim rows a scope holds. A fragment
    that matches more ids, and SQLite, use strpos / instr over the claim rows (on
    PostgreSQL a third of the cost of a LIKE over the same scan): the matches are then
    common, and the page stops reading once it has its rows."""
    if connections[rows.db].vendor == "postgresql" and len(search) >= TRIGRAM:
        matching = ClaimIdSearch.objects.using(rows.db).filter(workflow_id__contains=search)
        ids = list(matching.values_list("workflow_id", flat=True)[: SEARCH_CANDIDATES + 1])
        if len(ids) <= SEARCH_CANDIDATES:
            return rows.filter(workflow_id__in=ids)
    return rows.alias(found_at=StrIndex("workflow_id", Value(search))).filter(found_at__gt=0)
