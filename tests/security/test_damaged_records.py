"""Damaged but authentic snapshots are refused at load time (issue 13 point 8; findings F05
and F06): beyond the seal, every record of a snapshot is validated by its model when it is
loaded — the evaluator's tagged records (``snapshot.py``), the worker envelope, its mock
queue and the agent loop's state (``lifecycle/documents.py``), a REPL session's record — so
a record with a wrong type or a missing key is ``E404`` / ``HARN-SUS-004`` with the file
left unchanged, never an internal error (``E999``) later, never a silent type change.

The snapshots are real ones (a program parked by ``__snapshot_exit`` holding every kind of
value, a worker parked by ``agent_await_resumption``, a REPL ``:save``), re-sealed with the
session's key after each edit (:mod:`tests.sealing`: what a harnpy bug or a version skew
could write). Each mutated snapshot is resumed in a forked child of this process (harnpy
already imported: a few milliseconds each) and must give a clean refusal or a run, within
a timeout. The default test mutates a spread sample of every kind of field (one edit
each); the full campaign (``slow``, on request: ``HARNPY_MUTATION_CAMPAIGN=1``) mutates
every field of every record (list items: the first three and the last) in every way.
"""

from __future__ import annotations

import copy
import io
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import harnpy
from tests.sealing import read_doc, sealed

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child per mutation")

RICH = """struct P { x: int, y }
enum E { A, B(v) }
fn gen() {
  yield 1
  yield 2
  yield 3
}
let g = gen()
let first = g.next()
let p = P { x: 1, y: "s" }
let e = E.B([1, 2])
let st = set(1, 2, 3)
let it = iter([1, 2, 3]).map({ x -> x * 10 })
let it0 = it.next()
let seq = (1 to 10).map({ x -> x + 1 })
let s0 = seq.take(2).to_list()
let r = 1 to 10
let d = {a: 1, b: [1, 2, {c: nil}], "$x": "one"}
let shared = [1, 2]
let two = [shared, shared]
let fl = 0.1
let dur = 1500ms
let at = atomic(5)
let ch = channel("c", 4)
send(ch, "m1")
let rng = rng_seed(42)
let t = spawn { 40 + 2 }
let tr = await(t)
let pr = pair(1, "a")
let pl = println
let caught = try { throw {code: 7} } catch (err) { err }
let z = iter([4, 5]).zip(iter([6, 7]))
let en = iter(["a", "b"]).enumerate()
fn outer(a) {
  let c = { x -> x + a }
  defer { println("deferred") }
  for i in 0 to 3 exclusive {
    if i == 1 { __snapshot_exit("rich.json") }
  }
  return c(1)
}
let v = outer(41)
println([v, g.next(), g.next(), p, e, st, it.next(), it.to_list(), seq.to_list()])
println([r, d, two, fl, dur, atomic_get(at), receive(ch), random_int(rng, 1, 100), tr, pr])
pl("x")
println([caught, z.to_list(), en.to_list(), shared == two[1], first, it0, s0])
"""

WORKER = """tool step(n: int) -> string {
  description "one step"
  append_file("steps.log", "step ${n}\\n")
  return "did ${n}"
}

pipeline main() {
  const result = agent_loop("go", nil, {provider: "mock", tools: [step], max_iterations: 20})
  println("status: ${result.status}")
}
"""

REPLIES = "\n".join(
    [
        '{"tool_calls": [{"id": "s0", "name": "step", "arguments": {"n": 0}}]}',
        '{"tool_calls": [{"id": "p1", "name": "agent_await_resumption", '
        '"arguments": {"reason": "park 1"}}]}',
        '{"tool_calls": [{"id": "s1", "name": "step", "arguments": {"n": 1}}]}',
        '{"tool_calls": [{"id": "p2", "name": "agent_await_resumption", '
        '"arguments": {"reason": "park 2"}}]}',
        '{"text": "finished"}',
    ]
)

REPL_ENTRIES = (
    "fn sq(x) { return x * x }\nvar total = 10\ntotal = total + sq(3)\n"
    "let fns = [sq, { y -> y + total }]\nlet g = (1 to 5).map({ x -> x * 2 })\n"
    "let g0 = g.take(1).to_list()\n:save s.json\n"
)

#: Values put in place of a field (a missing key is the other mutation).
WRONG: list[Any] = [None, 1.5, "x", [], {}, -1]
TIMEOUT = 30.0


# ------------------------------------------------------------------ real snapshots


