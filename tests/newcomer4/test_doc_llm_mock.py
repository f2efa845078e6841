"""``harnpy doc llm_mock`` said only "queue one scripted reply": a new user writing a first
mock agent could not learn from it what a reply looks like (found as a new user)."""

from __future__ import annotations

from tests.conftest import harnpy


def test_doc_llm_mock_shows_the_reply_shapes_and_the_file_form() -> None:
    r = harnpy("doc", "llm_mock")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    for shape in ('`{text: "..."}`', "`{tool_calls: [{name, arguments, id?}]}`", "`{error:"):
        assert shape in text, shape
    assert "--llm-mock FILE.jsonl" in text and "mock-format" in text
