from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """The request as HtmxMiddleware leaves it, so views can type `request.htmx`."""

    htmx: HtmxDetails
