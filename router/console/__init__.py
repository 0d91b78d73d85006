"""The console's static files (a page, its scripts and its style sheet), served by ``router.api.console``."""

from __future__ import annotations

from importlib import resources

SCRIPTS = ("app.js", "core.js", "catalogs.js", "turn.js", "sessions.js")
ASSETS = {"index.html": "text/html", "app.css": "text/css", **dict.fromkeys(SCRIPTS, "text/javascript")}


def asset(name: str) -> bytes:
    """The bytes of one of the console's files.

    Raises:
        KeyError: ``name`` is not one of them.
    """
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files(__package__).joinpath(name).read_bytes()
