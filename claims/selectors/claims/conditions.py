"""The claim listing's filters as SQL: the scopes (attention, stranded, all) and each derived
state, judged as claims.protocol.states.derive_claim_state judges one row, so a filter
agrees with the state a page shows. The listing and the query language both filter by
them."""

from __future__ import annotations

from typing import Literal, cast

from django.db.models import Exists, OuterRef, Q

from claims.models import Workflow, WorkflowStatus
from claims.models.claims import HOLDER_GARBLED, HOLDER_INVALID, HOLDER_PRESENT
from claims.protocol.errors import InvalidInputError
from claims.protocol.states import CLAIM_STATES, ClaimState
from claims.protocol.timing import ClaimTiming

from .session_holders import JudgedSessions, holders_of, judge_sessions

# What the list shows besides one derived state: "attention" is every held row (live, in
# grace, expired, invalid) and the stranded ones (no holder, workflow running), which
# leaves out the ownerless rows of finished workflows; "all" is every row ever claimed.
ClaimScope = Literal["attention", "stranded", "all"]
CLAIM_SCOPES: tuple[ClaimScope, ...] = ("attention", "stranded", "all")
CLAIM_FILTERS: tuple[str, ...] = (*CLAIM_SCOPES, *CLAIM_STATES)


def state_condition(
    state: ClaimState, now_ms: int, timing: ClaimTiming, sessions: JudgedSessions
) -> Q:
    """The SQL form of derive_claim_state, for filtering before the page is cut. A
    session holder's claim is in its session's state: ``sessions`` (judge_sessions) lists
    the sessions in each state, and the condition names their holders by session."""
    if state == "ownerless":
        return ~HOLDER_PRESENT
    by_session = holders_of(sessions.get(state, ()))
    not_live = [pair for judged, pairs in sessions.items() if judged != "live" for pair in pairs]
    if state == "live" and len(not_live) < len(sessions.get("live", ())):
        # Most sessions are live: name the few that are not (a 46-way OR on every row cost
        # 35 ms a page at a million claims). A session first named after the pairs were
        # read is live, as a new session is.
        by_session = Q(holder_session_epoch__isnull=False) & ~holders_of(not_live)
    if state == "invalid":
        # The garbled rows' predicate as their partial index has it, so the planner reads
        # them from it; holders of a missing or garbled session (rare) are named by session.
        return HOLDER_GARBLED | (HOLDER_PRESENT & by_session)
    valid = HOLDER_PRESENT & ~HOLDER_INVALID
    own = Q(holder_session_epoch__isnull=True)
    takeover_from = now_ms - timing.grace_ms
    if state == "live":
        own_state = Q(holder_expires_at_ms__gte=now_ms)
    elif state == "in-grace":
        own_state = Q(holder_expires_at_ms__lt=now_ms, holder_expires_at_ms__gte=takeover_from)
    else:
        own_state = Q(holder_expires_at_ms__lt=takeover_from)
    return valid & ((own & own_state) | by_session)


def _running() -> Q:
    # A probe of the running workflows' partial index per row. Not IN (subquery): once the
    # running ids outgrow work_mem PostgreSQL stops hashing them and rescans all of them
    # per row (20 s for the first page at 1,000,000 running workflows).
    return Q(
        Exists(Workflow.objects.filter(pk=OuterRef("workflow_id"), status=WorkflowStatus.RUNNING))
    )


def filter_condition(
    name: str, now_ms: int, timing: ClaimTiming, sessions: JudgedSessions | None = None
) -> Q:
    """A scope (attention, stranded, all) or one derived state, as SQL; a state reads the
    sessions the claims name unless the caller has judged them (``sessions``)."""
    if name == "all":
        return Q()
    if name == "attention":
        return HOLDER_PRESENT | _running()
    if name == "stranded":
        return ~HOLDER_PRESENT & _running()
    if name not in CLAIM_STATES:
        raise InvalidInputError(
            f"state must be one of {', '.join(CLAIM_FILTERS)}; got {name[:40]!r}"
        )
    if sessions is None:
        sessions = judge_sessions(now_ms, timing)
    return state_condition(cast(ClaimState, name), now_ms, timing, sessions)
