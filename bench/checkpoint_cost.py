"""Benchmark: the cost of one checkpoint per turn for an agent with a long transcript
(issue 10, "Tests and measurements"; issue 15, long transcripts).

A worker whose transcript already holds ``--messages`` messages (built by real agent
turns: an assistant message with a tool call and the tool's result) takes ``--turns`` more
turns and checkpoints after each one. Measured per checkpoint: wall milliseconds and the
bytes written, on

* **files**: an agent worker (``sub_agent_run``, background) parking on a model-issued
  ``agent_await_resumption`` and resumed with ``resume_agent`` — the directory snapshot
  ``harnpy run`` writes (``.harn/workers``: the snapshot file, fsynced and renamed, plus
  the transcript lines appended beside it). Timed: the snapshot write of each park
  (``persist``); bytes: the snapshot file (rewritten) plus what the other files grew by.
* **sqlite** and **postgresql**: the whole program parked on a durable waitpoint inside a
  tool that ``agent_loop`` calls (``std/waitpoint``), one park per turn, completed and
  resumed by the script (``resume_checkpoint``, a fresh runtime each time, as another
  process would). Timed: the park (snapshot, seal, sources, ``put_checkpoint`` with its
  transcript rows and waiter rows, the readiness check); bytes: the str/bytes parameters
  of every statement the park sends to the database.
* **langgraph** (the anchor): the same turns through LangGraph's PostgreSQL checkpointer
  (``langgraph-checkpoint-postgres``, ``PostgresSaver``, ``durability="sync"``): a graph
  ``agent -> tools -> agent`` on ``MessagesState`` whose tools node asks for approval with
  ``interrupt()`` and is resumed with ``Command(resume=...)`` — LangGraph's way of parking
  inside a tool. Timed: the checkpointer's ``put`` / ``put_writes`` calls of one turn (not
  the graph around them); bytes: the str/bytes/JSON parameters of its statements.

Each repetition runs every backend once (alternately), so the ratios of one table come
from the same minutes of a shared machine: per repetition the median of its turns; the
table shows the median and min-max over ``--reps`` repetitions and the paired ratio to
LangGraph. Then bytes per turn at ``--sizes`` messages (default 100, 1,000 and 10,000),
one repetition each, to show whether they grow with the transcript.

LangGraph runs in its own environment only: ``bench/.venv-langgraph`` (gitignored), made
by this script on first use (``python -m venv`` + ``pip install langgraph
langgraph-checkpoint-postgres "psycopg[binary]"``); when that fails, or with
``--no-langgraph``, the anchor is skipped with a message. PostgreSQL comes from
``HARNPY_TEST_POSTGRES`` (default ``postgresql://postgres@127.0.0.1:5432/test``): the
script creates one database for the harnpy store and one for LangGraph and drops both at
the end (PostgreSQL rows are skipped when the server cannot be reached).

Usage: .venv/bin/python bench/checkpoint_cost.py [--messages 1000] [--turns 10] [--reps 3]
       [--sizes 100,1000,10000] [--no-langgraph] [--backends files,sqlite,postgresql]

Not a test: it only prints figures.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LG_VENV = REPO / "bench" / ".venv-langgraph"
LG_PACKAGES = ["langgraph", "langgraph-checkpoint-postgres", "psycopg[binary]"]
PG_ENV = "HARNPY_TEST_POSTGRES"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"

# ----------------------------------------------------------------------------- the turns

#: The texts of one turn, shared by every backend (the LangGraph child gets them as JSON).
LOOKUP_TEXT = "Looking up item {i} before I answer the question."
LOOKUP_RESULT = "found: the quarterly figures for region {r} item {i} are stable; see the summary."
PARK_TEXT = "Waiting for an editor to approve item {i} before I publish it."
PARK_RESULT = "approved: item {i}"

HARN_COMMON = """
fn lookup_reply(i) {
  return {text: "Looking up item " + to_string(i) + " before I answer the question.",
    tool_calls: [{id: "call_" + to_string(i), name: "lookup",
      arguments: {q: "region " + to_string(i % 7) + " item " + to_string(i)}}]}
}
"""

#: A program parked on a durable waitpoint inside a tool, once per turn (sqlite, postgresql).
STORE_PROGRAM = (
    HARN_COMMON
    + """
import { create, wait } from "std/waitpoint"

