"""Whether a Docker engine answers (asked once); server tests are skipped with the reason when none does."""

from __future__ import annotations

import gc
import warnings

import docker
import pytest
from docker.errors import DockerException
from requests import RequestException


def docker_unreachable() -> str | None:
    """Why no Docker engine can be used, or None when one answers a ping."""
    with warnings.catch_warnings():
        # docker-py leaves its probe socket open when the daemon is missing.
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            client = docker.from_env(timeout=3)
            try:
                client.ping()
            finally:
                client.close()
        except (DockerException, RequestException) as exc:
            return str(exc) or type(exc).__name__
        finally:
            gc.collect()
    return None


REASON = docker_unreachable()
needs_docker = pytest.mark.skipif(
    REASON is not None, reason=f"no Docker engine reachable ({REASON}): server tests need one"
)
