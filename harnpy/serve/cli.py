"""``harnpy serve APP.harn`` and ``harnpy runs start|get|wait|events|cancel``.

Exit status of ``serve``: 0 after a graceful stop (SIGTERM / Ctrl-C), 2 when it cannot
start (unreadable or broken app, no API keys, a store that cannot be used, a bind that
fails). ``runs``: 0 on success (``wait``: the response completed), 1 when the response
failed / was cancelled or the server answered an error, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from typing import Any

from harnpy.lifecycle.cli_args import MAX_POSITIVE_INT

__all__ = ["add_subparsers", "parse_bind"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def add_subparsers(sub: Any) -> None:
    """Add ``serve`` and ``runs`` to the ``harnpy`` command parser."""
    s = sub.add_parser(
        "serve",
        help="serve an app's entry points over HTTP (durable runs on a store)",
        description="Serve APP.harn's `pub fn` / `pipeline` entry points over HTTP: start, "
        "poll, stream and cancel durable runs kept in a store. Any number of replicas may "
        "share one store.",
    )
    s.add_argument("app", metavar="APP.harn")
    s.add_argument("--store", metavar="URL", help="sqlite:///PATH or postgresql://... "
                   "(default: HARNPY_STORE, else .harn/harnpy.sqlite3)")  # fmt: skip
    s.add_argument("--bind", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="where to listen (port 0: any free port)")  # fmt: skip
    s.add_argument("--replica-id", metavar="ID", help="lease holder name (default host-pid)")
    s.add_argument("--api-keys", metavar="FILE", help="TOML file of [[key]] user + sha256")
    s.add_argument("--insecure-no-auth", action="store_true",
                   help="serve without API keys (development only)")  # fmt: skip
    s.add_argument("--concurrency", type=int, default=4, help="runs executed at once")
    s.add_argument("--wait-ms", type=int, default=30_000,
                   help="how long POST waits for a run before answering 202")  # fmt: skip
    s.add_argument("--lease-ms", type=int, default=15_000, help="run claim lease")
    s.add_argument("--poll-ms", type=int, default=200, help="idle claim poll interval")
    s.add_argument("--grace-ms", type=int, default=10_000,
                   help="on SIGTERM, how long running runs may finish")  # fmt: skip
    s.add_argument("--max-body-bytes", type=int, default=1024 * 1024)
    s.add_argument("--keep-raw-model-metadata", action="store_true",
                   help="keep raw model answers in completion snapshots")  # fmt: skip
    s.add_argument("--upgrade-code", action="store_true",
                   help="runs parked on an earlier version of the app resume on the current "
                   "files when the functions on their parked stack did not change (default: "
                   "on the code each run started with)")  # fmt: skip
    s.add_argument("--log-level", default="warning",
                   choices=("debug", "info", "warning", "error"),
                   help="server log on stderr (info: every claim, park, resume and commit)")  # fmt: skip
    s.set_defaults(handler=serve_main)

    r = sub.add_parser(
        "runs",
        help="start, poll, stream and cancel runs on a `harnpy serve` server",
        description="Client of `harnpy serve` (HARNPY_SERVE_URL, HARNPY_API_KEY).",
    )
    rs = r.add_subparsers(dest="runs_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--url", help="server URL (default HARNPY_SERVE_URL)")
        p.add_argument("--key", help="API key (default HARNPY_API_KEY)")
        p.add_argument("--session", metavar="ID", help="session id")

    st = rs.add_parser("start", help="start a run; prints the response JSON")
    st.add_argument("entry", nargs="?", help="entry point (default: the only one)")
    st.add_argument("--input", default="null", metavar="JSON", help="input value (JSON)")
    st.add_argument("--background", action="store_true", help="answer at once (202)")
    st.add_argument("--idempotency-key", metavar="KEY")
    st.add_argument("--wait", action="store_true", help="poll until the run is final")
    st.add_argument("--timeout", type=float, default=60.0, help="--wait limit (seconds)")
    common(st)
    g = rs.add_parser("get", help="print a response")
    g.add_argument("id")
    common(g)
    w = rs.add_parser("wait", help="poll until a response is final")
    w.add_argument("id")
    w.add_argument("--timeout", type=float, default=60.0, help="seconds")
    common(w)
    e = rs.add_parser("events", help="print a run's events (NDJSON) until it ends")
    e.add_argument("id")
    e.add_argument("--after", type=int, default=0, metavar="SEQ", help="start after SEQ")
    common(e)
    c = rs.add_parser("cancel", help="cancel a run")
    c.add_argument("id")
    common(c)
    r.set_defaults(handler=runs_main)


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6, ``:8080`` for 127.0.0.1) as ``(host, port)``.

    Raises:
        ValueError: not HOST:PORT with a port 0-65535.
    """
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--bind {value!r}: expected HOST:PORT (e.g. 127.0.0.1:8080)")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def _err(text: str) -> None:
    sys.stderr.write(f"harnpy serve: error: {text}\n")


