"""The calibration request every page is judged against, and the URLconf that serves it.

This machine's speed moves two to three times by the hour (other work shares its two
cores), and a page's absolute time moves with it. So each endpoint is timed interleaved
with a fixed request of the same shape: through the test Client as the signed-in
operator and every middleware, a few small reads and a template rendered with the
request's context; owned by the benchmark, so no change to the product's pages moves it.
An endpoint's time over the calibration's, both taken in the same seconds, is its cost
in a unit that slows down with the machine.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from claims.models import WorkflowClaim
from weftboard import urls as project_urls

CALIBRATION_PATH = "/bench/calibration/"
URLCONF = __name__
# Reads of ROWS claim rows each, in key order: the first rows of every fleet, so the
# calibration costs the same whatever the fleet's size or mode.
READS = 5
ROWS = 20
FIELDS = (
    "workflow_id",
    "epoch",
    "holder_engine_id",
    "holder_epoch",
    "holder_expires_at_ms",
    "holder_session_epoch",
)
TEMPLATE = """<!doctype html><html><head><title>calibration</title></head><body>
<p>{{ request.user.get_username }}</p>
<table>{% for row in rows %}<tr>{% for value in row %}
<td>{{ value|default_if_none:"-" }}</td>{% endfor %}</tr>{% endfor %}</table>
</body></html>"""

_compiled: list[Any] = []


def _template() -> Any:
    if not _compiled:
        _compiled.append(engines["django"].from_string(TEMPLATE))
    return _compiled[0]


@login_required
def calibration(request: HttpRequest) -> HttpResponse:
    claims = WorkflowClaim.objects.order_by("workflow_id").values_list(*FIELDS)
    rows = [row for read in range(READS) for row in claims[read * ROWS : (read + 1) * ROWS]]
    return HttpResponse(_template().render({"rows": rows}, request))


urlpatterns = [
    path(CALIBRATION_PATH.strip("/") + "/", calibration, name="bench-calibration"),
    *project_urls.urlpatterns,
]
