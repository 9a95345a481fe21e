"""A listing under a query runs within WEFTBOARD_QUERY_TIMEOUT_MS (all its statements
together): a query no index narrows, which would read most rows, is stopped and refused
with what to do instead, never left to run (the read limit of a GET is its last bound)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS

from claims.query import Query, format_query
from claims.selectors.errors import QueryTooSlowError
from claims.store.time_limit import refused_past

logger = logging.getLogger("weftboard.reads")
Read = TypeVar("Read", bound=Callable[..., Any])


def query_timeout_ms() -> int:
    return int(settings.WEFTBOARD_QUERY_TIMEOUT_MS)


@contextmanager
def query_time_limit(query: Query | None, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Every statement the block runs shares the query budget; past it, QueryTooSlowError.
    Without a query (or with the budget off) nothing is added."""
    ms = query_timeout_ms() if query is not None else 0

    def refusal() -> QueryTooSlowError:
        text = "" if query is None else format_query(query)
        logger.warning("query stopped after %d ms (WEFTBOARD_QUERY_TIMEOUT_MS): %r", ms, text[:200])
        return QueryTooSlowError(
            f"the query took longer than {ms:,} ms, the limit on one query "
            "(WEFTBOARD_QUERY_TIMEOUT_MS), and was stopped: no index narrows it enough; "
            "add a term an index serves (state, engine, status, type, id STARTS_WITH) or a "
            "shorter time range"
        )

    with refused_past(ms, refusal, using=using):
        yield


def query_bounded(read: Read) -> Read:
    """``read`` (keyword arguments only) run under the query budget when given a ``query``."""

    @functools.wraps(read)
    def bounded(**kwargs: Any) -> Any:
        with query_time_limit(kwargs.get("query")):
            return read(**kwargs)

    return cast(Read, bounded)
