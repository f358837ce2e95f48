"""Who may change the game: viewers read freely; when ``JUDGE_TOKEN`` is set (always when
serving beyond this machine) every state-changing request must carry it.

State-changing requests must also be JSON (``Content-Type: application/json``): a web
page on another site cannot send that without the browser asking first, so a page the
judge happens to have open elsewhere cannot end a battle round on the loopback server.

Every request must name this server in its ``Host`` header: an address (any IP literal),
``localhost``, the ``--host`` it was started for, the machine's own names when serving
on every network (0.0.0.0), or a name in ``ALLOWED_HOSTS``. A page on another site that
re-points its own name at 127.0.0.1 (DNS rebinding) sends its own name, and gets 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket

from flask import current_app, request

from .errors import api_error

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def presented_token() -> str | None:
    tok = request.headers.get("X-Judge-Token")
    if tok:
        return tok.strip()
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return None


def token_required() -> bool:
    return bool(current_app.config.get("JUDGE_TOKEN"))


LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port or brackets, lower case."""
    h = host_header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h[1:]
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def machine_names() -> set[str]:
    """This machine's host names (short, fully qualified, mDNS ``.local``)."""
    names = set()
    for n in (socket.gethostname(), socket.getfqdn()):
        n = (n or "").lower().rstrip(".")
        if n:
            names |= {n, n.split(".")[0], n.split(".")[0] + ".local"}
    return names


def allowed_hosts(serve_host: str | None, extra=()) -> frozenset[str]:
    """The host names a server started on ``serve_host`` (None: the loopback) answers to,
    besides any IP address."""
    names = set(LOCAL_NAMES) | {host_name(h) for h in extra if h}
    if serve_host is not None:
        h = host_name(serve_host) if not _is_address(serve_host.strip("[]")) else serve_host.strip("[]")
        if h in ANY_ADDRESS:
            names |= machine_names()
        elif not _is_address(h):
            names.add(h)
    return frozenset(names)


def check_host():
    """403 for a request whose Host names another server (see the module docstring)."""
    name = host_name(request.headers.get("Host", ""))
    if not name or _is_address(name):
        return None
    allowed = current_app.config.get("_ALLOWED_HOST_NAMES")
    if allowed is None:
        allowed = allowed_hosts(current_app.config.get("SERVE_HOST"), current_app.config.get("ALLOWED_HOSTS") or ())
        current_app.config["_ALLOWED_HOST_NAMES"] = allowed
    if name in allowed:
        return None
    shown = name if len(name) <= 60 else name[:57] + "..."
    return api_error(403, f"this server does not answer to the host name '{shown}'; open it as "
                          f"http://127.0.0.1:<port>/ or by a name it was started for "
                          f"(a page re-pointing its own name here is refused)")


def check_state_change():
    if request.method in SAFE_METHODS:
        return None
    expected = current_app.config.get("JUDGE_TOKEN")
    if expected:
        got = presented_token()
        if not got or not hmac.compare_digest(got.encode(), str(expected).encode()):
            return api_error(403, "this needs the judge token: send it as the X-Judge-Token header "
                                  "(enter it in the page's judge token box)")
    if request.mimetype != "application/json":
        return api_error(415, "send the request body as JSON with Content-Type: application/json "
                              "(an empty body is {})")
    return None


def init_app(app) -> None:
    app.before_request(check_host)
    app.before_request(check_state_change)
