"""The engines table's rows, built here rather than in the template: 50 engines make 600
cells, which take the template language about four times as long, on a fragment every open
engines page polls every few seconds."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from .weftboard import duration, engine_link, when

if TYPE_CHECKING:
    from claims.models import Engine
    from claims.selectors.engines.listing import EngineRow, PassView

register = template.Library()

LATE = ' <span class="flag">late</span>'
HOSTNAME_CHARS = 20


@register.simple_tag
def engine_row(row: EngineRow, now_ms: int, claims_url: str) -> SafeString:
    """One <tr>, its cells in the order of the table's headings. Text an engine reported
    (hostname, status, id) is escaped; everything else is a number or fixed markup."""
    engine = row.engine
    status = escape(row.display_status)
    hostname = escape(engine.hostname)
    short_hostname = escape(Truncator(engine.hostname).chars(HOSTNAME_CHARS))
    holding_url = f"{escape(claims_url)}?engine={quote(engine.engine_id)}"
    counts = row.counters
    cells = [
        _stacked(f"{engine_link(engine.engine_id)}{_name(engine)}"),
        _stacked(
            f'<span class="badge badge--{status}">{status}</span>{_draining(row)}'
            f"{_takeover(row, now_ms)}"
        ),
        f'<td class="stack" title="{hostname} pid {engine.pid}">{short_hostname}'
        f"<small>pid {engine.pid}</small></td>",
        _stacked(
            f"{when(engine.heartbeat_at_ms, now_ms)}{LATE if row.heartbeat_late else ''}"
            f"{_session(row, now_ms)}"
        ),
        f'<td class="num"><a href="{holding_url}">{row.holding}</a></td>',
        f'<td class="num stack">{_skew(engine, over=row.skew_over)}</td>',
        *(f'<td class="stack">{_last_pass(p, now_ms)}</td>' for p in row.passes),
        f'<td class="num">{counts["acquired"]} / {counts["takeover"]}</td>',
        f'<td class="num">{counts["lost_race"]} / {counts["deposed"]} / '
        f"{counts['backoff_skipped']}</td>",
        f'<td class="num">{counts["renewal_failures"]}</td>',
    ]
    return mark_safe(f"<tr>{''.join(cells)}</tr>")


def _stacked(html: str) -> str:
    """A cell whose second line, if any, is a <small> under the first."""
    return f'<td class="stack">{html}</td>' if "<small>" in html else f"<td>{html}</td>"


def _name(engine: Engine) -> str:
    """The worker's name under the id; nothing for an engine that registered without one."""
    return f"<small>{escape(engine.name)}</small>" if engine.name else ""


def _draining(row: EngineRow) -> str:
    """Beside a live engine's badge while an operator's drain is in force."""
    if not (row.live and row.engine.draining):
        return ""
    return f' <span class="badge badge--draining">draining</span><small>{row.holding} left</small>'


def _takeover(row: EngineRow, now_ms: int) -> str:
    """Under a silent engine's badge: what it still holds, and when that is up for takeover."""
    if not row.silent:
        return ""
    if row.takeover_at_ms is None:
        return "<small>holds no claim</small>"
    if row.takeover_at_ms <= now_ms:
        return "<small>its claims are up for takeover</small>"
    return f"<small>takeover {when(row.takeover_at_ms, now_ms)}</small>"


def _session(row: EngineRow, now_ms: int) -> str:
    """Under the heartbeat in the engine-lease mode: the session's epoch and its expiry,
    or that it is closed; nothing in the workflow-lease mode."""
    session = row.session
    if session is None:
        return ""
    if session.closed_at_ms is not None:
        return f"<small>session {session.epoch} closed</small>"
    return f"<small>session {session.epoch} · expires {when(session.expires_at_ms, now_ms)}</small>"


def _skew(engine: Engine, *, over: bool) -> str:
    if engine.clock_skew_ms is None:
        return '<span class="muted">—</span>'
    error = "?" if engine.clock_error_ms is None else engine.clock_error_ms
    flag = ' class="flag"' if over else ""
    return f"<span{flag}>{engine.clock_skew_ms} ms</span><small>± {error} ms</small>"


def _last_pass(p: PassView, now_ms: int) -> str:
    """When the pass last finished and how long it took; a dash if it has not run yet."""
    late = LATE if p.late else ""
    if not p.at_ms:
        return f'<span class="muted">—</span>{late}'
    return f"{when(p.at_ms, now_ms)}{late}<small>{duration(p.duration_ms)}</small>"
