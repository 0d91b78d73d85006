"""When to try a request again, and how long to wait first."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

# A connect error or timeout means the request never left: any call may be sent again.
UNSENT_ERRORS: tuple[type[httpx.TransportError], ...] = (httpx.ConnectError, httpx.ConnectTimeout)
# The connection dropped or was reset once the request had left: the sidecar may have done it, so
# only a call that does the same done twice is sent again (session messages only when they carry ids).
DROPPED_ERRORS: tuple[type[httpx.TransportError], ...] = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter on 503 and 429 answers and connection errors.

    The wait before retry ``n`` (1-based) is drawn uniformly from ``[cap / 2, cap]`` where
    ``cap = min(max_backoff, backoff * 2 ** (n - 1))``; a ``Retry-After`` header in seconds
    replaces it, as long as the wait ends within ``max_elapsed`` (a gateway that throttles says
    when to come back). Other 4xx answers are never retried: the request itself is at fault.

    Attributes:
        attempts: tries in all, the first included (1 disables retries).
        backoff: the first wait's upper bound, in seconds.
        max_backoff: the longest single wait, in seconds.
        max_elapsed: no retry starts once this many seconds have passed since the first try.
        statuses: answers that are retried.
    """

    attempts: int = 3
    backoff: float = 0.25
    max_backoff: float = 4.0
    max_elapsed: float = 30.0
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 503}))

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts={self.attempts}: give at least 1 (1 means no retry)")
        if self.backoff < 0 or self.max_backoff < 0 or self.max_elapsed < 0:
            raise ValueError("RetryPolicy: backoff, max_backoff and max_elapsed must not be negative")
        if any(400 <= s < 500 and s != 429 for s in self.statuses):
            raise ValueError(f"RetryPolicy.statuses={sorted(self.statuses)}: 4xx answers but 429 are never retried")

    def delay(self, retry: int, *, rng: random.Random | None = None, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        if retry_after is not None:
            return max(retry_after, 0.0)
        cap = min(self.max_backoff, self.backoff * 2.0 ** (retry - 1))
        uniform = rng.uniform if rng is not None else random.uniform
        return cap / 2 + uniform(0, cap / 2)


NO_RETRY = RetryPolicy(attempts=1)


class Attempts:
    """The retry decisions of one request, attempt after attempt.

    Args:
        policy: the retry policy.
        repeatable: whether the request does the same when done twice (``DROPPED_ERRORS`` retry it).
        clock: monotonic seconds (tests may pass their own).
        rng: the jitter's source.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        repeatable: bool = True,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._policy = policy
        self._repeatable = repeatable
        self._clock = clock
        self._rng = rng
        self._start = clock()
        self.done = 1

    def after_error(self, error: Exception) -> float | None:
        """Seconds to wait before trying again after ``error``; None to give up."""
        if not isinstance(error, UNSENT_ERRORS) and not (self._repeatable and isinstance(error, DROPPED_ERRORS)):
            return None
        return self._next(None)

    def after_response(self, response: httpx.Response) -> float | None:
        """Seconds to wait before trying again after ``response``; None to keep the answer."""
        if response.status_code not in self._policy.statuses:
            return None
        try:
            retry_after: float | None = float(response.headers["retry-after"])
        except (KeyError, ValueError):
            retry_after = None  # absent, or an HTTP date (rare from a sidecar): the computed backoff is used
        if retry_after is not None and not math.isfinite(retry_after):  # "nan" would sleep NaN seconds: an error
            retry_after = None
        return self._next(retry_after)

    def _next(self, retry_after: float | None) -> float | None:
        if self.done >= self._policy.attempts:
            return None
        wait = self._policy.delay(self.done, rng=self._rng, retry_after=retry_after)
        if self._clock() - self._start + wait > self._policy.max_elapsed:
            return None
        self.done += 1
        return wait
