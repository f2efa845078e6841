"""JSON builtins: parse/stringify round trips, extraction, pointers and jq (spec 4.10)."""

from __future__ import annotations

import pytest

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.values import Closure, EnumValue, HSet, RangeValue, StructValue


@pytest.mark.parametrize(
    ("src", "shown"),
    [
        ('{"name": "alice", "age": 30}', "{age: 30, name: alice}"),
        ("[1, 2, 3]", "[1, 2, 3]"),
        ("true", "true"),
        ("null", "nil"),
        ("42", "42"),
        ("2.5", "2.5"),
        ('"hello"', "hello"),
        ("-2208988800", "-2208988800"),
        ("9223372036854775807", "9223372036854775807"),
    ],
)
def test_json_parse_maps_json_to_harn_values(thread, src, shown):
    assert display(thread.call("json_parse", src)) == shown


def test_json_parse_keeps_ints_and_floats_apart(thread):
    v = thread.call("json_parse", '{"i": 1, "f": 1.0}')
    assert type(v["i"]) is int and type(v["f"]) is float


@pytest.mark.parametrize("bad", ["not json {{{", "{", "NaN", "[1,]"])
def test_json_parse_failure_throws_parse_error(thread, bad):
    with pytest.raises(HarnThrow) as info:
        thread.call("json_parse", bad)
    assert info.value.value.startswith("JSON parse error:")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": 1, "a": [2, 3]}, '{"a":[2,3],"b":1}'),
        (2.0, "2"),
        (0.5, "0.5"),
        ("naïve ✓", '"naïve ✓"'),
        ("\x1b[31mhi", '"\\u001b[31mhi"'),
        (None, "null"),
        (StructValue("Point", {"y": 5, "x": 1}), '{"x":1,"y":5}'),
        (HSet([1, 2]), "[1,2]"),
        (RangeValue(1, 3, True), '"1 to 3"'),
        (EnumValue("Color", "Red"), "null"),
        (
            {"pre": -2208988800, "max": 9223372036854775807},
            '{"max":9223372036854775807,"pre":-2208988800}',
        ),
    ],
)
def test_json_stringify_is_compact_sorted_and_spec_shaped(thread, value, text):
    assert thread.call("json_stringify", value) == text


def test_json_stringify_renders_closures_as_null(thread):
    closure = Closure.__new__(Closure)
    assert thread.call("json_stringify", [closure]) == "[null]"


def test_json_roundtrip_preserves_structure(thread):
    data = {"x": 1, "y": [2, 3], "z": {"w": None}}
    assert thread.call("json_parse", thread.call("json_stringify", data)) == data


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('{"name": "alice", "age": 30}', None, {"name": "alice", "age": 30}),
        ('Here is the result:\n```json\n{"color": "blue"}\n```\nDone.', None, {"color": "blue"}),
        ('```\n{"x": 42}\n```', None, {"x": 42}),
        ('{"name": "bob", "age": 25}', "name", "bob"),
        ('{"name": "bob", "age": 25}', "age", 25),
        ("[1, 2, 3]", None, [1, 2, 3]),
        ('The answer is {"result": true} as expected', None, {"result": True}),
    ],
)
def test_json_extract_finds_json_in_prose(thread, text, key, expected):
    args = (text,) if key is None else (text, key)
    assert thread.call("json_extract", *args) == expected


def test_json_extract_without_json_throws(thread):
    with pytest.raises(HarnThrow, match="json_extract: failed to parse JSON"):
        thread.call("json_extract", "not json at all")


DOC = {
    "users": [
        {"name": "Ada", "email": "ada@example.com", "active": True},
        {"name": "Bob", "email": "bob@example.com", "active": False},
    ],
    "a/b": {"~key": 7},
}


@pytest.mark.parametrize(
    ("ptr", "expected"),
    [
        ("", DOC),
        ("/users/0/name", "Ada"),
        ("/a~1b/~0key", 7),
        ("/users/99/name", None),
        ("/missing", None),
    ],
)
def test_json_pointer_reads_rfc6901_paths(thread, ptr, expected):
    assert thread.call("json_pointer", DOC, ptr) == expected


def test_json_pointer_set_returns_a_modified_copy(thread):
    changed = thread.call("json_pointer_set", DOC, "/users/1/active", True)
    assert changed["users"][1]["active"] is True
    assert DOC["users"][1]["active"] is False
    appended = thread.call("json_pointer_set", DOC, "/users/-", {"name": "Cy"})
    assert appended["users"][2]["name"] == "Cy" and len(DOC["users"]) == 2
    keyed = thread.call("json_pointer_set", DOC, "/a~1b/new", "value")
    assert keyed["a/b"] == {"~key": 7, "new": "value"}


def test_json_pointer_delete_removes_members_and_items(thread):
    no_email = thread.call("json_pointer_delete", DOC, "/users/0/email")
    assert "email" not in no_email["users"][0] and "email" in DOC["users"][0]
    no_first = thread.call("json_pointer_delete", DOC, "/users/0")
    assert [u["name"] for u in no_first["users"]] == ["Bob"]


API = {
    "users": [
        {"name": "Ada", "email": "ada@example.com", "age": 36, "score": 9, "active": True},
        {"name": "Bob", "email": "bob@example.com", "age": 41, "score": 5, "active": False},
        {"name": "Cy", "email": "cy@example.com", "age": 29, "score": 8, "active": True},
    ],
    "meta": {"count": 3, "next": None},
    "quoted key": {"value": 9},
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".users[] | .email", ["ada@example.com", "bob@example.com", "cy@example.com"]),
        (".users[1:3] | .[] | .name", ["Bob", "Cy"]),
        (".users[] | select(.active == true) | .email", ["ada@example.com", "cy@example.com"]),
        (".users[] | select(.score > 7 and .active == true) | .name", ["Ada", "Cy"]),
        (".users[] | select(not .active) | .name", ["Bob"]),
        (".users[] | .active | not", [False, True, False]),
        (".meta.count, .meta.next", [3, None]),
        (
            '.. | select(type == "object" and .email != null) | .email',
            ["ada@example.com", "bob@example.com", "cy@example.com"],
        ),
        ("[.users[].age] | add", [106]),
        (".users | sort_by(.age) | map(.name)", [["Cy", "Ada", "Bob"]]),
        ('.missing // "fallback"', ["fallback"]),
        (".users[0].name?", ["Ada"]),
    ],
)
def test_jq_streams_every_output(thread, expr, expected):
    assert thread.call("jq", API, expr) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".users[0].name", "Ada"),
        ('.["quoted key"].value', 9),
        (".users | length", 3),
        (".meta | keys", ["count", "next"]),
        (".users[0] | values", [True, 36, "ada@example.com", "Ada", 9]),
        (".users | type", "array"),
        (".users | map(.name)", ["Ada", "Bob", "Cy"]),
        ("{ name: .users[0].name, age: .users[0].age }", {"name": "Ada", "age": 36}),
        (".users[] | select(.age > 100)", None),
    ],
)
def test_jq_first_returns_the_first_output_or_nil(thread, expr, expected):
    assert thread.call("jq_first", API, expr) == expected


def test_jq_reports_errors_with_prefix(thread):
    with pytest.raises(HarnThrow, match="^Thrown: jq: "):
        thread.call("jq", API, ".users[")
    with pytest.raises(HarnThrow, match="Cannot index"):
        thread.call("jq", API, ".users.name")
