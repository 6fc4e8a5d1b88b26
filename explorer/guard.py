"""Who may talk to the server, checked in front of everything (pages, API, Socket.IO).

`AccessGuard` wraps the whole WSGI app (Flask-SocketIO's middleware included), so one
set of rules holds for every request and every socket:

- **Host allowlist** (DNS rebinding): the Host header must name a loopback address or a
  name in `ALLOWED_HOSTS` (`explorer serve --host` adds its own); else 403 `foreign_host`.
- **Same origin**: a request that changes state (POST, PUT, PATCH, DELETE) and every
  Socket.IO request with an `Origin` header must come from the server's own origin
  (`scheme://Host`); `Origin: null` and any other page are refused with 403
  `cross_origin`. Clients that send no Origin (curl, the CLI, python-socketio) are not
  browsers and pass. Socket.IO applies the same rule (`same_origin`) to its handshakes.
- **Access token**: when `ACCESS_TOKEN` is set (a server bound to a non-loopback address),
  every request needs it: `?token=...` (the URL `explorer serve` prints; it also sets an
  HttpOnly, SameSite=Strict cookie for the page's later requests and socket), the cookie,
  or `Authorization: token ...`; else 401 `token_required`.
- **Security headers** on every answer: a CSP without inline script, framing denied,
  `nosniff`, no referrer.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterable, Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from explorer.protocol import CROSS_ORIGIN, FOREIGN_HOST, TOKEN_REQUIRED, error_response

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
SOCKET_PATH = "/socket.io"
TOKEN_COOKIE = "explorer_token"

CSP = "; ".join((
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",   # the bundle; viz.js runs Graphviz as wasm
    "style-src 'self' 'unsafe-inline'",        # CodeMirror injects its style sheets
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "worker-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
SECURITY_HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]


def host_name(host: str) -> str:
    """The name of a Host header without its port (`[::1]:80` -> `::1`), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_host(host: str | None, allowed: Iterable[str]) -> bool:
    if not host:  # HTTP/1.0 without Host: no browser sends this
        return True
    name = host_name(host)
    return name in LOOPBACK_HOSTS or name in {host_name(a) for a in allowed}


def same_origin(origin: str | None, environ: Mapping[str, Any]) -> bool:
    """Whether a request's Origin is the server's own (`scheme://Host`); no Origin is fine."""
    if origin is None:
        return True
    own = f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '')}"
    return origin.strip().lower() == own.lower()


def _token_of(environ: Environ) -> tuple[str | None, bool]:
    """(the token the request carries, whether it came in the query string)."""
    query = parse_qs(environ.get("QUERY_STRING", "")).get("token")
    if query:
        return query[0], True
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if auth.lower().startswith("token "):
        return auth[6:].strip(), False
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(environ.get("HTTP_COOKIE", ""))
    except CookieError:  # a malformed Cookie header carries no token
        return None, False
    morsel = cookie.get(TOKEN_COOKIE)
    return (morsel.value if morsel is not None else None), False


class AccessGuard:
    """The WSGI middleware of the module docstring; reads `config` at each request."""

    def __init__(self, app: WsgiApp, config: Mapping[str, Any]) -> None:
        self.app = app
        self.config = config

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        extra: list[tuple[str, str]] = list(SECURITY_HEADERS)
        refusal = self._refusal(environ, extra)
        if refusal is not None:
            status, code, message = refusal
            body = json.dumps(error_response(code=code, message=message)).encode()
            start_response(status, [("Content-Type", "application/json"),
                                    ("Content-Length", str(len(body))), *extra])
            return [body]

        def start(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
            names = {name.lower() for name, _ in headers}
            added = [(k, v) for k, v in extra if k.lower() not in names]
            return start_response(status, [*headers, *added], *exc)

        return self.app(environ, start)

    def _refusal(self, environ: Environ,
                 extra: list[tuple[str, str]]) -> tuple[str, str, str] | None:
        if not allowed_host(environ.get("HTTP_HOST"), self.config.get("ALLOWED_HOSTS") or ()):
            return ("403 Forbidden", FOREIGN_HOST,
                    "this server does not answer to that host name")
        token = self.config.get("ACCESS_TOKEN")
        if token:
            given, in_query = _token_of(environ)
            if given is None or not hmac.compare_digest(given.encode(), str(token).encode()):
                return ("401 Unauthorized", TOKEN_REQUIRED,
                        "open the URL explorer serve printed (it carries the access token)")
            if in_query:
                extra.append(("Set-Cookie", f"{TOKEN_COOKIE}={token}; Path=/; HttpOnly; "
                                            "SameSite=Strict"))
        checks_origin = (environ.get("REQUEST_METHOD", "GET").upper() in UNSAFE_METHODS
                         or environ.get("PATH_INFO", "").startswith(SOCKET_PATH))
        if checks_origin and not same_origin(environ.get("HTTP_ORIGIN"), environ):
            return ("403 Forbidden", CROSS_ORIGIN,
                    "requests from other sites are refused (same origin only)")
        return None