fn park_reply(i) {
  return {text: "Waiting for an editor to approve item " + to_string(i) + " before I publish it.",
    tool_calls: [{id: "park_" + to_string(i), name: "approve", arguments: {item: i}}]}
}

tool lookup(q: string) -> string {
  description "Look something up"
  return "found: the quarterly figures for " + q + " are stable; see the summary."
}

tool approve(item: int) -> string {
  description "Wait until an editor approves the item"
  let wp = create({id: "bench-" + to_string(item)})
  let done = wait(wp)
  if item + 1 < to_int(argv()[1]) {
    llm_mock(park_reply(item + 1))
  } else {
    llm_mock({text: "all approved"})
  }
  return "approved: item " + to_string(item)
}

pipeline main() {
  const warm = to_int(argv()[0])
  const parks = to_int(argv()[1])
  for i in range(warm) {
    llm_mock(lookup_reply(i))
  }
  llm_mock(park_reply(0))
  let r = agent_loop("Collect the quarterly figures, then publish them.", nil,
    {provider: "mock", tools: tool_registry([lookup, approve]),
     max_iterations: warm + parks + 5})
  println(r.status + " " + to_string(len(r.transcript.messages)))
}
"""
)

#: An agent worker parking on agent_await_resumption once per turn (files).
FILES_PROGRAM = (
    HARN_COMMON
    + """
fn tools() {
  return tool_define(tool_registry(), "lookup", "Look something up", {
    parameters: {q: "string"},
    handler: { args -> "found: the quarterly figures for " + args.q + " are stable; see the summary." },
  })
}

fn park_reply(i) {
  return {text: "Waiting for an editor to approve item " + to_string(i) + " before I publish it.",
    tool_calls: [{id: "park_" + to_string(i), name: "agent_await_resumption",
      arguments: {reason: "approve item " + to_string(i)}}]}
}

