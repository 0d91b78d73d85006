"""The benchmark's memory sampling: a named phase keeps the most resident memory sampled while it ran."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.perf_server import Server

MB = 1 << 20
# Holds 200 MB (pages written, so resident) between the ``grow`` and ``shrink`` files, acknowledging each.
CHILD = (
    "import pathlib, sys, time\n"
    "d = pathlib.Path(sys.argv[1])\n"
    "def wait(name):\n"
    "    while not (d / name).exists(): time.sleep(0.01)\n"
    "wait('grow'); block = b'\\x01' * (200 << 20); (d / 'grown').touch()\n"
    "wait('shrink'); del block; (d / 'shrunk').touch()\n"
    "wait('stop')\n"
)


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"gave up waiting for {path.name}"
        time.sleep(0.01)


def test_a_phase_keeps_its_own_peak_apart_from_the_whole_run(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)])
    server = Server(process, "http://127.0.0.1:0", tmp_path / "log")
    server._sampler = threading.Thread(target=server._sample, daemon=True)
    server._sampler.start()
    try:
        with server.phase("before"):
            time.sleep(0.6)
        (tmp_path / "grow").touch()
        wait_for(tmp_path / "grown")
        time.sleep(0.6)  # sampled outside any phase
        (tmp_path / "shrink").touch()
        wait_for(tmp_path / "shrunk")
        with server.phase("after"):
            time.sleep(0.3)
        with server.phase("after"):  # a second block of one name adds to the same peak
            time.sleep(0.3)
    finally:
        (tmp_path / "stop").touch()
        server.stop(timeout=10)

    assert set(server.peaks) == {"before", "after"}
    assert server.peaks["before"] < 150 * MB
    assert server.peaks["after"] < 150 * MB
    assert server.max_rss >= 200 * MB  # the whole run's most includes the time outside phases