@pytest.fixture(scope="module")
def parked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """``{kind: (folder, snapshot path relative to it)}`` for a parked program, a parked
    worker and a saved REPL session."""
    out: dict[str, tuple[Path, str]] = {}
    prog = tmp_path_factory.mktemp("prog")
    (prog / "rich.harn").write_text(RICH, encoding="utf-8")
    r = harnpy("run", "rich.harn", cwd=prog)
    assert r.returncode == 3 and (prog / "rich.json").exists(), r.stderr
    out["program"] = (prog, "rich.json")

    work = tmp_path_factory.mktemp("worker")
    (work / "w.harn").write_text(WORKER, encoding="utf-8")
    (work / "replies.jsonl").write_text(REPLIES + "\n", encoding="utf-8")
    r = harnpy(
        "run", "--llm-mock", "replies.jsonl", "w.harn", cwd=work, env={"HARN_WORKER_STATE_DIR": ""}
    )
    assert r.returncode == 0 and "status: suspended" in r.stdout, r.stderr
    (snap,) = (work / ".harn" / "workers").glob("worker_*.json")
    (work / "steps.log").unlink()
    out["worker"] = (work, str(snap.relative_to(work)))

    repl = tmp_path_factory.mktemp("repl")
    r = harnpy("repl", input=REPL_ENTRIES, cwd=repl)
    assert r.returncode == 0 and (repl / "s.json").exists(), r.stderr
    out["repl"] = (repl, "s.json")
    return out


# ------------------------------------------------------------------ mutations


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of every member of every object in ``doc`` (list items: the first three and
    the last, enough to reach every kind of record a list holds)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k != "_seal":
                yield (*prefix, k)
                yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            if i < 3 or i == len(doc) - 1:
                yield from _paths(v, (*prefix, i))