pipeline main() {
  const warm = to_int(argv()[0])
  const parks = to_int(argv()[1])
  for i in range(warm) {
    llm_mock(lookup_reply(i))
  }
  llm_mock(park_reply(0))
  const h = sub_agent_run("Collect the quarterly figures, then publish them.", {
    provider: "mock", background: true, tools: tools(),
    max_iterations: warm + parks + 5, session_id: "bench"})
  var s = wait_agent(h)
  for c in range(parks - 1) {
    llm_mock(park_reply(c + 1))
    resume_agent(h)
    s = wait_agent(h)
  }
  println(s.status)
}
"""
)


def warm_turns(messages: int) -> int:
    """Lookup turns before the first checkpoint so the transcript holds about ``messages``
    messages then (the task message plus two per turn)."""
    return max(0, (messages - 1) // 2)


# ----------------------------------------------------------------------------- measuring


def _param_bytes(params: Any) -> int:
    """Bytes of the str / bytes / JSON parameters of one statement (ints not counted)."""
    if params is None:
        return 0
    if isinstance(params, dict):
        params = list(params.values())
    n = 0
    for p in params:
        if isinstance(p, (bytes, bytearray, memoryview)):
            n += len(p)
        elif isinstance(p, str):
            n += len(p.encode("utf-8"))
        elif hasattr(p, "obj") and type(p).__name__ in ("Jsonb", "Json"):
            n += len(json.dumps(p.obj, default=str).encode("utf-8"))
    return n


class Meter:
    """Collects (ms, bytes) per checkpoint while ``active``."""

    def __init__(self) -> None:
        self.active = False
        self.bytes = 0
        self.samples: list[tuple[float, int]] = []

    @contextmanager
    def checkpoint(self) -> Iterator[None]:
        """Time one checkpoint and count the bytes recorded meanwhile."""
        self.active = True
        self.bytes = 0
        t0 = time.perf_counter()
        try:
            yield
        finally:
            ms = (time.perf_counter() - t0) * 1000
            self.active = False
            self.samples.append((ms, self.bytes))


def _harnpy_imports() -> None:
    sys.path.insert(0, str(REPO))
    import harnpy.lifecycle.suspend  # noqa: F401 - before parking (circular imports)
    import harnpy.runtime.runtime  # noqa: F401 - first: it loads the lifecycle in order


def run_store(url: str, messages: int, turns: int) -> list[tuple[float, int]]:
    """The sqlite / postgresql measurement (module docstring); returns (ms, bytes) per park."""
    from harnpy.lifecycle.waitpoints import durable
    from harnpy.lifecycle.waitpoints.state import state_of
    from harnpy.runtime.errors import SnapshotExit
    from harnpy.runtime.runtime import Runtime
    from harnpy.store import open_store

    store = open_store(url)
    meter = Meter()
    real_exec = store.backend.execute

    def counting_exec(raw: Any, sql: str, params: Any) -> Any:
        if meter.active:
            meter.bytes += _param_bytes(params)
        return real_exec(raw, sql, params)

    store.backend.execute = counting_exec  # type: ignore[method-assign]
    real_many = getattr(store.backend, "execute_many", None)

    def counting_many(raw: Any, sql: str, rows: Any) -> Any:
        rows = list(rows)
        if meter.active:
            meter.bytes += sum(_param_bytes(p) for p in rows)
        assert real_many is not None
        return real_many(raw, sql, rows)

    if real_many is not None:
        store.backend.execute_many = counting_many  # type: ignore[method-assign]
    real_park = durable.park

    def timed_park(*a: Any, **k: Any) -> Any:
        with meter.checkpoint():
            return real_park(*a, **k)

    durable.park = timed_park  # type: ignore[assignment]
    out: list[str] = []
    try:
        rt = Runtime(argv=[str(warm_turns(messages)), str(turns)], stdout=out.append,
                     stderr=out.append)  # fmt: skip
        state_of(rt).use_store(store)
        try:
            rt.run_module(rt.load_main(str(_program_file("store", STORE_PROGRAM)), STORE_PROGRAM))
            raise RuntimeError(f"the benchmark program did not park: {''.join(out)}")
        except SnapshotExit:
            pass
        worker_id = state_of(rt).worker_id()
        for i in range(turns):
            store.complete_waitpoint(f"bench-{i}", "yes")
            r = durable.resume_checkpoint(store, worker_id, stdout=out.append, stderr=out.append)
            want = "parked" if i + 1 < turns else "completed"
            if r is None or r.status != want:
                raise RuntimeError(f"resume {i}: {r} ({''.join(out)[-2000:]})")
    finally:
        durable.park = real_park  # type: ignore[assignment]
        store.backend.execute = real_exec  # type: ignore[method-assign]
        if real_many is not None:
            store.backend.execute_many = real_many  # type: ignore[method-assign]
        close = getattr(store, "close", None)
        if callable(close):
            close()
    return meter.samples


_PROGRAM_DIR: str | None = None


def _program_file(name: str, text: str) -> Path:
    """The program written to a file of the benchmark's temp directory (a park stores the
    sources it runs; a resume finds them there)."""
    assert _PROGRAM_DIR is not None
    p = Path(_PROGRAM_DIR) / f"{name}.harn"
    if not p.exists():
        p.write_text(text, encoding="utf-8")
    return p


def _sizes(d: str) -> dict[str, int]:
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            try:
                out[p] = os.stat(p).st_size
            except OSError:
                pass
    return out


def run_files(messages: int, turns: int) -> list[tuple[float, int]]:
    """The files measurement (module docstring); returns (ms, bytes) per park."""
    from harnpy.lifecycle import parking
    from harnpy.runtime.runtime import Runtime

    state = tempfile.mkdtemp(prefix="harnpy-ckbench-workers-", dir=_PROGRAM_DIR)
    old_env = os.environ.get("HARN_WORKER_STATE_DIR")
    os.environ["HARN_WORKER_STATE_DIR"] = state
    meter = Meter()
    real_persist = parking.persist

    def timed_persist(runtime: Any, rec: Any, **k: Any) -> Any:
        if k.get("thread") is None:
            return real_persist(runtime, rec, **k)
        before = _sizes(_PROGRAM_DIR or state)
        with meter.checkpoint():
            ok = real_persist(runtime, rec, **k)
        after = _sizes(_PROGRAM_DIR or state)
        snap = os.path.abspath(rec.snapshot_path)
        written = 0
        for p, size in after.items():
            if os.path.abspath(p) == snap:
                written += size  # rewritten whole (temp file + rename)
            else:
                written += max(0, size - before.get(p, 0))
        ms, _ = meter.samples[-1]
        meter.samples[-1] = (ms, written)
        return ok

    parking.persist = timed_persist  # type: ignore[assignment]
    out: list[str] = []
    try:
        rt = Runtime(argv=[str(warm_turns(messages)), str(turns)], stdout=out.append,
                     stderr=out.append)  # fmt: skip
        rt.run_module(rt.load_main(str(_program_file("files", FILES_PROGRAM)), FILES_PROGRAM))
        if not out or out[-1].strip() != "suspended":
            raise RuntimeError(f"the files program ended with {''.join(out)[-2000:]}")
    finally:
        parking.persist = real_persist  # type: ignore[assignment]
        if old_env is None:
            os.environ.pop("HARN_WORKER_STATE_DIR", None)
        else:
            os.environ["HARN_WORKER_STATE_DIR"] = old_env
        shutil.rmtree(state, ignore_errors=True)
    return meter.samples


# ----------------------------------------------------------------------------- LangGraph


LG_CHILD = r"""
import json, sys, time
import psycopg
from psycopg.rows import dict_row
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

