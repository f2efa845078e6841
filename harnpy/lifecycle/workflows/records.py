"""Run records: what one workflow run did, as plain data.

A run record is ``{_type: "run_record", id, workflow_id, workflow_name, task, status,
started_at, finished_at, stages: [stage], transitions: [{from, to, branch}], checkpoints:
[{id, node_id, stage_id, ready_nodes, completed_nodes}], artifacts: [artifact], policy,
metadata, replay_fixture, persisted_path, observability}`` (``observability`` is derived
from the stages: :func:`harnpy.lifecycle.compaction.run_observability`); a stage is ``{id, node_id, kind, status,
outcome, branch, started_at, finished_at, visible_text, transcript, artifacts,
consumed_artifact_ids, verification, metadata}``.

A *replay fixture* (``run_record_fixture``) states what a run is expected to do:
``{_type: "replay_fixture", id, source_run_id, workflow_id, expected_status,
stage_assertions: [{node_id, expected_status, expected_outcome, expected_branch}]}``;
``run_record_eval`` checks a run against one and ``run_record_eval_suite`` checks many.

Records read from files are untrusted: :func:`check_run_record` validates the shape and
``run_record_load`` reads at most :data:`MAX_RECORD_BYTES`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from harnpy.lifecycle._common import now_rfc3339, thrown
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin

#: Largest run-record file ``run_record_load`` reads (bytes).
MAX_RECORD_BYTES = 32 * 1024 * 1024

_STAGE_DEFAULTS: dict[str, Any] = {
    "kind": "stage",
    "status": "completed",
    "outcome": "success",
    "branch": None,
    "started_at": None,
    "finished_at": None,
    "visible_text": None,
    "transcript": None,
    "artifacts": [],
    "consumed_artifact_ids": [],
    "verification": None,
    "metadata": {},
}


def new_id(runtime: Any, prefix: str) -> str:
    """A fresh time-ordered id ``<prefix>_<uuid7>``."""
    from harnpy.lifecycle.services import services

    return f"{prefix}_{services(runtime).ids.uuid7(runtime)}"


def normalize_stage(stage: Any, where: str = "run_record") -> dict[str, Any]:
    """A stage dict with every field present (defaults filled in).

    Raises:
        HarnThrow: the stage is not a dict or has no ``node_id``.
    """
    if type(stage) is not dict:
        raise thrown(f"{where}: a stage must be a dict, got {display(stage)}")
    if type(stage.get("node_id")) is not str:
        raise thrown(f"{where}: every stage needs a string node_id")
    out = {**_STAGE_DEFAULTS, **stage}
    out.setdefault("id", f"stage_{stage['node_id']}")
    for key in ("artifacts", "consumed_artifact_ids"):
        if type(out[key]) is not list:
            raise thrown(f"{where}: stage {stage['node_id']!r}: {key} must be a list")
    if type(out["metadata"]) is not dict:
        raise thrown(f"{where}: stage {stage['node_id']!r}: metadata must be a dict")
    return out


def check_run_record(v: Any, where: str) -> dict[str, Any]:
    """``v`` normalized as a run record (missing fields defaulted).

    Raises:
        HarnThrow: not a dict, a ``_type`` other than ``run_record``, or malformed stages.
    """
    if type(v) is not dict:
        raise thrown(f"{where}: expected a run record dict, got {display(v)}")
    if v.get("_type", "run_record") != "run_record":
        raise thrown(f'{where}: expected _type "run_record", got {display(v.get("_type"))}')
    stages = v.get("stages", [])
    if type(stages) is not list:
        raise thrown(f"{where}: stages must be a list")
    out: dict[str, Any] = {
        "_type": "run_record",
        "id": v.get("id"),
        "workflow_id": v.get("workflow_id"),
        "workflow_name": v.get("workflow_name"),
        "task": v.get("task"),
        "status": v.get("status", "completed"),
        "started_at": v.get("started_at"),
        "finished_at": v.get("finished_at"),
        "transitions": v.get("transitions", []),
        "checkpoints": v.get("checkpoints", []),
        "artifacts": v.get("artifacts", []),
        "policy": v.get("policy"),
        "metadata": v.get("metadata", {}),
        "replay_fixture": v.get("replay_fixture"),
        "persisted_path": v.get("persisted_path"),
    }
    for k, val in v.items():
        out.setdefault(k, val)
    out["stages"] = [normalize_stage(s, where) for s in stages]
    for key in ("transitions", "checkpoints", "artifacts"):
        if type(out[key]) is not list:
            raise thrown(f"{where}: {key} must be a list")
    if type(out["metadata"]) is not dict:
        raise thrown(f"{where}: metadata must be a dict")
    if type(out["id"]) is not str:
        raise thrown(f"{where}: a run record needs a string id")
    from harnpy.lifecycle.compaction import run_observability

    out["observability"] = run_observability(out)
    return out


def fixture_of(run: dict[str, Any]) -> dict[str, Any]:
    """The replay fixture that pins ``run``'s status and each stage's outcome."""
    return {
        "_type": "replay_fixture",
        "id": f"fixture_{run['id']}",
        "source_run_id": run["id"],
        "workflow_id": run.get("workflow_id"),
        "workflow_name": run.get("workflow_name"),
        "expected_status": run.get("status"),
        "stage_assertions": [
            {
                "node_id": s["node_id"],
                "expected_status": s.get("status"),
                "expected_outcome": s.get("outcome"),
                "expected_branch": s.get("branch"),
            }
            for s in run["stages"]
        ],
    }


def evaluate(run: dict[str, Any], fixture: Any) -> dict[str, Any]:
    """``{pass, failures: [string], run_id, fixture_id}``: does ``run`` meet ``fixture``?"""
    if type(fixture) is not dict or fixture.get("_type") != "replay_fixture":
        raise thrown(f"run_record_eval: expected a replay fixture, got {display(fixture)}")
    failures: list[str] = []
    want = fixture.get("expected_status")
    if want is not None and run.get("status") != want:
        failures.append(f"status: expected {want!r}, got {run.get('status')!r}")
    by_node = {s["node_id"]: s for s in run["stages"]}
    for a in fixture.get("stage_assertions") or []:
        if type(a) is not dict:
            continue
        node = a.get("node_id")
        stage = by_node.get(node)
        if stage is None:
            failures.append(f"stage {node}: missing from the run")
            continue
        for field in ("status", "outcome", "branch"):
            expected = a.get(f"expected_{field}")
            if expected is not None and stage.get(field) != expected:
                failures.append(
                    f"stage {node}: {field} expected {expected!r}, got {stage.get(field)!r}"
                )
    return {
        "pass": not failures,
        "failures": failures,
        "run_id": run.get("id"),
        "fixture_id": fixture.get("id"),
    }


def diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """How run ``b`` differs from run ``a`` (stages paired by node id)."""
    stage_diffs = []
    left = {s["node_id"]: s for s in a["stages"]}
    right = {s["node_id"]: s for s in b["stages"]}
    for node in dict.fromkeys([*left, *right]):
        la, rb = left.get(node), right.get(node)
        if la is None or rb is None:
            stage_diffs.append(
                {"node_id": node, "change": "added" if la is None else "removed", "fields": []}
            )
            continue
        fields = [
            {"field": f, "left": la.get(f), "right": rb.get(f)}
            for f in ("status", "outcome", "branch", "visible_text")
            if la.get(f) != rb.get(f)
        ]
        if fields:
            stage_diffs.append({"node_id": node, "change": "changed", "fields": fields})
    status_changed = a.get("status") != b.get("status")
    return {
        "left_run_id": a.get("id"),
        "right_run_id": b.get("id"),
        "left_status": a.get("status"),
        "right_status": b.get("status"),
        "status_changed": status_changed,
        "stage_diffs": stage_diffs,
        "identical": not status_changed and not stage_diffs,
    }


# ----------------------------------------------------------------------------- builtins


@builtin("run_record")
def run_record(thread: Any, v: Any = None) -> dict[str, Any]:
    """``run_record(dict) -> run_record``: a run record from a dict (``_type:
    "run_record"`` optional; missing fields get defaults: ``status: "completed"``, empty
    ``transitions``/``checkpoints``/``artifacts``, stages with ``status: "completed"``,
    ``outcome: "success"``). A missing ``id`` gets a fresh one. Throws for a malformed
    record (stages without ``node_id``...)."""
    if type(v) is dict and v.get("id") is None:
        v = {**v, "id": new_id(thread.runtime, "run")}
    return check_run_record(v, "run_record")


@builtin("run_record_save")
def run_record_save(thread: Any, run: Any = None, path: Any = None) -> dict[str, Any]:
    """``run_record_save(run, path?) -> {path, run_id, bytes}``: write the run record as
    JSON (atomically, mode 0600; parent directories created). Without ``path`` it goes to
    ``.harn-runs/<run id>.json``. Closures inside (tool handlers) are written as null."""
    from harnpy.security.files import write_private
    from harnpy.stdlib.jsonlib import dumps

    rec = check_run_record(run, "run_record_save")
    if path is None:
        path = os.path.join(".harn-runs", f"{rec['id']}.json")
    if type(path) is not str or not path:
        raise thrown(f"run_record_save: path must be a string, got {display(path)}")
    rec = {**rec, "persisted_path": path}
    data = dumps(rec, indent=2).encode("utf-8")
    try:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        write_private(path, data)
    except OSError as exc:
        raise thrown(f"run_record_save: cannot write {path}: {exc.strerror or exc}") from None
    return {"path": path, "run_id": rec["id"], "bytes": len(data)}


def load_record_file(path: Any, where: str) -> dict[str, Any]:
    """Read and validate a run record file.

    Raises:
        HarnThrow: unreadable, too large, not JSON, or not a run record.
    """
    from harnpy.security.files import read_capped
    from harnpy.stdlib.jsonlib import from_json_data

    if type(path) is not str or not path:
        raise thrown(f"{where}: path must be a string, got {display(path)}")
    try:
        raw = read_capped(path, MAX_RECORD_BYTES)
    except OSError as exc:
        raise thrown(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise thrown(f"{where}: {path}: {exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise thrown(f"{where}: {path} is not JSON: {exc}") from None
    return check_run_record(from_json_data(data), where)


@builtin("run_record_load")
def run_record_load(thread: Any, path: Any = None) -> dict[str, Any]:
    """``run_record_load(path) -> run_record``: read a record written by
    ``run_record_save`` (checked: at most 32 MiB, JSON, the run-record shape). Throws with
    the path and the reason otherwise."""
    return load_record_file(path, "run_record_load")


@builtin("run_record_fixture")
def run_record_fixture(thread: Any, run: Any = None) -> dict[str, Any]:
    """``run_record_fixture(run) -> replay_fixture``: ``{_type: "replay_fixture", id,
    source_run_id, workflow_id, workflow_name, expected_status, stage_assertions:
    [{node_id, expected_status, expected_outcome, expected_branch}]}`` pinning what
    ``run`` did, for ``run_record_eval``."""
    return fixture_of(check_run_record(run, "run_record_fixture"))


@builtin("run_record_eval")
def run_record_eval(thread: Any, run: Any = None, fixture: Any = None) -> dict[str, Any]:
    """``run_record_eval(run, fixture?) -> {pass, failures: [string], run_id,
    fixture_id}``: check a run against a replay fixture (default: the run's own
    ``replay_fixture``)."""
    rec = check_run_record(run, "run_record_eval")
    return evaluate(rec, fixture if fixture is not None else rec.get("replay_fixture"))


@builtin("run_record_eval_suite")
def run_record_eval_suite(thread: Any, cases: Any = None) -> dict[str, Any]:
    """``run_record_eval_suite([{run | path, fixture?, label?}]) -> {pass, total, passed,
    failed, cases: [{label, path, run_id, pass, failures}]}``: evaluate many runs (a
    ``path`` without ``run`` is loaded with ``run_record_load``)."""
    if type(cases) is not list:
        raise thrown(f"run_record_eval_suite: expects a list of cases, got {display(cases)}")
    results = []
    for i, case in enumerate(cases):
        if type(case) is not dict:
            raise thrown(f"run_record_eval_suite: case {i} must be a dict")
        if case.get("run") is not None:
            rec = check_run_record(case["run"], "run_record_eval_suite")
        else:
            rec = load_record_file(case.get("path"), "run_record_eval_suite")
        fixture = (
            case.get("fixture") if case.get("fixture") is not None else rec.get("replay_fixture")
        )
        res = evaluate(rec, fixture)
        results.append(
            {
                "label": case.get("label") or case.get("path") or rec["id"],
                "path": case.get("path"),
                "run_id": rec["id"],
                "pass": res["pass"],
                "failures": res["failures"],
            }
        )
    passed = sum(1 for r in results if r["pass"])
    return {
        "pass": passed == len(results),
        "total": len(results),
        "passed": passed,
        "failed": len(results) - passed,
        "cases": results,
    }


@builtin("run_record_diff")
def run_record_diff(thread: Any, left: Any = None, right: Any = None) -> dict[str, Any]:
    """``run_record_diff(left, right) -> {left_run_id, right_run_id, left_status,
    right_status, status_changed, stage_diffs: [{node_id, change: "changed" | "added" |
    "removed", fields: [{field, left, right}]}], identical}``: compare two runs stage by
    stage (paired by node id; status, outcome, branch and visible text)."""
    return diff(
        check_run_record(left, "run_record_diff"), check_run_record(right, "run_record_diff")
    )


def stamp(runtime: Any) -> str:
    """The runtime clock's time for ``started_at`` / ``finished_at`` fields."""
    return now_rfc3339(runtime)
