"""``GET /console``: the operator's page, served from the package's own files.

The page and its two assets are static; every figure it shows comes from the API with the
key typed into the page, so the page itself needs no key. Without API keys the API is meant
for loopback, and so is the console: a request from another address gets 403. Every answer
carries a Content-Security-Policy that allows only the router's own script, style and API.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from router.api.keys import is_loopback
from router.common.errors import Forbidden, NotFound
from router.console import ASSETS, asset

router = APIRouter(include_in_schema=False)

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _check_client(request: Request) -> None:
    if request.app.state.api_keys is not None:
        return
    host = request.client.host if request.client is not None else ""
    if not is_loopback(host):
        raise Forbidden("the console is served to loopback only while no API keys are configured (ROUTER_API_KEYS)")


def _file(name: str) -> Response:
    media = ASSETS[name]
    return Response(asset(name), media_type=f"{media}; charset=utf-8", headers=HEADERS)


@router.get("/console")
async def console(request: Request) -> Response:
    """The console page."""
    _check_client(request)
    return _file("index.html")


@router.get("/console/")
async def console_slash() -> Response:
    """The page lives at ``/console``: its relative links resolve from there."""
    return RedirectResponse("../console", status_code=308)


@router.get("/console/{name}")
async def console_asset(name: str, request: Request) -> Response:
    """The page's script and style sheet."""
    _check_client(request)
    if name not in ASSETS or name == "index.html":
        raise NotFound(f"the console has no file {name!r}")
    return _file(name)
