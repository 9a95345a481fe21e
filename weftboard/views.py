import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from django_prometheus.exports import ExportToDjangoView


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness only: answers without touching the database or the broker."""
    return HttpResponse("ok", content_type="text/plain")


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text; behind a bearer token when WEFTBOARD_METRICS_TOKEN is set."""
    token = settings.WEFTBOARD_METRICS_TOKEN
    if token:
        scheme, _, offered = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            offered.strip().encode(), token.encode()
        ):
            response = HttpResponse("a bearer token is required\n", status=401)
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    exported: HttpResponse = ExportToDjangoView(request)
    return exported
