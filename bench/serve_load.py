"""Benchmark: `harnpy serve` throughput and latency with 1 and with 3 replicas on one store.

Starts replicas of tests/serve/apps/app.harn on loopback (SQLite store in a temporary
directory, or ``--store URL``), then sends ``--runs`` requests (``greet``, answered
synchronously) from ``--clients`` client threads, round-robin over the replicas, and
prints runs per second and the p50 / p99 latency for each replica count, with the 3-replica
figures as a ratio against 1 replica measured in the same run. Bounded: at most ``--runs``
requests per round and ``--max-seconds`` per round.

Usage: .venv/bin/python bench/serve_load.py [--runs 200] [--clients 8] [--store URL]

Not a test: it only prints numbers. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.serve.servers import auth, start_server  # noqa: E402

APP = REPO / "tests" / "serve" / "apps" / "app.harn"


def _round(urls_servers: list, runs: int, clients: int, max_s: float) -> tuple[float, list[float]]:
    lat: list[float] = []
    lock = threading.Lock()
    counter = iter(range(runs))
    deadline = time.monotonic() + max_s

    def client(k: int) -> None:
        import httpx

        conns = [httpx.Client(base_url=s.url, timeout=60) for s in urls_servers]
        try:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                c = conns[i % len(conns)]
                t0 = time.perf_counter()
                r = c.post(
                    "/v1/responses",
                    json={"entry": "greet", "input": {"name": f"n{i}"}},
                    headers=auth("alice"),
                )
                dt = time.perf_counter() - t0
                if r.status_code == 200 and r.json()["status"] == "completed":
                    with lock:
                        lat.append(dt)
        finally:
            for c in conns:
                c.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, lat


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--store", default=None, help="store URL (default: a temporary SQLite)")
    ap.add_argument("--max-seconds", type=float, default=60.0)
    args = ap.parse_args()
    results: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as d:
        for n in (1, 3):
            store = args.store or f"sqlite://{Path(d) / f'bench{n}.sqlite3'}"
            servers = [start_server(APP, store) for _ in range(n)]
            try:
                _round(servers, min(20, args.runs), args.clients, args.max_seconds)  # warm-up
                wall, lat = _round(servers, args.runs, args.clients, args.max_seconds)
            finally:
                for s in servers:
                    s.kill()
            rps = len(lat) / wall if wall else 0.0
            results[n] = (rps, _pct(lat, 0.5), _pct(lat, 0.99))
            print(
                f"{n} replica(s): {len(lat)} runs in {wall:.2f} s = {rps:.1f} runs/s, "
                f"p50 {results[n][1] * 1000:.1f} ms, p99 {results[n][2] * 1000:.1f} ms"
            )
    one, three = results[1], results[3]
    print(
        f"3 replicas vs 1: throughput x{three[0] / one[0]:.2f}, "
        f"p50 x{three[1] / one[1]:.2f}, p99 x{three[2] / one[2]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
