"""How django-axes names a sign-in in its log lines (``AXES_CLIENT_STR_CALLABLE``).

Axes writes ``{username: "…", ip_address: "…", user_agent: "…", path_info: "…"}`` with
each value pasted between quotes as it came, so a User-Agent header holding
``", ip_address: "203.0.113.9`` would add an address of its own to a lockout line. This
writes the same fields, the name and the address masked as axes masks them (a name field
sometimes holds a password; both are listed in the admin), and every value quoted and
escaped as in the event lines (claims.protocol.log_events).
"""

from __future__ import annotations

from axes.helpers import cleanse_parameters
from django.http import HttpRequest

from claims.protocol.log_events import quoted

# What axes keeps of a user agent in its access attempts and logs.
USER_AGENT_MAX_LENGTH = 255


def sign_in_client_str(
    username: str | None,
    ip_address: str | None,
    user_agent: str | None,
    path_info: str | list[str] | tuple[str, ...] | None,
    request: HttpRequest | None,
) -> str:
    fields = cleanse_parameters(
        {
            "username": username,
            "ip_address": ip_address,
            "user_agent": (user_agent or "")[:USER_AGENT_MAX_LENGTH],
        }
    )
    if isinstance(path_info, list | tuple):
        path_info = path_info[0] if path_info else ""
    fields["path_info"] = path_info
    text = ", ".join(
        f"{key}: {quoted('' if value is None else str(value))}" for key, value in fields.items()
    )
    return "{" + text + "}"
