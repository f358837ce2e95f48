"""Who may change the game: viewers read freely; when ``JUDGE_TOKEN`` is set (always when
serving beyond this machine) every state-changing request must carry it.

State-changing requests must also be JSON (``Content-Type: application/json``): a web
page on another site cannot send that without the browser asking first, so a page the
judge happens to have open elsewhere cannot end a battle round on the loopback server.
"""

from __future__ import annotations

import hmac

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
    app.before_request(check_state_change)
