"""``workflow_execute``: the Python halves of the workflow executor.

The loop is Harn code, ``__workflow_execute`` in ``stdlib/std/workflow/_engine.harn``:

1. ``__wf_begin(task, graph, artifacts, options)`` makes the executor state ``ws`` (plain
   data: the normalized graph, the run record being built, the queue of ready nodes, the
   artifacts so far, the step count);
2. ``__wf_next(ws)`` pops the next runnable node (a ``join`` waits until its inputs ran
   or nothing else is ready) or answers nil when the queue is empty or ``max_steps``
   stages ran;
3. ``__wf_plan(ws, node)`` says what the stage asks of a model: a list of calls ``{mode:
   "llm" | "agent", prompt, system, options}`` (none for structural nodes and replays);
4. the Harn loop makes those calls with ``llm_call`` / ``agent_loop`` (so a stage that
   parks, asks a human or is snapshotted is ordinary Harn code on the stack);
5. ``__wf_complete(ws, node, plan, results)`` records the stage, its artifacts, the
   transitions taken and a checkpoint, and queues the successors;
6. ``__wf_finish(ws)`` closes the run record (status, replay fixture, optional
   ``persist_path``) and returns ``{status, run, artifacts, transcript, visible_text}``.

Run status: ``failed`` when a stage failed, ``needs_attention`` when a verification
failed, ``incomplete`` when ``max_steps`` stopped the run with nodes still ready,
otherwise ``completed``.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import push_call, require_instruction_call, thrown
from harnpy.lifecycle.tool_surface import engine_function
from harnpy.lifecycle.workflows import artifacts as A
from harnpy.lifecycle.workflows import graph as G
from harnpy.lifecycle.workflows import records as R
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin

DEFAULT_MAX_STEPS = 32


def _ws(v: Any, where: str) -> dict[str, Any]:
    if type(v) is not dict or v.get("_type") != "workflow_state":
        raise thrown(f"{where}: internal: not a workflow state")
    return v


@builtin("workflow_execute", control=True)
def workflow_execute(
    thread: Any, task: Any = None, graph: Any = None, artifacts: Any = None, options: Any = None
) -> Any:
    """``workflow_execute(task, graph, artifacts?, options?) -> {status, run, artifacts,
    transcript, visible_text}``: run a workflow graph from its entry node.

    Options: ``max_steps`` (stages to run at most, default 32), ``provider`` / ``model``
    (defaults for stages whose ``model_policy`` names none), ``persist_path`` (write the
    run record there), ``replay_run`` + ``replay_mode: "deterministic"`` (re-run from a
    recorded run's stage outputs without calling a model). ``run`` is the run record
    (``_type: "run_record"``: stages with their transcripts and artifacts, transitions,
    checkpoints, ``replay_fixture``). Stages run as Harn code, so a stage's model call or
    agent loop can park and resume like any other. Throws for an invalid graph."""
    require_instruction_call(thread, "workflow_execute")
    push_call(
        thread,
        engine_function(thread.runtime, "__workflow_execute"),
        [task, graph, artifacts, options],
    )
    return None


@builtin("__wf_begin")
def wf_begin(
    thread: Any, task: Any = None, graph: Any = None, artifacts: Any = None, options: Any = None
) -> dict[str, Any]:
    """``__wf_begin(task, graph, artifacts, options)``: the initial executor state."""
    rt = thread.runtime
    if type(task) is not str:
        task = "" if task is None else display(task)
    g = G.normalize(graph)
    report = G.validate(g)
    if not report["valid"]:
        raise thrown("workflow_execute: invalid workflow: " + "; ".join(report["errors"]))
    opts = options if type(options) is dict else {}
    if options is not None and type(options) is not dict:
        raise thrown(f"workflow_execute: options must be a dict, got {display(options)}")
    arts = [A.check(a, "workflow_execute") for a in (artifacts or [])]
    max_steps = opts.get("max_steps", DEFAULT_MAX_STEPS)
    if type(max_steps) is not int or max_steps < 1:
        raise thrown(
            f"workflow_execute: max_steps must be a positive int, got {display(max_steps)}"
        )
    metadata: dict[str, Any] = {}
    replay: dict[str, list[Any]] | None = None
    source = opts.get("replay_run")
    if source is not None:
        src = R.check_run_record(source, "workflow_execute")
        mode = opts.get("replay_mode", "deterministic")
        if mode != "deterministic":
            raise thrown(
                f'workflow_execute: unknown replay_mode {display(mode)} (expected "deterministic")'
            )
        metadata.update(replay_mode=mode, replayed_from=src["id"])
        replay = {}
        for s in src["stages"]:
            replay.setdefault(s["node_id"], []).append(s)
    run = {
        "_type": "run_record",
        "id": R.new_id(rt, "run"),
        "workflow_id": g["id"],
        "workflow_name": g["name"],
        "workflow_version": g["version"],
        "task": task,
        "status": "running",
        "started_at": R.stamp(rt),
        "finished_at": None,
        "stages": [],
        "transitions": [],
        "checkpoints": [],
        "artifacts": list(arts),
        "policy": g.get("capability_policy"),
        "metadata": metadata,
        "replay_fixture": None,
        "persisted_path": None,
    }
    return {
        "_type": "workflow_state",
        "graph": g,
        "task": task,
        "options": opts,
        "run": run,
        "queue": [g["entry"]],
        "completed": [],
        "steps": 0,
        "max_steps": max_steps,
        "replay": replay,
        "suspended": None,
    }


def _join_ready(ws: dict[str, Any], nid: str) -> bool:
    sources = {e["from"] for e in ws["graph"]["edges"] if e["to"] == nid}
    return sources <= set(ws["completed"])


@builtin("__wf_next")
def wf_next(thread: Any, ws: Any = None) -> dict[str, Any]:
    """``__wf_next(ws) -> {ws, node}``: pop the next runnable node (nil: the run is over)."""
    st = _ws(ws, "__wf_next")
    queue = list(st["queue"])
    if not queue or st["steps"] >= st["max_steps"] or st.get("suspended") is not None:
        return {"ws": st, "node": None}
    nodes = st["graph"]["nodes"]
    pick = None
    for i, nid in enumerate(queue):
        node = nodes[nid]
        if node["kind"] != "join" or _join_ready(st, nid):
            pick = i
            break
    if pick is None:
        pick = 0  # only joins whose inputs cannot all arrive: run the first anyway
    nid = queue.pop(pick)
    return {"ws": {**st, "queue": queue}, "node": nodes[nid]}


def _stage_options(ws: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    opts = ws["options"]
    policy = node.get("model_policy") or {}
    out: dict[str, Any] = {}
    for key in ("provider", "model", "temperature", "max_tokens"):
        if opts.get(key) is not None:
            out[key] = opts[key]
    for k, v in policy.items():
        if k not in ("model_tier",) and v is not None:
            out[k] = v
    if "model" not in out and type(policy.get("model_tier")) is str and "provider" not in out:
        out["model"] = policy["model_tier"]
    return out


def _inputs(ws: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    policy = node.get("context_policy") or {}
    contract = node.get("input_contract") or {}
    if not policy.get("include_kinds") and contract.get("input_kinds"):
        policy = {**policy, "include_kinds": contract["input_kinds"]}
    return A.select(ws["run"]["artifacts"], policy)


def _last_text(ws: dict[str, Any]) -> str:
    for s in reversed(ws["run"]["stages"]):
        if type(s.get("visible_text")) is str:
            return s["visible_text"]  # type: ignore[no-any-return]
    return ""


def _prompt(ws: dict[str, Any], node: dict[str, Any], inputs: list[dict[str, Any]]) -> str:
    task = ws["task"]
    base = node.get("prompt") if type(node.get("prompt")) is str else task
    parts = [base]
    if node["kind"] == "verify":
        parts = [f"Verify the previous stage's output for this task: {task}", _last_text(ws)]
    if type(node.get("context_text")) is str and node["context_text"]:
        parts.insert(0, node["context_text"])
    ctx = A.render(inputs)
    if ctx:
        parts.append(ctx)
    return "\n\n".join(p for p in parts if p)


@builtin("__wf_plan")
def wf_plan(thread: Any, ws: Any = None, node: Any = None) -> dict[str, Any]:
    """``__wf_plan(ws, node) -> {calls: [{mode, prompt, system, options}], inputs,
    replay}``: the model calls a stage makes (none for structural nodes and replays)."""
    st = _ws(ws, "__wf_plan")
    inputs = _inputs(st, node)
    replay = st.get("replay")
    if replay is not None:
        done = sum(1 for s in st["run"]["stages"] if s["node_id"] == node["id"])
        recorded = replay.get(node["id"]) or []
        source = recorded[done] if done < len(recorded) else (recorded[-1] if recorded else None)
        return {"calls": [], "inputs": inputs, "replay": source}
    mode = node["mode"]
    if mode == "deterministic":
        return {"calls": [], "inputs": inputs, "replay": None}
    opts = _stage_options(st, node)
    if mode == "agent" and node.get("tools") is not None:
        opts["tools"] = node["tools"]
    system = node.get("system")
    if node["kind"] == "map":
        kind = (node.get("map_policy") or {}).get("item_artifact_kind")
        items = [a for a in inputs if not kind or a.get("kind") == kind]
        calls = [
            {
                "mode": mode,
                "prompt": f"{_prompt(st, node, [])}\n\n{A.render([item])}",
                "system": system,
                "options": opts,
            }
            for item in items
        ]
        return {"calls": calls, "inputs": items, "replay": None}
    call = {"mode": mode, "prompt": _prompt(st, node, inputs), "system": system, "options": opts}
    return {"calls": [call], "inputs": inputs, "replay": None}


def _text_of(value: Any) -> str:
    if type(value) is dict:
        for key in ("visible_text", "text"):
            if type(value.get(key)) is str:
                return value[key]  # type: ignore[no-any-return]
    return "" if value is None else display(value)


def _verify(spec: Any, text: str) -> dict[str, Any]:
    checks = []
    if type(spec) is dict:
        if type(spec.get("assert_text")) is str:
            checks.append(
                {
                    "check": "assert_text",
                    "expected": spec["assert_text"],
                    "ok": spec["assert_text"] in text,
                }
            )
        if type(spec.get("assert_not_text")) is str:
            checks.append(
                {
                    "check": "assert_not_text",
                    "expected": spec["assert_not_text"],
                    "ok": spec["assert_not_text"] not in text,
                }
            )
        if type(spec.get("min_length")) is int:
            checks.append(
                {
                    "check": "min_length",
                    "expected": spec["min_length"],
                    "ok": len(text) >= spec["min_length"],
                }
            )
    return {"ok": all(c["ok"] for c in checks), "checks": checks}


def _condition(node: dict[str, Any], inputs: list[dict[str, Any]]) -> bool:
    meta = node.get("metadata") or {}
    texts = [A.artifact_text(a) for a in inputs]
    if type(meta.get("contains_text")) is str:
        return any(meta["contains_text"] in t for t in texts)
    if type(meta.get("artifact_kind")) is str:
        return any(a.get("kind") == meta["artifact_kind"] for a in inputs)
    return bool(inputs)


def _output_kind(node: dict[str, Any], default: str) -> str:
    kinds = (node.get("output_contract") or {}).get("output_kinds")
    if type(kinds) is list and kinds and type(kinds[0]) is str:
        return kinds[0]
    return default


@builtin("__wf_complete")
def wf_complete(
    thread: Any, ws: Any = None, node: Any = None, plan: Any = None, results: Any = None
) -> dict[str, Any]:
    """``__wf_complete(ws, node, plan, results)``: record the stage and queue successors.
    ``results`` holds one ``{ok, value | error}`` per planned call."""
    rt = thread.runtime
    st = _ws(ws, "__wf_complete")
    run = st["run"]
    nid = node["id"]
    kind = node["kind"]
    started = R.stamp(rt)
    inputs = plan.get("inputs") or []
    results = results or []
    stage: dict[str, Any] = {
        "id": R.new_id(rt, "stage"),
        "node_id": nid,
        "kind": kind,
        "mode": node["mode"],
        "status": "completed",
        "outcome": "success",
        "branch": None,
        "started_at": started,
        "finished_at": None,
        "visible_text": None,
        "transcript": None,
        "artifacts": [],
        "consumed_artifact_ids": [a["id"] for a in inputs],
        "verification": None,
        "attempts": len(results),
        "metadata": dict(node.get("metadata") or {}),
    }
    produced: list[dict[str, Any]] = []
    failures = [r for r in results if not r.get("ok")]
    texts = [_text_of(r.get("value")) for r in results if r.get("ok")]
    transcripts = [
        r["value"].get("transcript")
        for r in results
        if r.get("ok") and type(r.get("value")) is dict
    ]
    suspension = next(
        (
            _suspension_of(r["value"])
            for r in results
            if r.get("ok") and _suspension_of(r.get("value"))
        ),
        None,
    )
    source = plan.get("replay")
    if source is not None:
        for key in ("status", "outcome", "branch", "visible_text", "transcript", "verification"):
            stage[key] = source.get(key)
        produced = [dict(a) for a in source.get("artifacts") or []]
        stage["metadata"] = {**stage["metadata"], "replayed_stage_id": source.get("id")}
    elif suspension is not None:
        stage["status"] = "suspended"
        stage["outcome"] = "suspended"
        stage["metadata"] = {**stage["metadata"], "suspension": suspension}
    elif failures:
        stage["status"] = "failed"
        stage["outcome"] = "error"
        stage["error"] = failures[0].get("error")
    elif kind == "condition":
        stage["branch"] = "true" if _condition(node, inputs) else "false"
    elif kind == "verify":
        text = texts[0] if texts else _last_text(st)
        verdict = _verify(node.get("verify"), text)
        stage["verification"] = verdict
        stage["visible_text"] = texts[0] if texts else None
        stage["branch"] = "passed" if verdict["ok"] else "failed"
        if not verdict["ok"]:
            stage["outcome"] = "verify_failed"
    elif kind == "map":
        out_kind = (node.get("map_policy") or {}).get("output_kind") or _output_kind(
            node, "summary"
        )
        item_kind = (node.get("map_policy") or {}).get("item_artifact_kind")
        items = [a for a in inputs if not item_kind or a.get("kind") == item_kind]
        for i, item in enumerate(items):
            text = texts[i] if i < len(texts) else A.artifact_text(item)
            produced.append(
                A.make(
                    rt,
                    {
                        "kind": out_kind,
                        "text": text,
                        "lineage": [*item.get("lineage", []), item["id"]],
                        "stage": nid,
                    },
                )
            )
    elif kind == "reduce":
        text = texts[0] if texts else "\n\n".join(A.artifact_text(a) for a in inputs)
        produced.append(
            A.make(
                rt,
                {
                    "kind": _output_kind(node, "summary"),
                    "text": text,
                    "lineage": [a["id"] for a in inputs],
                    "stage": nid,
                },
            )
        )
        stage["visible_text"] = text
    elif kind in ("stage", "subagent") and texts:
        stage["visible_text"] = texts[-1]
        out = A.make(
            rt,
            {
                "kind": _output_kind(node, "stage_output"),
                "text": texts[-1],
                "lineage": [a["id"] for a in inputs],
                "stage": nid,
            },
        )
        produced.append(out)
        if kind == "subagent":
            produced = _delegate(rt, st, node, stage, out)
    if source is None and transcripts:
        stage["transcript"] = transcripts[-1]
    stage["artifacts"] = produced
    stage["finished_at"] = R.stamp(rt)
    # successors
    queue = list(st["queue"])
    transitions = list(run["transitions"])
    if stage["status"] == "completed":
        for e in st["graph"]["edges"]:
            if e["from"] != nid:
                continue
            if (
                e.get("branch") is not None
                and stage["branch"] is not None
                and e["branch"] != stage["branch"]
            ):
                continue
            if e.get("branch") is not None and stage["branch"] is None and kind == "condition":
                continue
            transitions.append(
                {"from": nid, "to": e["to"], "branch": e.get("branch"), "at": stage["finished_at"]}
            )
            if e["to"] not in queue:
                queue.append(e["to"])
    completed = [*st["completed"], nid] if stage["status"] != "suspended" else list(st["completed"])
    if stage["status"] == "suspended":
        queue = [nid, *queue]
    checkpoint = {
        "id": R.new_id(rt, "checkpoint"),
        "node_id": nid,
        "stage_id": stage["id"],
        "at": stage["finished_at"],
        "ready_nodes": list(queue),
        "completed_nodes": list(completed),
    }
    new_run = {
        **run,
        "stages": [*run["stages"], stage],
        "transitions": transitions,
        "checkpoints": [*run["checkpoints"], checkpoint],
        "artifacts": [*run["artifacts"], *produced],
    }
    suspended = None
    if stage["status"] == "suspended":
        suspended = {"node_id": nid, "stage_id": stage["id"], **(suspension or {})}
    return {
        **st,
        "run": new_run,
        "queue": queue,
        "completed": completed,
        "steps": st["steps"] + 1,
        "suspended": suspended,
    }


def _suspension_of(value: Any) -> dict[str, Any] | None:
    """``{snapshot_path, worker_id, reason}`` when ``value`` is the result of an agent loop
    that parked (``status: "suspended"`` with a snapshot), else None."""
    if type(value) is not dict or value.get("status") != "suspended":
        return None
    path = value.get("snapshot_path")
    if type(path) is not str:
        return None
    handle: dict[str, Any] = value["handle"] if type(value.get("handle")) is dict else {}
    return {"snapshot_path": path, "worker_id": handle.get("id"), "reason": value.get("reason")}


def _delegate(
    rt: Any, st: dict[str, Any], node: dict[str, Any], stage: dict[str, Any], out: dict[str, Any]
) -> list[dict[str, Any]]:
    meta = node.get("metadata") or {}
    worker_id = R.new_id(rt, "worker")
    request = {
        "payload": meta.get("request"),
        "task": st["task"],
        "node_id": node["id"],
        "workflow_stages": list(meta.get("workflow_stages") or [node["id"]]),
    }
    worker = {
        "id": worker_id,
        "name": meta.get("worker_name") or node["id"],
        "status": "completed",
        "request": request,
    }
    stage["metadata"] = {**stage["metadata"], "worker": worker, "worker_id": worker_id}
    delegated = {**out, "metadata": {**out["metadata"], "delegated": True, "worker_id": worker_id}}
    result = A.make(
        rt,
        {
            "kind": "worker_result",
            "data": {
                "request": request,
                "status": "completed",
                "text": out.get("text"),
                "provenance": {
                    "worker_id": worker_id,
                    "worker_name": worker["name"],
                    "node_id": node["id"],
                },
            },
            "lineage": [out["id"]],
            "stage": node["id"],
        },
    )
    return [delegated, result]


@builtin("__wf_finish")
def wf_finish(thread: Any, ws: Any = None) -> dict[str, Any]:
    """``__wf_finish(ws)``: close the run record and build the result."""
    st = _ws(ws, "__wf_finish")
    run = dict(st["run"])
    stages = run["stages"]
    if st.get("suspended") is not None:
        status = "suspended"
        run["metadata"] = {**run["metadata"], "suspension": st["suspended"]}
    elif any(s["status"] == "failed" for s in stages):
        status = "failed"
    elif any(s["outcome"] == "verify_failed" for s in stages):
        status = "needs_attention"
    elif st["queue"]:
        status = "incomplete"
    else:
        status = "completed"
    run["status"] = status
    run["finished_at"] = R.stamp(thread.runtime)
    run["replay_fixture"] = R.fixture_of(run)
    path = st["options"].get("persist_path")
    if path is not None:
        R.run_record_save(thread, run, path)
        run["persisted_path"] = path
    transcript = next((s["transcript"] for s in reversed(stages) if s.get("transcript")), None)
    return {
        "status": status,
        "run": run,
        "artifacts": run["artifacts"],
        "transcript": transcript,
        "visible_text": _last_text({"run": run}),
        "suspension": st.get("suspended"),
    }


@builtin("workflow_resume", control=True)
def workflow_resume(thread: Any, run: Any = None, graph: Any = None, options: Any = None) -> Any:
    """``workflow_resume(run | path, graph, options?) -> result``: continue a workflow run
    that ended ``suspended`` (a stage's agent loop parked): its last checkpoint gives the
    completed and ready nodes and the artifacts; the parked stage's worker snapshot
    (``run.metadata.suspension.snapshot_path``) is resumed with ``resume_agent`` (with
    ``options.input``) and awaited, its answer completes the stage, and the run goes on.
    The result has the shape of ``workflow_execute``'s; the run keeps its id. A run loaded
    from a file (``persist_path``) works the same, also in another process. Throws for a
    run that is not suspended or a graph of another workflow."""
    require_instruction_call(thread, "workflow_resume")
    push_call(thread, engine_function(thread.runtime, "__workflow_resume"), [run, graph, options])
    return None


@builtin("__wf_resume_begin")
def wf_resume_begin(thread: Any, run: Any = None, graph: Any = None, options: Any = None) -> Any:
    """``__wf_resume_begin(run | path, graph, options)``: the executor state of a
    suspended run, rebuilt from its record."""
    rec = (
        R.load_record_file(run, "workflow_resume")
        if type(run) is str
        else R.check_run_record(run, "workflow_resume")
    )
    g = G.normalize(graph)
    if rec.get("workflow_id") != g["id"]:
        raise thrown(
            f"workflow_resume: the run belongs to workflow {rec.get('workflow_id')!r}, not {g['id']!r}"
        )
    pending = (rec.get("metadata") or {}).get("suspension")
    if rec.get("status") != "suspended" or type(pending) is not dict:
        raise thrown(f"workflow_resume: run {rec['id']} is {rec.get('status')!r}, not suspended")
    checkpoints = rec.get("checkpoints") or []
    last = checkpoints[-1] if checkpoints else {}
    opts = options if type(options) is dict else {}
    max_steps = opts.get("max_steps", DEFAULT_MAX_STEPS)
    if type(max_steps) is not int or max_steps < 1:
        raise thrown(f"workflow_resume: max_steps must be a positive int, got {display(max_steps)}")
    meta = {k: v for k, v in (rec.get("metadata") or {}).items() if k != "suspension"}
    meta["resumed_from_suspension"] = pending
    return {
        "_type": "workflow_state",
        "graph": g,
        "task": rec.get("task") or "",
        "options": opts,
        "run": {**rec, "status": "running", "metadata": meta},
        "queue": [n for n in last.get("ready_nodes") or [] if n in g["nodes"]],
        "completed": [n for n in last.get("completed_nodes") or [] if n in g["nodes"]],
        "steps": 0,
        "max_steps": max_steps,
        "replay": None,
        "suspended": pending,
    }


@builtin("__wf_resume_stage")
def wf_resume_stage(thread: Any, ws: Any = None, summary: Any = None) -> Any:
    """``__wf_resume_stage(ws, summary)``: complete the parked stage with the resumed
    worker's summary (``status``, ``result.summary`` / ``result.text``)."""
    st = _ws(ws, "__wf_resume_stage")
    pending = st["suspended"]
    nid = pending["node_id"]
    node = st["graph"]["nodes"][nid]
    result = summary.get("result") if type(summary) is dict else None
    status = summary.get("status") if type(summary) is dict else None
    text = None
    if type(result) is dict:
        text = result.get("summary") if type(result.get("summary")) is str else result.get("text")
    value: dict[str, Any] = {"status": status, "visible_text": text, "text": text}
    if type(result) is dict and type(result.get("transcript")) is dict:
        value["transcript"] = result["transcript"]
    st = {**st, "suspended": None, "queue": [q for q in st["queue"] if q != nid]}
    ok = status == "completed"
    outcome = (
        {"ok": True, "value": value}
        if ok
        else {
            "ok": False,
            "error": f"the resumed stage {nid!r} ended {status!r}",
        }
    )
    plan: dict[str, Any] = {"inputs": [], "replay": None}
    return wf_complete(thread, st, node, plan, [outcome])
