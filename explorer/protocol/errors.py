"""Errors at the boundary: every one answered as `{"error": {code, message, detail}}`."""

from typing import Any, TypedDict

# Error codes of the access rules (explorer/guard.py) and of deletion; docs/PROTOCOL.md.
FOREIGN_HOST = "foreign_host"      # 403: the Host header names no allowed host
CROSS_ORIGIN = "cross_origin"      # 403: another site's page (Origin) changes state / opens the socket
TOKEN_REQUIRED = "token_required"  # 401: a non-loopback server's access token is missing
RUN_ACTIVE = "run_active"          # 409: deleting a session or run whose run is in progress
SYMBOLIC_INPUTS = "symbolic_inputs"  # 400: a build asked of a session with unpinned input dims


class ErrorBody(TypedDict):
    code: str
    message: str
    detail: Any


class ErrorResponse(TypedDict):
    """The body of every 4xx/5xx answer and of every socket ack that failed."""

    error: ErrorBody


class ApiError(Exception):
    """An error answered at the boundary as `{"error": {code, message, detail}}`."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail

    def body(self) -> ErrorResponse:
        return error_response(code=self.code, message=self.message, detail=self.detail)


def error_response(*, code: str, message: str, detail: Any = None) -> ErrorResponse:
    return ErrorResponse(error=ErrorBody(code=code, message=message, detail=detail))


def bad_request(code: str, message: str, detail: Any = None) -> ApiError:
    return ApiError(400, code, message, detail)


def not_found(what: str, key: object) -> ApiError:
    return ApiError(404, "not_found", f"no {what} {key!r}", {"what": what})
