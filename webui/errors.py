"""JSON errors for the API: every failure is ``{"error": "<one line>"}`` with a 4xx/5xx."""

from __future__ import annotations

from flask import jsonify, request
from werkzeug.exceptions import HTTPException

from tracker.errors import UserError


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def api_error(status: int, message: str, **extra):
    resp = jsonify({"error": message, **extra})
    resp.status_code = status
    return resp


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.method not in ("GET", "HEAD") \
        or request.accept_mimetypes.best == "application/json"


def register(app) -> None:
    @app.errorhandler(ApiError)
    def _api(e: ApiError):
        return api_error(e.status, e.message)

    @app.errorhandler(UserError)
    def _user(e: UserError):
        return api_error(400, str(e))

    @app.errorhandler(HTTPException)
    def _http(e: HTTPException):
        if not wants_json():
            return e
        return api_error(e.code or 500, e.description or e.name)

    @app.errorhandler(Exception)
    def _other(e: Exception):
        if isinstance(e, HTTPException):
            return _http(e)
        app.logger.exception("unhandled error on %s", request.path)
        return api_error(500, f"internal error ({e.__class__.__name__}); see the server log")
