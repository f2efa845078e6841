"""Completion snapshots and sanitized failures."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harnpy.serve.completion import (
    CompletionSnapshot,
    ModelCall,
    SnapshotTooLarge,
    encode_snapshot,
    sanitize_failure,
)


def test_snapshot_sums_usage_and_round_trips() -> None:
    calls = [
        ModelCall(provider="mock", model="m", input_tokens=3, output_tokens=4),
        ModelCall(provider="mock", model="m", input_tokens=5, output_tokens=6, tool_calls=1),
    ]
    snap = CompletionSnapshot.build(
        {"a": [1, 2]}, type_name="dict", stdout="hi\n", metadata={"k": "v"}, calls=calls
    )
    data = encode_snapshot(snap)
    assert data["version"] == 1
    assert data["usage"] == {
        "model_calls": 2, "input_tokens": 8, "output_tokens": 10, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "total_tokens": 18,
    }  # fmt: skip
    assert CompletionSnapshot.model_validate(data) == snap


def test_snapshot_over_4_mib_is_refused() -> None:
    snap = CompletionSnapshot.build("x" * (4 * 1024 * 1024), type_name="string", stdout="",
                                    metadata={}, calls=[])  # fmt: skip
    with pytest.raises(SnapshotTooLarge) as e:
        encode_snapshot(snap)
    assert e.value.size > 4 * 1024 * 1024


def test_snapshot_validation_rejects_unknown_versions_and_fields() -> None:
    with pytest.raises(ValidationError):
        CompletionSnapshot.model_validate({"version": 2})
    with pytest.raises(ValidationError):
        CompletionSnapshot.model_validate({"version": 1, "extra": True})


def test_failures_are_one_line_without_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh-123")
    err = sanitize_failure(
        "runtime_error",
        "failed calling postgresql://u:hunter22@db/x with tok-abcdefgh-123 and Bearer abc.def\n"
        "  at app.harn:3:5\n  at main",
        "E310",
        secrets=None,
    )
    assert err["category"] == "runtime_error" and err["code"] == "E310"
    msg = err["message"]
    assert "\n" not in msg and "app.harn" not in msg
    for secret in ("hunter22", "tok-abcdefgh-123", "abc.def"):
        assert secret not in msg
    assert msg.count("[redacted]") == 3
    long = sanitize_failure("runtime_error", "y" * 5000, secrets=[])
    assert len(long["message"]) == 1000 and long["message"].endswith("...")