def serve_main(args: argparse.Namespace) -> int:
    """``harnpy serve`` (module docstring); returns the exit status."""
    from harnpy.serve.auth import AuthError, KeyRing, env_keys
    from harnpy.serve.config import ServeConfig, default_replica_id
    from harnpy.serve.program import AppError, AppProgram
    from harnpy.store import StoreError, configured_store_url, open_store

    logging.getLogger("harnpy.serve").setLevel(args.log_level.upper())
    try:
        host, port = parse_bind(args.bind)
    except ValueError as e:
        _err(str(e))
        return EXIT_USAGE
    for name in ("concurrency", "wait_ms", "lease_ms", "poll_ms", "grace_ms", "max_body_bytes"):
        if getattr(args, name) < (1 if name in ("concurrency", "lease_ms", "poll_ms") else 0):
            _err(f"--{name.replace('_', '-')} must be positive")
            return EXIT_USAGE
        if getattr(args, name) > MAX_POSITIVE_INT:
            _err(f"--{name.replace('_', '-')} must be at most {MAX_POSITIVE_INT}")
            return EXIT_USAGE
    if args.upgrade_code:
        from harnpy.runtime.resume import opt_into_upgrade

        opt_into_upgrade()
    try:
        keys = KeyRing.load(args.api_keys, env_keys(), insecure=args.insecure_no_auth)
    except AuthError as e:
        _err(e.message)
        return EXIT_USAGE
    try:
        program = AppProgram(args.app)
    except AppError as e:
        sys.stderr.write(e.message.rstrip("\n") + "\n")
        return EXIT_USAGE
    try:
        url = configured_store_url(args.store) or configured_store_url("default")
        assert url is not None
        store = open_store(url)
    except StoreError as e:
        _err(str(e))
        return EXIT_USAGE
    config = ServeConfig(
        app_path=program.path,
        store_url=str(url),
        host=host,
        port=port,
        replica_id=args.replica_id or default_replica_id(),
        concurrency=args.concurrency,
        wait_ms=args.wait_ms,
        lease_ms=args.lease_ms,
        poll_ms=args.poll_ms,
        grace_ms=args.grace_ms,
        max_body_bytes=args.max_body_bytes,
        keep_raw_model_metadata=args.keep_raw_model_metadata,
    )
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as e:
        _err(f"cannot listen on {args.bind}: {e.strerror or e}")
        return EXIT_USAGE
    return run_server(config, program, store, keys, sock)


def run_server(config: Any, program: Any, store: Any, keys: Any, sock: socket.socket) -> int:
    """Serve on the bound socket ``sock`` until SIGTERM / SIGINT; returns 0."""
    import uvicorn

    from harnpy.serve.app import ServeApp, create_app

    logging.basicConfig(level=logging.WARNING, format="harnpy serve: %(message)s")
    sa = ServeApp(config, program, store, keys)
    app = create_app(sa)
    uconfig = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=max(1, config.grace_ms // 1000),
        lifespan="on",
    )

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            sa.stopping = True  # event streams end, new runs are refused
            super().handle_exit(sig, frame)
            # a graceful stop is the expected end: exit 0 rather than re-raise the signal
            self._captured_signals.clear()

    server = Server(uconfig)
    bound = sock.getsockname()
    where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    auth = "no authentication" if keys.insecure else f"{len(keys.keys)} API key(s)"
    sys.stderr.write(
        f"harnpy serve: listening on http://{where}:{bound[1]} (replica {config.replica_id}, "
        f"store {store.display}, {auth})\n"
    )
    sys.stderr.flush()
    try:
        server.run(sockets=[sock])
    finally:
        store.close()
    sys.stderr.write(f"harnpy serve: replica {config.replica_id} stopped\n")
    return EXIT_OK


def runs_main(args: argparse.Namespace) -> int:
    """``harnpy runs ...`` (module docstring); returns the exit status."""
    from harnpy.client import Client, ClientError

    def out(data: Any) -> None:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")

    try:
        with Client(args.url, args.key) as c:
            cmd = args.runs_command
            if cmd == "start":
                try:
                    value = json.loads(args.input)
                except ValueError as e:
                    sys.stderr.write(f"harnpy runs: error: --input is not JSON: {e}\n")
                    return EXIT_USAGE
                r = c.start(
                    value,
                    entry=args.entry,
                    session_id=args.session,
                    background=args.background,
                    idempotency_key=args.idempotency_key,
                )
                if args.wait and r.get("status") == "in_progress":
                    r = c.wait(r["id"], args.session, args.timeout)
            elif cmd == "get":
                r = c.get(args.id, args.session)
            elif cmd == "wait":
                r = c.wait(args.id, args.session, args.timeout)
            elif cmd == "cancel":
                r = c.cancel(args.id, args.session)
            else:
                for ev in c.events(args.id, args.session, args.after):
                    out(ev)
                return EXIT_OK
    except ClientError as e:
        sys.stderr.write(f"harnpy runs: error: {e}\n")
        return EXIT_FAIL
    out(r)
    if cmd in ("wait",) or (cmd == "start" and args.wait):
        return EXIT_OK if r.get("status") == "completed" else EXIT_FAIL
    return EXIT_OK
