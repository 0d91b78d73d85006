"""What every benchmark shares: the run header, the bare-library floors, the server process, progress and RESULTS.md.

``Header``: date, machine, commit, command and loads (above a 1-minute load of 1.5 at start, a run is not
comparable). ``Bare``: ``SentenceTransformer(path, device="cpu")``, fp32, normalised, the floor of every embedding
figure (never the router's ``Embedder``, whose costs it would hide). ``Server``: ``router serve`` on loopback with a
temporary data directory, its RSS and ``/metrics``. ``record``: one section of ``RESULTS.md``, where a run that is
not comparable never replaces a comparable one.
"""

from __future__ import annotations

import os
import platform
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from tqdm import tqdm

from router.embedding import DEFAULT_MODEL, resolve_model

RESULTS = Path(__file__).with_name("RESULTS.md")
ROOT = Path(__file__).resolve().parents[1]
INTRO = "Figures of 2-core CPU machines; read timings against the floors of the same run (benchmarks/README.md)."
COMPARABLE_LOAD = 1.5
COMPARABLE = "Comparable run:"
NOT_COMPARABLE = "**Not comparable**:"
HOST = "127.0.0.1"


def say(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def progress(label: str, total: int, *, unit: str = "it") -> Callable[[int, int], None]:
    """A progress bar on stderr fed ``(done, total)``, closed when done."""
    bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr, leave=False)

    def report(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return report


def _cpu() -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    return names[0] if names else platform.processor() or "unknown CPU"


def machine() -> str:
    """Cores, CPU model, torch version and threads, in one line."""
    import torch

    return f"{os.cpu_count()} cores, CPU only ({_cpu()}; torch {torch.__version__}, {torch.get_num_threads()} threads)"


def commit() -> str:
    """The checkout's short commit, saying when the tree differs from it."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S603, S607

    head = git("rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    return head if not git("status", "--porcelain", "--untracked-files=no").stdout.strip() else f"{head} (modified)"


def _loads(values: Sequence[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in values)


@dataclass
class Header:
    """A run's header: started by ``Header.begin``, ended by ``finish``."""

    command: str
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    start_load: tuple[float, float, float] = field(default_factory=os.getloadavg)
    ended: datetime | None = None
    end_load: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @classmethod
    def begin(cls, module: str, argv: Sequence[str] | None) -> Header:
        """The header of ``python -m module argv`` (``sys.argv`` when None), loads taken now."""
        args = list(sys.argv[1:] if argv is None else argv)
        return cls(shlex.join([".venv/bin/python", "-m", module, *args]))

    def finish(self) -> Header:
        """Take the end time and loads."""
        self.ended, self.end_load = datetime.now(UTC), os.getloadavg()
        return self

    @property
    def comparable(self) -> bool:
        """Whether the 1-minute load at start was at most ``COMPARABLE_LOAD``."""
        return self.start_load[0] <= COMPARABLE_LOAD

    def markdown(self, *, timed: bool = True) -> str:
        """When, where, the command and the loads; for ``timed`` runs, whether they are comparable."""
        ended = self.ended or self.finish().ended or self.started
        loads = f"load average {_loads(self.start_load)} at start, {_loads(self.end_load)} at end (1, 5, 15 minutes)"
        if not timed:
            state = f"{loads[0].upper()}{loads[1:]}; these figures do not depend on it."
        elif self.comparable:
            state = f"{COMPARABLE} {loads}."
        else:
            state = f"{NOT_COMPARABLE} {loads}; it started above {COMPARABLE_LOAD}, so other work shared the CPU."
        return "\n".join([
            f"Measured {self.started:%Y-%m-%d %H:%M}-{ended:%H:%M} UTC on {machine()}; router code {commit()}.",
            f"Command: `{self.command}`.",
            state,
        ])  # fmt: skip


class Bare:
    """The bare library: ``SentenceTransformer(path, device="cpu")``, fp32, normalised vectors."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        from sentence_transformers import SentenceTransformer

        self._model: Any = SentenceTransformer(resolve_model(model), device="cpu")
        self.encode(["warm-up", "the first calls allocate their buffers"])

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> Any:
        """Normalised vectors of ``texts`` (the library's own default batch size unless given)."""
        return self._model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        )

    def one_ms(self, text: str) -> float:
        """Milliseconds to encode one text in one call."""
        start = time.perf_counter()
        self.encode([text])
        return (time.perf_counter() - start) * 1000

    def single_ms(self, texts: Sequence[str]) -> float:
        """The median milliseconds of one text per call, over ``texts``."""
        return statistics.median(self.one_ms(t) for t in texts)

    def rate(self, texts: Sequence[str], *, label: str = "bare batch encode", chunk: int = 512) -> float:
        """Texts per second of a batch encode of ``texts`` (sorted by length, as the library sorts a call)."""
        ordered, report = sorted(texts, key=len), progress(label, len(texts), unit="text")
        start = time.perf_counter()
        for begin in range(0, len(ordered), chunk):
            self.encode(ordered[begin : begin + chunk])
            report(min(begin + chunk, len(ordered)), len(ordered))
        return len(ordered) / (time.perf_counter() - start)

    def batching_gain(self, texts: Sequence[str], batch: int) -> float:
        """How much faster ``texts`` encode in batches of ``batch`` (in their order) than one per call."""
        start = time.perf_counter()
        for text in texts:
            self.encode([text])
        middle = time.perf_counter()
        for begin in range(0, len(texts), batch):
            self.encode(texts[begin : begin + batch], batch_size=batch)
        return (middle - start) / (time.perf_counter() - middle)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class Server:
    """A ``router serve`` process on 127.0.0.1, ready when constructed; a context manager that stops it.

    Args:
        catalog: a catalog directory for it to keep in sync (None: none).
        timeout: most seconds to wait for ``/readyz``.
    """

    def __init__(self, *, catalog: Path | None = None, timeout: float = 600) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="bench-server-")
        data, self.log = Path(self._dir.name) / "data", Path(self._dir.name) / "serve.log"
        port = _free_port()
        command = [sys.executable, "-m", "router.cli", "serve", "--data", str(data), "--host", HOST]
        command += ["--port", str(port), "--log-format", "json", *(["--catalog", str(catalog)] if catalog else [])]
        environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # PYTHONPATH holds
        self.url = f"http://{HOST}:{port}"
        started = time.perf_counter()
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink, env=environment)  # noqa: S603
        self.http = httpx.Client(base_url=self.url, timeout=30.0)
        while time.perf_counter() - started < timeout and self.process.poll() is None:
            try:
                if self.http.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        self.stop()
        raise RuntimeError(f"router serve not ready in {timeout:.0f} s (exit code {self.process.returncode}):\n{tail}")

    def rss(self) -> int:
        """The process's resident bytes now."""
        return int(psutil.Process(self.process.pid).memory_info().rss)

    def high_water(self) -> int:
        """The most resident bytes the process has had (the kernel's ``VmHWM``)."""
        lines = Path(f"/proc/{self.process.pid}/status").read_text().splitlines()
        return next((int(line.split()[1]) * 1024 for line in lines if line.startswith("VmHWM:")), 0)

    @contextmanager
    def sampling(self, every: float = 0.25) -> Iterator[list[int]]:
        """Sample the resident bytes every ``every`` seconds while the block runs: ``[most]`` (with entry and exit)."""
        peak, stop = [self.rss()], threading.Event()

        def sample() -> None:
            while not stop.wait(every):
                peak[0] = max(peak[0], self.rss())

        sampler = threading.Thread(target=sample, name="rss-sampler", daemon=True)
        sampler.start()
        try:
            yield peak
        finally:
            stop.set()
            sampler.join()
            peak[0] = max(peak[0], self.rss())

    def status(self) -> dict[str, Any]:
        """``GET /v1/status``."""
        answer = self.http.get("/v1/status")
        answer.raise_for_status()
        return dict(answer.json())

    def metrics(self) -> list[tuple[str, dict[str, str], float]]:
        """``GET /metrics`` as (name, labels, value) samples."""
        from prometheus_client.parser import text_string_to_metric_families

        text = self.http.get("/metrics").text
        return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the server as Ctrl-C does (killed if it lingers), and remove its data."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.http.close()
        self._dir.cleanup()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _sections(text: str) -> list[str]:
    """The file cut before each ``## `` heading (the first part is what precedes them)."""
    parts: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("## "):
            parts.append([])
        parts[-1].append(line)
    return ["\n".join(p).strip() for p in parts]


def record(heading: str, body: str, header: Header, *, timed: bool = True, path: Path = RESULTS) -> bool:
    """Replace (or append) the ``heading`` section of ``path`` with the header and ``body``.

    A timed run that is not comparable is written only where no comparable run is recorded.

    Returns:
        Whether the section was written.
    """
    parts = _sections(path.read_text(encoding="utf-8")) if path.exists() else [INTRO]
    found = next((i for i, p in enumerate(parts) if p.splitlines()[:1] == [heading]), None)
    if timed and not header.comparable and found is not None and COMPARABLE in parts[found]:
        say(f"not recorded: this run is not comparable and {path.name} holds a comparable one")
        return False
    section = f"{heading}\n\n{header.markdown(timed=timed)}\n\n{body.strip()}"
    if found is None:
        parts.append(section)
    else:
        parts[found] = section
    path.write_text("\n\n".join(p for p in parts if p) + "\n", encoding="utf-8")
    say(f"recorded in {path}")
    return True