args = json.loads(sys.argv[1])
T = args["texts"]
meter = {"active": False, "bytes": 0, "ms": 0.0}

from typing import Any
# _PARAM_BYTES: the parent's _param_bytes, pasted here (the same count on both sides)

class Counting(psycopg.Cursor):
    def execute(self, query, params=None, **kw):
        if meter["active"]:
            meter["bytes"] += _param_bytes(params)
        return super().execute(query, params, **kw)
    def executemany(self, query, params_seq, **kw):
        params_seq = list(params_seq)
        if meter["active"]:
            meter["bytes"] += sum(_param_bytes(p) for p in params_seq)
        return super().executemany(query, params_seq, **kw)

class Saver(PostgresSaver):
    def _timed(self, f, *a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            if meter["active"]:
                meter["ms"] += (time.perf_counter() - t0) * 1000
    def put(self, *a, **k):
        return self._timed(super().put, *a, **k)
    def put_writes(self, *a, **k):
        return self._timed(super().put_writes, *a, **k)

def lookup_pair(i):
    ai = AIMessage(content=T["lookup_text"].format(i=i), tool_calls=[{"id": f"call_{i}",
        "name": "lookup", "args": {"q": f"region {i % 7} item {i}"}}])
    tool = ToolMessage(content=T["lookup_result"].format(i=i, r=i % 7), tool_call_id=f"call_{i}")
    return [ai, tool]

def agent(state):
    n = sum(1 for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id.startswith("park_"))
    if n >= args["turns"]:
        return {"messages": [AIMessage(content="all approved")]}
    return {"messages": [AIMessage(content=T["park_text"].format(i=n), tool_calls=[{
        "id": f"park_{n}", "name": "approve", "args": {"item": n}}])]}

def tools(state):
    call = state["messages"][-1].tool_calls[0]
    answer = interrupt({"approve": call["args"]["item"]})
    return {"messages": [ToolMessage(content=T["park_result"].format(i=call["args"]["item"]),
                                     tool_call_id=call["id"])]}

def route(state):
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else END

g = StateGraph(MessagesState)
g.add_node("agent", agent)
g.add_node("tools", tools)
g.add_edge(START, "agent")
g.add_conditional_edges("agent", route, ["tools", END])
g.add_edge("tools", "agent")

with psycopg.connect(args["url"], autocommit=True, prepare_threshold=0, row_factory=dict_row,
                     cursor_factory=Counting) as conn:
    saver = Saver(conn)
    saver.setup()
    app = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "bench-" + str(args["rep"])}}
    history = [HumanMessage(content="Collect the quarterly figures, then publish them.")]
    for i in range(args["warm"]):
        history += lookup_pair(i)
    app.invoke({"messages": history}, cfg, durability="sync")  # first park (not measured)
    samples = []
    for i in range(args["turns"] - 1):
        meter.update(active=True, bytes=0, ms=0.0)
        app.invoke(Command(resume="yes"), cfg, durability="sync")
        meter["active"] = False
        samples.append([meter["ms"], meter["bytes"]])
    n = len(app.get_state(cfg).values["messages"])
