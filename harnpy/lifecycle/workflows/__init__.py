"""Workflows: artifacts, workflow graphs, their executor and run records.

* :mod:`.artifacts` — ``artifact``, ``artifact_derive``, ``artifact_select``,
  ``artifact_context``: typed pieces of context with lineage (plain dicts);
* :mod:`.graph` — ``workflow_graph`` (normalizing a spec), ``workflow_validate`` and
  ``workflow_policy_report`` (structure and capability ceilings), ``workflow_commit``;
* :mod:`.records` — run records: ``run_record``, ``run_record_save`` / ``_load``,
  ``run_record_fixture``, ``run_record_diff``, ``run_record_eval(_suite)``;
* :mod:`.execute` — ``workflow_execute``: the Python halves of the executor, whose loop
  is Harn code (``stdlib/std/workflow/_engine.harn``), so a workflow's whole state is in
  frames and a run can be snapshotted or parked at any stage like any Harn code.

Everything a workflow holds is plain data (graph, run record, artifacts), so snapshots,
``run_record_save`` and replays carry it without Python state.
"""
