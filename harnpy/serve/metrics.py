"""Prometheus metrics of one ``harnpy serve`` replica (``GET /metrics``, prometheus_client).

* ``harnpy_runs`` (gauge, label ``status``): runs in the store by status, read at scrape
  time (every replica reports the whole store);
* ``harnpy_runs_finished_total`` (``status``): runs this replica brought to an end or parked;
* ``harnpy_run_claims_total``: runs this replica claimed;
* ``harnpy_lease_losses_total``: claims this replica lost (another replica took the run over,
  or it was cancelled while running);
* ``harnpy_checkpoint_bytes`` / ``harnpy_checkpoint_seconds`` (histograms): size and store
  write latency of completion snapshots and park checkpoints;
* ``harnpy_http_requests_total`` (``method``, ``route``, ``status``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "Metrics"]

#: The Content-Type of the text exposition format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _RunsByStatus(Collector):
    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Any]:
        g = GaugeMetricFamily("harnpy_runs", "Runs in the store by status", labels=["status"])
        try:
            counts = self.counts()
        except Exception:  # noqa: BLE001 - a store outage must not break the scrape
            counts = {}
        for status in ("queued", "in_progress", "completed", "failed", "cancelled"):
            g.add_metric([status], counts.get(status, 0))
        yield g


class Metrics:
    """The replica's metrics in a registry of their own (several apps in one process, as in
    tests, do not collide)."""

    def __init__(self, run_counts: Callable[[], dict[str, int]]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.registry.register(_RunsByStatus(run_counts))
        self.finished = Counter(
            "harnpy_runs_finished", "Runs this replica finished or parked", ["status"], registry=r
        )
        self.claims = Counter("harnpy_run_claims", "Runs this replica claimed", registry=r)
        self.lease_losses = Counter(
            "harnpy_lease_losses", "Run claims this replica lost", registry=r
        )
        self.checkpoint_bytes = Histogram(
            "harnpy_checkpoint_bytes",
            "Bytes of completion snapshots and park checkpoints written",
            buckets=(1e3, 1e4, 1e5, 1e6, 4.2e6),
            registry=r,
        )
        self.checkpoint_seconds = Histogram(
            "harnpy_checkpoint_seconds",
            "Store write latency of completion snapshots and park checkpoints",
            registry=r,
        )
        self.http = Counter(
            "harnpy_http_requests",
            "HTTP requests answered",
            ["method", "route", "status"],
            registry=r,
        )

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