print(json.dumps({"samples": samples, "messages": n}))
"""


def langgraph_python(allow_install: bool) -> tuple[str | None, str]:
    """The LangGraph environment's python (made when missing), or None and why not."""
    py = LG_VENV / "bin" / "python"
    probe = "import langgraph.checkpoint.postgres, langgraph.graph, psycopg"
    if py.exists() and subprocess.run([str(py), "-c", probe], capture_output=True).returncode == 0:
        return str(py), ""
    if not allow_install:
        return None, f"{LG_VENV} has no LangGraph"
    print(f"(installing {' '.join(LG_PACKAGES)} into {LG_VENV} ...)", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(LG_VENV)], check=True)
        r = subprocess.run(
            [str(py), "-m", "pip", "install", "-q", *LG_PACKAGES],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"cannot make {LG_VENV}: {e}"
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
        return None, f"pip install {' '.join(LG_PACKAGES)} failed: {tail[0]}"
    if subprocess.run([str(py), "-c", probe], capture_output=True).returncode != 0:
        return None, "LangGraph installed but does not import"
    return str(py), ""


def run_langgraph(
    py: str, url: str, messages: int, turns: int, rep: int
) -> list[tuple[float, int]]:
    """The LangGraph measurement in its own environment (module docstring)."""
    texts = {
        "lookup_text": LOOKUP_TEXT,
        "lookup_result": LOOKUP_RESULT,
        "park_text": PARK_TEXT,
        "park_result": PARK_RESULT,
    }
    # one park more than measured: the first invoke parks without being timed, as harnpy's
    # first park is timed but the resumes that follow are the turns compared
    arg = {"url": url, "warm": warm_turns(messages), "turns": turns + 1, "rep": rep, "texts": texts}
    child = LG_CHILD.replace("# _PARAM_BYTES", inspect.getsource(_param_bytes) + "\n#")
    r = subprocess.run([py, "-c", child, json.dumps(arg)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"the LangGraph child failed:\n{r.stderr[-3000:]}")
    data = json.loads(r.stdout.strip().splitlines()[-1])
    return [(float(ms), int(b)) for ms, b in data["samples"]]


# ----------------------------------------------------------------------------- PostgreSQL


@contextmanager
def pg_databases(n: int) -> Iterator[list[str] | str]:
    """``n`` fresh databases (their URLs), dropped at the end; or the reason there are none."""
    base = os.environ.get(PG_ENV) or PG_DEFAULT
    try:
        import psycopg
    except ImportError:
        yield "psycopg is not installed"
        return
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=3)
    except psycopg.Error as e:
        yield f"PostgreSQL is not reachable at {base} ({' '.join(str(e).split())})"
        return
    from urllib.parse import urlsplit, urlunsplit

    names = [f"harnpy_ckbench_{uuid.uuid4().hex[:10]}" for _ in range(n)]
    try:
        for name in names:
            admin.execute(f'CREATE DATABASE "{name}"')
        parts = urlsplit(base)
        yield [urlunsplit(parts._replace(path="/" + name)) for name in names]
    finally:
        for name in names:
            try:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except psycopg.Error as e:
                print(f"warning: could not drop database {name}: {e}", file=sys.stderr)
        admin.close()


# ----------------------------------------------------------------------------- report


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _rng(xs: list[float], fmt: str) -> str:
    return f"{format(min(xs), fmt)}-{format(max(xs), fmt)}" if xs else "-"


def main() -> int:
    """Run the benchmark and print the tables; returns the exit code."""
    global _PROGRAM_DIR
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--turns", type=int, default=10, help="checkpointed turns per repetition")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--sizes", default="100,1000,10000", help="'' to skip the size table")
    p.add_argument("--size-turns", type=int, default=3)
    p.add_argument("--backends", default="files,sqlite,postgresql")
    p.add_argument("--no-langgraph", action="store_true")
    p.add_argument("--no-install", action="store_true", help="never make the LangGraph venv")
    args = p.parse_args()
    _harnpy_imports()
    backends = [b for b in args.backends.split(",") if b]
    lg_py, why = (
        (None, "--no-langgraph") if args.no_langgraph else langgraph_python(not args.no_install)
    )
    if lg_py is None:
        print(f"LangGraph anchor skipped: {why}")
    _PROGRAM_DIR = tempfile.mkdtemp(prefix="harnpy-ckbench-")
    need_pg = "postgresql" in backends or lg_py is not None
    try:
        with pg_databases(2 if need_pg else 0) as dbs:
            if isinstance(dbs, str):
                print(f"PostgreSQL rows skipped: {dbs}")
                backends = [b for b in backends if b != "postgresql"]
                lg_py = None
                dbs = []
            return _run(args, backends, lg_py, dbs)
    finally:
        shutil.rmtree(_PROGRAM_DIR, ignore_errors=True)


