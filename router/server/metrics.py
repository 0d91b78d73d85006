"""Prometheus metrics of one process: HTTP latency, encoding, syncs, catalogs and errors.

Each app has its own registry (several apps in one process never share a series), and the
hot path only observes a histogram or bumps a counter. Catalog sizes are read from storage
when ``/metrics`` is scraped, so they are true in server mode too, where other processes sync.
The status page's route figures are read from the request histogram (``router.server.traffic``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from functools import partial

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric

from router.catalog.records import CatalogRecord
from sync.diff import Summary
from sync.reconcile import SyncCounters

CONTENT_TYPE = CONTENT_TYPE_LATEST
# A route costs milliseconds (one query encode, a few searches); catalog writes up to minutes.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0)
ENCODE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)

log = logging.getLogger(__name__)
CatalogReader = Callable[[], Mapping[str, CatalogRecord]]


def source_kind(source: str) -> str:
    """The kind of a sync source (``api``, ``dir``, ``mcp``...): a bounded label, unlike the source itself."""
    return source.split(":", 1)[0] or "unknown"


class _Catalogs:
    """Functions per catalog and whether storage answers, read when scraped."""

    def __init__(self) -> None:
        self.read: CatalogReader | None = None

    def describe(self) -> Iterator[Metric]:
        yield self._sizes()
        yield self._up()

    def collect(self) -> Iterator[Metric]:
        if self.read is None:
            return
        try:
            catalogs = self.read()
        except Exception as exc:  # a scrape must answer even when storage does not
            log.debug("catalog sizes unavailable", extra={"detail": str(exc)})
            yield self._up(0.0)
            return
        sizes = self._sizes()
        for namespace, record in catalogs.items():
            sizes.add_metric([namespace], record.count)
        yield sizes
        yield self._up(1.0)

    @staticmethod
    def _sizes() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "router_catalog_functions", "Functions in each catalog, as last recorded.", labels=["namespace"]
        )

    @staticmethod
    def _up(value: float | None = None) -> GaugeMetricFamily:
        return GaugeMetricFamily("router_storage_up", "1 when storage answered the last scrape, else 0.", value=value)


class Metrics(SyncCounters):
    """The process's metrics in a registry of their own."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        counter, histogram = partial(Counter, registry=registry), partial(Histogram, registry=registry)
        self.requests = histogram(
            "router_http_request_duration_seconds",
            "HTTP requests by method, route template and status, with their duration.",
            ["method", "path", "status"],
            buckets=LATENCY_BUCKETS,
        )
        self.errors = counter("router_errors", "Error answers by status and error kind.", ["status", "error"])
        self.encode = histogram(
            "router_encode_duration_seconds",
            "Model calls by kind (query, catalog, memory, example), with their duration.",
            ["kind"],
            buckets=ENCODE_BUCKETS,
        )
        self.batch = histogram(
            "router_encode_batch_size", "Texts per model call, by kind.", ["kind"], buckets=BATCH_BUCKETS
        )
        # Remote embeddings cost money: what was asked of the service, by kind, and what it counted.
        self.embedding_requests = counter(
            "router_embedding_requests",
            "Requests to the embedding service by kind (query, catalog, facet, memory, example, probe) and "
            "outcome (ok, retried, failed).",
            ["kind", "outcome"],
        )
        self.embedding_texts = counter(
            "router_embedding_texts", "Texts the embedding service embedded, by kind.", ["kind"]
        )
        self.embedding_tokens = counter(
            "router_embedding_tokens", "Tokens the embedding service says it read (its usage), by kind.", ["kind"]
        )
        self.applies = counter(
            "router_sync_applies",
            "Catalog reconciles by source kind and outcome (changed, unchanged, failed, rejected).",
            ["source", "outcome"],
        )
        self.functions = counter(
            "router_sync_functions",
            "Functions reconciled, by source kind and change (added, updated, removed, unchanged).",
            ["source", "change"],
        )
        self.functions_written = counter(
            "router_sync_functions_written", "Functions embedded and written so far (grows while a large sync runs)."
        )
        self.degraded = counter(
            "router_route_degraded", "Routes answered with the pinned functions only, storage being down."
        )
        self.multilingual = counter(
            "router_multilingual_fallbacks",
            "Non-English turns routed in the default space, by reason: the multilingual space lags the "
            "catalog (behind) or its embedding service failed (unavailable); and its failed catalog writes "
            "(write_failed).",
            ["reason"],
        )
        self.routes = counter(
            "router_routes",
            "Turns routed, by endpoint: route (POST /v1/route) or tool_search (POST /v1/tool_search).",
            ["endpoint"],
        )
        self.calls = counter(
            "router_calls",
            "Calls of stored runs by namespace and outcome: routed for their turn, searched (found by a tool "
            "search of the session), missed, or unchecked (the session had no route before the call).",
            ["namespace", "outcome"],
        )
        self.written = 0  # as functions_written counts it, for the status
        self.catalogs = _Catalogs()
        registry.register(self.catalogs)
        ProcessCollector(registry=registry)

    def request(self, method: str, path: str, status: int, seconds: float) -> None:
        """Record one HTTP request."""
        self.requests.labels(method, path, str(status)).observe(seconds)

    def routed(self, endpoint: str) -> None:
        """Record one routed turn (a route, or a model's search call)."""
        self.routes.labels(endpoint).inc()

    def checked(self, namespace: str, outcome: str, calls: int) -> None:
        """Record the outcome of calls of a stored run (a ``TurnRouter`` observer)."""
        self.calls.labels(namespace, outcome).inc(calls)

    def error(self, kind: str, status: int) -> None:
        """Record one error answer."""
        self.errors.labels(str(status), kind).inc()

    def encoded(self, kind: str, texts: int, seconds: float) -> None:
        """Record one model call (an ``Embedder`` observer)."""
        self.encode.labels(kind).observe(seconds)
        self.batch.labels(kind).observe(texts)

    def requested(self, kind: str, outcome: str, texts: int, tokens: int) -> None:
        """Record one request to an embedding service (an ``Embedder`` request observer)."""
        self.embedding_requests.labels(kind, outcome).inc()
        if outcome == "ok":
            self.embedding_texts.labels(kind).inc(texts)
            self.embedding_tokens.labels(kind).inc(tokens)

    def synced(self, source: str, summary: Summary) -> None:
        """Record a completed reconcile."""
        kind = source_kind(source)
        self.applies.labels(kind, "changed" if summary.changed else "unchanged").inc()
        for change, count in summary.counts().items():
            if count:
                self.functions.labels(kind, change).inc(count)

    def sync_failed(self, source: str, *, outcome: str = "failed") -> None:
        """Record a reconcile that failed (``failed``) or a source that was refused (``rejected``)."""
        self.applies.labels(source_kind(source), outcome).inc()

    def fell_back(self, reason: str) -> None:
        """Record a non-English turn routed in the default space (a ``Catalogs.fell_back`` observer)."""
        self.multilingual.labels(reason).inc()

    def multilingual_failed(self) -> None:
        """Record a failed write to the multilingual space."""
        self.multilingual.labels("write_failed").inc()

    def wrote(self, functions: int) -> None:
        """Record functions embedded and written by a sync."""
        self.functions_written.inc(functions)
        self.written += functions

    def render(self) -> bytes:
        """The text exposition of every metric (reads catalog sizes from storage)."""
        return generate_latest(self.registry)
