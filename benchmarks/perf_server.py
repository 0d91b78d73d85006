"""The router as a real process: ``router serve`` spawned, watched until ready, sampled for memory, stopped.

Start-to-ready is measured from the spawn to the first ``GET /readyz`` answering 200 (polled
every 20 ms), so it includes the interpreter, the imports, the model, opening storage and the
first catalog pass. Resident memory is psutil's RSS of that process, sampled in a thread every
250 ms while it runs, beside the kernel's high-water mark (``VmHWM``) read just before it stops;
``Server.phase`` keeps the most sampled during one named part of a run (64 clients routing, PUTs)
apart from the whole run's, whose most is often the start's catalog pass.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx
import psutil

__all__ = ["LogProgress", "Server", "free_port", "start"]

HOST = "127.0.0.1"
POLL = 0.02
SAMPLE = 0.25


def free_port() -> int:
    """A port nothing listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running ``router serve`` process.

    Attributes:
        process: the child process.
        url: its base URL on 127.0.0.1.
        log: the file its stderr (JSON logs) goes to.
        ready_seconds: seconds from spawn to the first 200 of ``/readyz``.
    """

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    ready_seconds: float = 0.0
    max_rss: int = 0
    peaks: dict[str, int] = field(default_factory=dict)
    _phase: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _sampler: threading.Thread | None = None

    def rss(self) -> int:
        """Resident bytes right now."""
        return int(psutil.Process(self.process.pid).memory_info().rss)

    def high_water(self) -> int:
        """The most resident bytes the process has had (``VmHWM``), or the sampled maximum."""
        status = Path(f"/proc/{self.process.pid}/status")
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return max(self.max_rss, int(line.split()[1]) * 1024)
        except OSError:
            pass
        return self.max_rss

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Keep the most resident bytes sampled while the block runs in ``peaks[name]`` (across blocks of that name).

        Sampled at entry and exit as well, so a block shorter than the sampling period still counts.
        """
        self._phase = name
        self._record(self.rss())
        try:
            yield
        finally:
            self._record(self.rss())
            self._phase = None

    def _record(self, rss: int) -> None:
        self.max_rss = max(self.max_rss, rss)
        phase = self._phase  # read once: the sampler thread records while a phase may end
        if phase is not None:
            self.peaks[phase] = max(self.peaks.get(phase, 0), rss)

    def _sample(self) -> None:
        proc = psutil.Process(self.process.pid)
        while not self._stop.wait(SAMPLE):
            try:
                self._record(int(proc.memory_info().rss))
            except psutil.Error:
                return

    def stop(self, *, timeout: float = 120.0) -> None:
        """Ask the server to shut down (SIGINT, as Ctrl-C), then terminate or kill it if it lingers."""
        self._stop.set()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=10)
        if self._sampler is not None:
            self._sampler.join(timeout=5)

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start(*, data: Path, catalog: Path | None, log: Path, timeout: float = 900.0) -> Server:
    """Spawn ``router serve`` on a free port of 127.0.0.1 and wait until ``/readyz`` says ready.

    Args:
        data: the embedded data directory.
        catalog: the catalog directory to keep in sync (None for none).
        log: where the server's stderr goes.
        timeout: most seconds to wait for readiness.

    Raises:
        RuntimeError: when the process exits or is not ready in time (with the end of its log).
    """
    port = free_port()
    command = [sys.executable, "-m", "router.cli", "serve", "--data", str(data), "--host", HOST, "--port", str(port)]
    if catalog is not None:
        command += ["--catalog", str(catalog)]
    command += ["--log-format", "json", "--log-level", "info"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    # A 100k-function catalog is one PUT of 63 MB: above the default catalog limits.
    env |= {"ROUTER_LIMIT_CATALOG_BYTES": str(512 << 20), "ROUTER_LIMIT_FUNCTIONS": "1000000"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        spawned = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink, env=env)  # noqa: S603
    server = Server(process, f"http://{HOST}:{port}", log)
    server._sampler = threading.Thread(target=server._sample, name="rss-sampler", daemon=True)
    server._sampler.start()
    deadline = spawned + timeout
    with httpx.Client(base_url=server.url, timeout=5.0) as client:
        while time.perf_counter() < deadline:
            if process.poll() is not None:
                server.stop()
                raise RuntimeError(f"router serve exited with {process.returncode}:\n{_tail(log)}")
            try:
                if client.get("/readyz").status_code == 200:
                    server.ready_seconds = time.perf_counter() - spawned
                    return server
            except httpx.TransportError:
                pass
            time.sleep(POLL)
    server.stop()
    raise RuntimeError(f"router serve was not ready within {timeout:.0f} s:\n{_tail(log)}")


class LogProgress:
    """Reads the server's ``embedding`` log lines (``done``/``total``) as they are written."""

    def __init__(self, log: Path) -> None:
        self._log = log
        self._offset = log.stat().st_size if log.exists() else 0

    def latest(self) -> tuple[int, int] | None:
        """The last ``(done, total)`` logged since the previous call, if any."""
        try:
            with self._log.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:
            return None
        complete = chunk.rfind(b"\n") + 1
        self._offset += complete
        found = None
        for line in chunk[:complete].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "embedding" and "done" in entry:
                found = (int(entry["done"]), int(entry["total"]))
        return found


def wait_for_log(log: Path, message: str, *, timeout: float, offset: int = 0) -> float | None:
    """Seconds until the server logs ``message`` (a JSON ``msg``) after ``offset``, or None after ``timeout``."""
    start = time.monotonic()
    seen = offset
    while time.monotonic() - start < timeout:
        try:
            with log.open("rb") as handle:
                handle.seek(seen)
                chunk = handle.read()
        except OSError:
            chunk = b""
        complete = chunk.rfind(b"\n") + 1
        seen += complete
        for line in chunk[:complete].splitlines():
            try:
                if json.loads(line).get("msg") == message:
                    return time.monotonic() - start
            except ValueError:
                continue
        time.sleep(0.5)
    return None