def _runner(
    name: str, dbs: list[str], lg_py: str | None
) -> Callable[[int, int, int], list[tuple[float, int]]]:
    assert _PROGRAM_DIR is not None
    if name == "files":
        return lambda m, t, rep: run_files(m, t)
    if name == "sqlite":

        def sqlite(m: int, t: int, rep: int) -> list[tuple[float, int]]:
            path = os.path.join(_PROGRAM_DIR or ".", f"store-{uuid.uuid4().hex[:8]}.sqlite3")
            try:
                return run_store(f"sqlite://{path}", m, t)
            finally:
                for suffix in ("", "-wal", "-shm"):
                    with_suffix = path + suffix
                    if os.path.exists(with_suffix):
                        os.unlink(with_suffix)

        return sqlite
    if name == "postgresql":

        def pg(m: int, t: int, rep: int) -> list[tuple[float, int]]:
            schema = f"b_{uuid.uuid4().hex[:10]}"
            import psycopg

            with psycopg.connect(dbs[0], autocommit=True) as c:
                c.execute(f'CREATE SCHEMA "{schema}"')
            from urllib.parse import quote

            return run_store(f"{dbs[0]}?options={quote(f'-csearch_path={schema}')}", m, t)

        return pg
    assert lg_py is not None
    return lambda m, t, rep: run_langgraph(lg_py, dbs[1], m, t, rep)


def _run(args: Any, backends: list[str], lg_py: str | None, dbs: list[str]) -> int:
    names = backends + (["langgraph"] if lg_py else [])
    runners = {n: _runner(n, dbs, lg_py) for n in names}
    # per repetition and backend: median ms and median bytes over its turns
    ms: dict[str, list[float]] = {n: [] for n in names}
    by: dict[str, list[float]] = {n: [] for n in names}
    print(
        f"checkpoint cost: {args.messages} messages, {args.turns} checkpointed turns, "
        f"{args.reps} repetitions",
        flush=True,
    )
    for rep in range(args.reps):
        for n in names:
            samples = runners[n](args.messages, args.turns, rep)
            later = samples[1:] if n != "langgraph" and len(samples) > 1 else samples
            ms[n].append(_med([s[0] for s in later]))
            by[n].append(_med([float(s[1]) for s in later]))
            print(f"  rep {rep + 1} {n:10s} {ms[n][-1]:8.2f} ms  {by[n][-1]:10.0f} B", flush=True)
    print()
    hdr = f"{'backend':12s}{'ms/turn':>10s}{'min-max':>16s}{'bytes/turn':>12s}{'min-max':>20s}"
    if lg_py:
        hdr += f"{'ms ratio':>10s}{'min-max':>13s}{'bytes ratio':>13s}"
    print(hdr)
    for n in names:
        line = (
            f"{n:12s}{_med(ms[n]):10.2f}{_rng(ms[n], '.2f'):>16s}"
            f"{_med(by[n]):12.0f}{_rng(by[n], '.0f'):>20s}"
        )
        if lg_py:
            r = [a / b for a, b in zip(ms[n], ms["langgraph"]) if b > 0]
            rb = [a / b for a, b in zip(by[n], by["langgraph"]) if b > 0]
            line += f"{_med(r):10.2f}{_rng(r, '.2f'):>13s}{_med(rb):13.2f}"
        print(line)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    if sizes:
        print()
        print(f"bytes written per turn by transcript length ({args.size_turns} turns, 1 rep)")
        print(f"{'backend':12s}" + "".join(f"{s:>14d}" for s in sizes) + f"{'ms at largest':>16s}")
        for n in names:
            cells = []
            last_ms = float("nan")
            for s in sizes:
                try:
                    samples = runners[n](s, args.size_turns, 100 + s)
                except Exception as e:  # noqa: BLE001 - e.g. over the 4 MiB checkpoint cap
                    cells.append(f"{'failed':>14s}")
                    print(f"  ({n} at {s} messages: {str(e).splitlines()[-1][:300]})")
                    continue
                later = samples[1:] if n != "langgraph" and len(samples) > 1 else samples
                cells.append(f"{_med([float(x[1]) for x in later]):14.0f}")
                last_ms = _med([x[0] for x in later])
            print(f"{n:12s}" + "".join(cells) + f"{last_ms:16.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
