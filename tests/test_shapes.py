"""harnpy.shapes: strict structuring of plain data into attrs shapes, one-line errors."""

from __future__ import annotations

from typing import Any, Literal

import attrs
import pytest

from harnpy.runtime.snapshot import SnapshotError, validate_document
from harnpy.shapes import ShapeError, at_least, min_len, shape, structure, unstructure


@shape(forbid_extra=True)
@attrs.define(kw_only=True)
class Inner:
    count: int = attrs.field(validator=at_least(1))
    mode: Literal["a", "b"] = "a"


def _no_secret(raw: dict[str, Any]) -> None:
    if "secret" in raw:
        raise ValueError("must not carry secret")


@shape(check=_no_secret)
@attrs.define(kw_only=True)
class Outer:
    type_: Literal["outer"] = attrs.field(default="outer", metadata={"key": "_type"})
    name: str = attrs.field(validator=min_len(1))
    ratio: float = 0.0
    flag: bool = False
    tags: list[str] = attrs.field(factory=list)
    inner: Inner | None = None
    items: list[Inner] = attrs.field(factory=list)
    body: str | list[dict[str, Any]] | None = None
    token: str | None = attrs.field(default=None, metadata={"dump": False})


def test_valid_data_round_trips_under_json_keys() -> None:
    data = {
        "_type": "outer",
        "name": "n",
        "ratio": 2,
        "tags": ["x"],
        "inner": {"count": 3, "mode": "b"},
        "items": [{"count": 1}],
        "body": [{"text": "hi"}],
        "token": "t",
        "unknown_but_allowed": 1,
    }
    out = structure(data, Outer)
    assert out.ratio == 2.0 and type(out.ratio) is float
    assert out.inner == Inner(count=3, mode="b") and out.token == "t"
    dumped = unstructure(out)
    assert dumped["_type"] == "outer" and "type_" not in dumped and "token" not in dumped
    assert dumped["items"] == [{"count": 1, "mode": "a"}]
    assert unstructure(out, exclude_defaults=True) == {
        "name": "n",
        "ratio": 2.0,
        "tags": ["x"],
        "inner": {"count": 3, "mode": "b"},
        "items": [{"count": 1}],
        "body": [{"text": "hi"}],
    }
    assert "inner" not in unstructure(structure({"name": "n"}, Outer), exclude_none=True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (5, "expected a dict, got int"),
        ({}, "field `name`: required field missing"),
        ({"name": 7}, "field `name`: expected a string, got int"),
        ({"name": ""}, "field `name`: must not be empty"),
        ({"name": "n", "_type": "x"}, "field `_type`: expected one of 'outer', got 'x'"),
        ({"name": "n", "ratio": "1.5"}, "field `ratio`: expected a number, got string"),
        ({"name": "n", "ratio": True}, "field `ratio`: expected a number, got bool"),
        ({"name": "n", "flag": 1}, "field `flag`: expected a bool, got int"),
        ({"name": "n", "tags": "abc"}, "field `tags`: expected a list, got string"),
        ({"name": "n", "tags": ["a", 2]}, "field `tags[1]`: expected a string, got int"),
        ({"name": "n", "inner": 3}, "field `inner`: expected a dict, got int"),
        ({"name": "n", "inner": {"count": 0}}, "field `inner.count`: must be at least 1"),
        ({"name": "n", "inner": {"count": True}}, "field `inner.count`: expected an integer"),
        ({"name": "n", "items": [{"count": 1, "zz": 1}]}, "field `items[0].zz`: unknown field"),
        ({"name": "n", "body": 5}, "field `body`: expected a list, got int"),
        ({"name": "n", "secret": 1}, "must not carry secret"),
    ],
)
def test_bad_data_is_a_one_line_error_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(ShapeError) as err:
        structure(data, Outer)
    text = str(err.value)
    assert text.startswith(message), text
    assert "\n" not in text and "cattrs" not in text and "Traceback" not in text


def test_several_problems_are_counted() -> None:
    with pytest.raises(ShapeError) as err:
        structure({"name": 1, "tags": 2, "flag": "x"}, Outer)
    assert len(err.value.problems) == 3
    assert str(err.value).endswith("(and 2 more)")


def test_built_instances_are_accepted_as_they_are() -> None:
    inner = Inner(count=2)
    assert structure(inner, Inner) is inner
    assert structure({"name": "n", "inner": inner}, Outer).inner is inner


def test_snapshot_envelope_errors_name_the_field() -> None:
    doc = {
        "_type": "harnpy_snapshot",
        "harnpy_snapshot_version": 1,
        "codegen_version": 1,
        "harnpy_version": "0",
        "created_at": "now",
        "modules": [{"key": "main", "path": "p.harn", "hash": "abc"}],
        "globals": {},
        "heap": [],
        "thread": {"name": "main", "top": None, "depth": 0},
    }
    with pytest.raises(SnapshotError) as err:
        validate_document(doc, "s.json")
    assert err.value.code == "E404"
    assert "s.json is not a harnpy snapshot: field `modules[0].hash`: must be a sha256" in str(
        err.value.message
    )
