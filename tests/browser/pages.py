"""The main pages, as the accessibility check and the screenshots visit them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import scene

if TYPE_CHECKING:
    from playwright.sync_api import Page


@dataclass(frozen=True)
class MainPage:
    name: str  # also the screenshot's file name
    path: str
    heading: str


MAIN_PAGES = (
    MainPage("overview", "/", "Overview"),
    MainPage("claims", "/claims/", "Claims"),
    MainPage("workflow", f"/workflows/{scene.FEATURED}/", scene.FEATURED),
    MainPage("engines", "/engines/", "Engines"),
    MainPage("engine", f"/engines/{scene.HOLDER}/", scene.HOLDER),
    MainPage("reclaim", "/reclaim/", "Reclaim"),
    MainPage("redrives", "/redrives/", "Pending re-drives"),
    MainPage("backfills", "/backfills/", "Visibility backfills"),
    MainPage("audit", "/audit/", "Audit log"),
    MainPage(
        "takeover",
        f"/takeover/{scene.FEATURED}?epoch={scene.FEATURED_EPOCH}",
        "Force takeover",
    ),
)
BY_NAME = {page.name: page for page in MAIN_PAGES}
SERIOUS = ("serious", "critical")


def visit(page: Page, main: MainPage) -> None:
    """Open the page once its deferred scripts ran: htmx is there and weftboard.js has
    shown its controls and ticked the countdowns (both happen by DOMContentLoaded)."""
    page.goto(main.path, wait_until="load")
    page.wait_for_function(
        "() => window.htmx !== undefined && !document.getElementById('refresh-interval').hidden"
    )


def axe_violations(page: Page, axe_source: str) -> list[dict[str, Any]]:
    """axe-core's violations on the current document (every rule axe runs by default)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        # Evaluated by the browser's debugger, which the page's CSP does not govern; a
        # script tag of our own would be an inline script the policy rightly refuses.
        page.evaluate(f"{axe_source}\n;undefined")
    result: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return result


def describe(violations: list[dict[str, Any]]) -> str:
    """One paragraph per rule: what, how bad, and where (selector, markup, axe's summary)."""
    lines = []
    for violation in violations:
        lines.append(
            f"- {violation['id']} ({violation['impact']}): {violation['help']} "
            f"[{violation['helpUrl']}]"
        )
        for node in violation["nodes"][:6]:
            lines.append(f"    at {' '.join(map(str, node['target']))}: {node['html'][:200]}")
            summary = " ".join(str(node.get("failureSummary") or "").split())
            if summary:
                lines.append(f"      {summary[:300]}")
        if len(violation["nodes"]) > 6:
            lines.append(f"    … and {len(violation['nodes']) - 6} more elements")
    return "\n".join(lines)