def _kind_of(doc: Any, path: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a path's field is, independent of where its record sits: the record's tag (or
    ``_type``, or the parent key for plain objects) and the field name."""
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    tag = parent.get("$t") or parent.get("_type") or (path[-2] if len(path) > 1 else "")
    return (str(tag), path[-1] if isinstance(path[-1], str) else "[]")


#: How many kinds of field the default test mutates per snapshot (spread over all kinds).
SAMPLE_KINDS = 90


def _edit(doc: Any, path: tuple[Any, ...], what: str, value: Any) -> Any:
    m = copy.deepcopy(doc)
    q = m
    for k in path[:-1]:
        q = q[k]
    if what == "delete":
        del q[path[-1]]
    else:
        q[path[-1]] = copy.deepcopy(value)
    return m


def mutations(doc: Any, sample: bool) -> Iterator[tuple[str, Any]]:
    """``(description, mutated copy)``. Every field (``sample`` False): removed, and
    retyped to each of :data:`WRONG` (skipping a value equal to the original). ``sample``:
    :data:`SAMPLE_KINDS` kinds of field spread over all (a kind: the record's tag and the
    field name, see :func:`_kind_of`), one edit each, alternating between removing the
    field and giving it a value of another JSON type."""
    firsts: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for path in _paths(doc):
        firsts.setdefault(_kind_of(doc, path), path)
    if sample:
        kinds = sorted(firsts, key=repr)
        stride = max(1, len(kinds) // SAMPLE_KINDS)
        for i, kind in enumerate(kinds[::stride][:SAMPLE_KINDS]):
            path = firsts[kind]
            parent = doc
            for k in path[:-1]:
                parent = parent[k]
            cur = parent[path[-1]]
            if i % 2 == 0 and isinstance(parent, dict):
                what, value = "delete", None
            else:
                value = next(w for w in WRONG[1:] if type(w) is not type(cur))
                what = repr(value)
            yield f"{'.'.join(map(str, path))} -> {what}", _edit(doc, path, what, value)
        return
    for path in _paths(doc):
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        cur = parent[path[-1]]
        edits: list[tuple[str, Any]] = [("delete", None)] if isinstance(parent, dict) else []
        edits += [(repr(w), w) for w in WRONG if not (type(w) is type(cur) and w == cur)]
        for what, value in edits:
            yield f"{'.'.join(map(str, path))} -> {what}", _edit(doc, path, what, value)


# ------------------------------------------------------------------ forked resumes


def _child(kind: str, rel: str) -> int:
    if kind == "repl":
        from harnpy.runtime.session import Session
        from harnpy.runtime.snapshot import SnapshotError

        s = Session()
        try:
            s.restore(rel)
        except SnapshotError as e:
            print(f"error[{e.code}]: {e.message}")
            return 2
        from harnpy.diagnostics import DiagnosticError
        from harnpy.runtime.display import display
        from harnpy.runtime.errors import HarnError

        for src in ("total + sq(2)", "len(fns)", "g.to_list()", "g0"):
            try:
                print(display(s.eval(src).value))
            except (HarnError, DiagnosticError) as e:  # a Harn error, reported as the REPL does
                print(s.render_error(e))
        return 0
    from harnpy.cli import main

    try:
        return int(main(["run", "--resume", rel]) or 0)
    except SystemExit as e:
        return int(e.code or 0)


def resume_forked(kind: str, folder: Path, rel: str) -> tuple[str, str]:
    """Resume ``folder/rel`` in a forked child (cwd ``folder``): ``(exit code or
    "TIMEOUT"/"EXCEPTION: ...", combined output)``."""
    out_path = folder / "out.txt"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.chdir(folder)
            fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
            code = str(_child(kind, rel))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            code = f"EXCEPTION: {type(e).__name__}: {e}"
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.write(w, code.encode("utf-8", "replace")[:4000])
        os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], TIMEOUT)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            return "TIMEOUT", ""
        code = os.read(r, 4096).decode()
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    return code, out_path.read_text(errors="replace") if out_path.exists() else ""


def problem(kind: str, base: Path, rel: str, doc: Any) -> str | None:
    """Resume sealed ``doc`` in a copy of ``base``; a description of what went wrong, or
    None for a clean refusal (file unchanged) or a run."""
    with tempfile.TemporaryDirectory(prefix="harnpy-damaged-") as tmp:
        folder = Path(tmp) / "w"
        shutil.copytree(base, folder, symlinks=True)
        data = sealed(doc)
        (folder / rel).write_bytes(data)
        code, out = resume_forked(kind, folder, rel)
        if code in ("TIMEOUT",) or code.startswith("EXCEPTION"):
            return f"{code}\n{out[-600:]}"
        if "E999" in out or "Traceback" in out or "internal error" in out:
            return f"exit {code}: {out[-600:]}"
        if code not in ("0", "3") and (folder / rel).read_bytes() != data:
            return f"exit {code}, and the refused snapshot was changed: {out[-300:]}"
    return None


def campaign(kind: str, parked: dict[str, tuple[Path, str]], sample: bool) -> int:
    base, rel = parked[kind]
    doc = read_doc(base / rel)
    bad = []
    n = 0
    for what, mutated in mutations(doc, sample):
        n += 1
        why = problem(kind, base, rel, mutated)
        if why is not None:
            bad.append(f"{what}: {why}")
    print(f"{kind}: {n} mutations, {len(bad)} bad")
    assert not bad, f"{len(bad)} of {n} mutations:\n" + "\n".join(bad[:20])
    return n


@pytest.mark.parametrize("kind", ["program", "worker", "repl"])
def test_fields_of_every_kind_of_record_retyped_or_removed_give_clean_load_errors(
    kind: str, parked: dict[str, tuple[Path, str]]
) -> None:
    assert campaign(kind, parked, sample=True) >= 60


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("HARNPY_MUTATION_CAMPAIGN"),
    reason="thousands of resumes (~20 min): set HARNPY_MUTATION_CAMPAIGN=1 to run it",
)
@pytest.mark.parametrize("kind", ["program", "worker", "repl"])
def test_every_field_of_every_record_retyped_or_removed_is_a_clean_load_error(
    kind: str, parked: dict[str, tuple[Path, str]]
) -> None:
    campaign(kind, parked, sample=False)


# ------------------------------------------------------------------ the findings


def _resume_cli(folder: Path, rel: str) -> subprocess.CompletedProcess[str]:
    return harnpy("run", "--resume", rel, cwd=folder)


def _edited(parked: dict[str, tuple[Path, str]], kind: str, tmp: Path, edit: Any) -> Path:
    base, rel = parked[kind]
    folder = tmp / kind
    shutil.copytree(base, folder, symlinks=True)
    doc = read_doc(folder / rel)
    edit(doc)
    (folder / rel).write_bytes(sealed(doc))
    return folder


def _assert_refused(folder: Path, rel: str, code: str) -> str:
    before = (folder / rel).read_bytes()
    r = _resume_cli(folder, rel)
    assert f"error[{code}]" in r.stderr, r.stderr
    assert "E999" not in r.stderr and "Traceback" not in r.stderr
    assert r.returncode in (1, 2)
    assert (folder / rel).read_bytes() == before  # left as it was
    return r.stderr


def _global(doc: dict[str, Any], name: str) -> Any:
    (mod,) = [g for g in doc["globals"].values() if name in g]
    return mod


def _record(doc: dict[str, Any], name: str) -> Any:
    """The record global ``name`` holds (its heap record when it is shared)."""
    v = _global(doc, name)[name]
    return doc["heap"][v["$ref"]] if isinstance(v, dict) and "$ref" in v else v


def test_f05_an_iterator_stage_of_another_kind_is_refused(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        _record(doc, "it")["stages"][0][0] = 1.5

    err = _assert_refused(_edited(parked, "program", tmp_path, edit), "rich.json", "E404")
    assert "unknown stage 1.5" in err


def test_f05_a_lazy_sequence_memo_that_is_not_a_list_is_refused(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        _record(doc, "seq")["memo"] = ""

    err = _assert_refused(_edited(parked, "program", tmp_path, edit), "rich.json", "E404")
    assert "not a list" in err


def test_f06_a_reference_with_a_flipped_bit_does_not_become_a_dict(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        two = _global(doc, "two")["two"]
        assert "$ref" in two[0]  # the shared list is a heap reference
        two[0] = {"$rdf": two[0]["$ref"]}

    err = _assert_refused(_edited(parked, "program", tmp_path, edit), "rich.json", "E404")
    assert "'$rdf'" in err


def test_f06_a_renamed_global_is_refused_not_run(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        g = _global(doc, "outer")
        g["outel"] = g.pop("outer")

    err = _assert_refused(_edited(parked, "program", tmp_path, edit), "rich.json", "E404")
    assert "`outel`" in err


def test_f05_a_loop_state_without_its_token_count_is_refused_before_the_claim(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        heap = doc["harnpy_thread"]["heap"]
        states = [h for h in heap if isinstance(h, dict) and h.get("_type") == "agent_loop_state"]
        assert states
        for s in states:
            del s["output_tokens"]

    rel = parked["worker"][1]
    folder = _edited(parked, "worker", tmp_path, edit)
    err = _assert_refused(folder, rel, "HARN-SUS-004")
    assert "output_tokens" in err
    assert not (folder / "steps.log").exists()  # no step ran
    assert "suspended" in read_doc(folder / rel)["status"]


def test_f06_a_mock_queue_under_another_key_is_refused_not_dropped(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["llm_mock"]["aueue"] = doc["llm_mock"].pop("queue")

    rel = parked["worker"][1]
    folder = _edited(parked, "worker", tmp_path, edit)
    err = _assert_refused(folder, rel, "HARN-SUS-004")
    assert "llm_mock.queue" in err
    assert not (folder / "steps.log").exists()


def test_f06_a_renamed_library_function_is_refused_and_the_park_kept(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        g = doc["harnpy_thread"]["globals"]["std/agent/_loop"]
        g["__agent_turl"] = g.pop("__agent_turn")

    rel = parked["worker"][1]
    folder = _edited(parked, "worker", tmp_path, edit)
    err = _assert_refused(folder, rel, "HARN-SUS-004")
    assert "__agent_turl" in err
    assert read_doc(folder / rel)["status"] == "suspended"


def test_the_undamaged_snapshots_resume(parked: dict[str, tuple[Path, str]]) -> None:
    for kind in ("program", "worker", "repl"):
        base, rel = parked[kind]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "w"
            shutil.copytree(base, folder, symlinks=True)
            code, out = resume_forked(kind, folder, rel)
            assert code in ("0", "3"), (kind, code, out)
            if kind == "program":
                assert "deferred" in out and "[42, " in out
            elif kind == "worker":
                assert (folder / "steps.log").read_text() == "step 1\n"
            else:
                assert out.splitlines() == ["23", "2", "[2, 4, 6, 8, 10]", "[2]"], out


def _tagged(doc: Any) -> Iterator[dict[str, Any]]:
    """Every tagged record (``{"$t": ...}``) in ``doc``, outermost first."""
    if isinstance(doc, dict):
        if "$t" in doc:
            yield doc
        for v in doc.values():
            yield from _tagged(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _tagged(v)


def test_a_record_with_a_field_harnpy_never_writes_is_refused(
    parked: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    # for every tag the rich program's snapshot holds: its first record with one more field
    # (not written by harnpy: an edit or a damage) is refused at load, not ignored
    base, rel = parked["program"]
    tags = sorted({r["$t"] for r in _tagged(read_doc(base / rel))})
    assert {"closure", "frame", "struct", "iter", "set"} <= set(tags), tags
    for tag in tags:

        def edit(doc: dict[str, Any], tag: str = tag) -> None:
            next(r for r in _tagged(doc) if r["$t"] == tag)["hidden"] = 1

        err = _assert_refused(_edited(parked, "program", tmp_path / tag, edit), rel, "E404")
        assert f"a {tag!r} record has a field harnpy does not write: 'hidden'" in err, err
