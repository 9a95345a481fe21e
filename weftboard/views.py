from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness only: answers without touching the database or the broker."""
    return HttpResponse("ok", content_type="text/plain")
