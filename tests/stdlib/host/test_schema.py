"""Schema validation, conversions, builder helpers and Harn types as schemas."""

from __future__ import annotations

import pytest

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.runtime.values import EnumValue, StructValue
from harnpy.stdlib.schema import check_param, param_error, type_to_schema
from harnpy.syntax import ast


def lit(v):
    return ast.TypeLiteral(v)


def name(n, *args):
    return ast.TypeName(n, tuple(args))


def shape(**fields):
    return ast.TypeShape(
        tuple(ast.ShapeField(k.rstrip("_"), t, optional=k.endswith("_")) for k, t in fields.items())
    )


def union(*opts):
    return ast.TypeUnion(tuple(opts))


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        ("hello", {"type": "string"}),
        (42, {"type": "int"}),
        (3.14, {"type": "float"}),
        (True, {"type": "bool"}),
        ([1, 2, 3], {"type": "list", "items": {"type": "int"}}),
        ({"name": "alice"}, {"type": "dict"}),
        ("whatever", {"type": "any"}),
        (
            {"name": "alice", "age": 30},
            {
                "type": "dict",
                "required": ["name", "age"],
                "properties": {"name": {"type": "string"}, "age": {"type": "int"}},
            },
        ),
        (
            {"address": {"city": "NYC"}},
            {
                "type": "dict",
                "properties": {
                    "address": {
                        "type": "dict",
                        "required": ["city"],
                        "properties": {"city": {"type": "string"}},
                    }
                },
            },
        ),
        ({"x": 1}, {"type": "object", "properties": {"x": {"type": "integer"}}}),
    ],
)
def test_json_validate_accepts_matching_values(thread, value, schema):
    assert thread.call("json_validate", value, schema) is True


@pytest.mark.parametrize(
    ("value", "schema", "message"),
    [
        (
            {"name": "alice"},
            {"type": "dict", "required": ["name", "age"]},
            "missing required key 'age'",
        ),
        (42, {"type": "string"}, "expected type 'string', got 'int'"),
        ([1, "x"], {"type": "list", "items": {"type": "int"}}, "at [1]: expected type 'int'"),
        (
            {"a": {"b": 1}},
            {"properties": {"a": {"properties": {"b": {"type": "string"}}}}},
            "at a.b:",
        ),
    ],
)
def test_json_validate_throws_reference_messages(thread, value, schema, message):
    with pytest.raises(HarnThrow) as info:
        thread.call("json_validate", value, schema)
    assert message in info.value.value


USER = {
    "type": "dict",
    "required": ["name", "age"],
    "properties": {
        "name": {"type": "string", "min_length": 2},
        "age": {"type": "int", "min": 0},
        "role": {"type": "string", "enum": ["admin", "user"], "default": "user"},
        "tags": {
            "type": "list",
            "min_items": 1,
            "items": {"type": "string", "pattern": "^[a-z]+$"},
        },
    },
}


def test_schema_parse_fills_defaults_and_check_collects_errors(thread):
    parsed = thread.call("schema_parse", {"name": "Ada", "age": 36, "tags": ["core"]}, USER)
    assert parsed.variant == "Ok" and parsed.fields[0]["role"] == "user"
    checked = thread.call("schema_check", {"name": "Ada", "age": 36}, USER)
    assert "role" not in checked.fields[0]
    bad = thread.call("schema_check", {"name": "A", "age": -1, "tags": ["Core"]}, USER)
    assert bad.variant == "Err"
    payload = bad.fields[0]
    assert len(payload["errors"]) == 3 and payload["message"] == payload["errors"][0]
    assert payload["value"]["name"] == "A"
    assert {i["path"] for i in payload["issues"]} == {"name", "age", "tags[0]"}


def test_schema_parse_keeps_structs(thread):
    point = StructValue("Point", {"x": 1, "y": 5})
    schema = {"type": "dict", "properties": {"label": {"type": "string", "default": "origin"}}}
    result = thread.call("schema_parse", point, schema).fields[0]
    assert type(result) is StructValue and result.fields["label"] == "origin"


def test_unions_nullable_and_const(thread):
    u = {"union": [{"type": "string", "min_length": 3}, {"type": "int", "min": 10}]}
    assert thread.call("schema_check", 12, u).variant == "Ok"
    assert thread.call("schema_check", "hi", u).variant == "Err"
    assert thread.call("schema_is", None, {"type": "string", "nullable": True})
    assert thread.call("schema_is", None, {"type": ["string", "null"]})
    assert not thread.call("schema_is", 2, {"const": 1})


def test_schema_expect_throws_joined_messages(thread):
    assert thread.call("schema_expect", {"x": 1}, {"type": "dict"}) == {"x": 1}
    with pytest.raises(HarnThrow, match="at root: expected type 'dict', got 'int'"):
        thread.call("schema_expect", 1, {"type": "dict"})


def test_schema_transforms(thread):
    js = thread.call("schema_to_json_schema", USER)
    assert js["type"] == "object" and js["properties"]["role"]["default"] == "user"
    assert js["properties"]["name"]["minLength"] == 2
    picked = thread.call("schema_pick", USER, ["name", "role"])
    assert picked["required"] == ["name"] and sorted(picked["properties"]) == ["name", "role"]
    omitted = thread.call("schema_omit", USER, ["age"])
    assert "age" not in omitted["properties"] and omitted["required"] == ["name"]
    assert "required" not in thread.call("schema_partial", USER)
    assert thread.call("schema_extend", USER, {"title": "User"})["title"] == "User"
    nullable = thread.call("schema_to_json_schema", {"type": "int", "nullable": True})
    assert nullable["type"] == ["integer", "null"]
    openapi = thread.call("schema_openapi", {"union": [{"type": "int"}, {"type": "nil"}]})
    assert openapi == {"type": "integer", "nullable": True}


def test_schema_builders(thread):
    user = thread.call(
        "schema_object",
        {
            "name": thread.call("schema_field", thread.call("schema_string")),
            "role": thread.call("schema_default", thread.call("schema_string"), "user"),
        },
        {"additional_properties": False},
    )
    assert user["required"] == ["name"]
    assert thread.call("schema_is", {"name": "Ada"}, user)
    assert not thread.call("schema_is", {"name": "Ada", "extra": 1}, user)
    assert thread.call("schema_parse", {"name": "Ada"}, user).fields[0]["role"] == "user"
    assert thread.call("schema_openapi", user)["type"] == "object"
    back = thread.call(
        "schema_from_json_schema",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    assert thread.call("schema_is", {"name": "Bob"}, back)


GRADER = shape(
    verdict=union(lit("pass"), lit("fail"), lit("unclear")),
    score=union(lit(0), lit(1), lit(2)),
    summary=name("string"),
)


def test_type_to_schema_for_shapes_and_literal_unions(thread):
    s = thread.call("schema_of", type_to_schema(GRADER))
    assert s["type"] == "dict" and s["required"] == ["verdict", "score", "summary"]
    assert s["properties"]["verdict"] == {"type": "string", "enum": ["pass", "fail", "unclear"]}
    assert s["properties"]["score"] == {"type": "int", "enum": [0, 1, 2]}
    assert thread.call("schema_is", {"verdict": "pass", "score": 2, "summary": "ok"}, s)
    assert not thread.call("schema_is", {"verdict": "nope", "score": 0, "summary": "x"}, s)
    assert not thread.call("schema_is", {"verdict": "fail", "score": 5, "summary": "x"}, s)


def test_type_schema_roundtrips_through_json_schema(thread):
    task = shape(
        title=name("string"),
        priority=union(lit("low"), lit("med"), lit("high")),
        points=union(*(lit(n) for n in (1, 2, 3, 5, 8))),
    )
    js = thread.call("schema_to_json_schema", type_to_schema(task))
    assert js["type"] == "object" and js["properties"]["points"]["enum"] == [1, 2, 3, 5, 8]
    back = thread.call("schema_from_json_schema", js)
    assert thread.call("schema_is", {"title": "t", "priority": "high", "points": 5}, back)
    assert not thread.call("schema_is", {"title": "t", "priority": "low", "points": 4}, back)


@pytest.mark.parametrize(
    ("t", "schema"),
    [
        (name("int"), {"type": "int"}),
        (name("unknown"), {"type": "any"}),
        (name("list", name("int")), {"type": "list", "items": {"type": "int"}}),
        (ast.TypeList(name("string")), {"type": "list", "items": {"type": "string"}}),
        (
            name("dict", name("string"), name("int")),
            {"type": "dict", "additional_properties": {"type": "int"}},
        ),
        (union(name("string"), name("nil")), {"type": "string", "nullable": True}),
        (union(name("string"), name("int")), {"union": [{"type": "string"}, {"type": "int"}]}),
        (ast.TypeFn((name("int"),), name("int")), {"type": "closure"}),
        (
            shape(host=name("string"), port_=name("int")),
            {
                "type": "dict",
                "properties": {"host": {"type": "string"}, "port": {"type": "int"}},
                "required": ["host"],
            },
        ),
        (name("T"), {"type": "any"}),
    ],
)
def test_type_to_schema_table(t, schema):
    assert type_to_schema(t) == schema


def test_type_to_schema_resolves_user_names():
    aliases = {"Id": name("int")}
    s = type_to_schema(
        name("list", name("Id")), lambda n: type_to_schema(aliases[n]) if n in aliases else None
    )
    assert s == {"type": "list", "items": {"type": "int"}}


USER_T = type_to_schema(shape(name=name("string"), age=name("int")))
NESTED_T = type_to_schema(shape(user=shape(name=name("string")), count=name("int")))


@pytest.mark.parametrize(
    ("value", "param", "schema", "message"),
    [
        ({"name": "Alice", "age": 30}, "u", USER_T, None),
        ({"name": "Bob", "age": 25, "role": "admin"}, "u", USER_T, None),
        ({"name": "NoAge"}, "u", USER_T, "parameter 'u': missing field 'age' (int)"),
        (
            {"name": 123, "age": 30},
            "u",
            USER_T,
            "parameter 'u': field 'name' expected string, got int",
        ),
        (
            {"user": {}, "count": 5},
            "d",
            NESTED_T,
            "parameter 'd.user': missing field 'name' (string)",
        ),
        (
            {"user": "flat", "count": 5},
            "d",
            NESTED_T,
            "parameter 'd': field 'user' expected dict or struct, got string",
        ),
        (3, "x", {"type": "float"}, None),
        ("hello", "a", {"type": "int"}, "parameter 'a' expected int, got string (hello)"),
        (
            True,
            "v",
            type_to_schema(union(name("string"), name("int"))),
            "parameter 'v' expected string|int, got bool (true)",
        ),
        (
            [1, "x"],
            "v",
            type_to_schema(name("list", name("int"))),
            "parameter 'v': at root[1]: expected type 'int', got 'string'",
        ),
        (
            {"a": 1, "b": "x"},
            "v",
            type_to_schema(name("dict", name("string"), name("int"))),
            "parameter 'v': field 'b' expected int, got string",
        ),
    ],
)
def test_param_error_messages(value, param, schema, message):
    assert param_error(value, param, schema) == message


def test_param_error_suggests_close_field_names():
    s = type_to_schema(shape(name=name("string"), email=name("string")))
    msg = param_error({"name": "t", "emial": "x"}, "data", s)
    assert "missing field 'email'" in msg and "did you mean 'emial'" in msg


def test_check_param_raises_type_errors():
    with pytest.raises(HarnError, match="^Type error: parameter 'u': missing field 'age'"):
        check_param({"name": "x"}, "u", USER_T)
    with pytest.raises(HarnError, match="TypeError: parameter 'a' expected int"):
        check_param("s", "a", {"type": "int"})
    check_param(EnumValue("Result", "Ok", [1]), "r", {"type": "enum"})


def test_validation_error_payload_displays(thread):
    bad = thread.call(
        "schema_check", {"x": 1}, {"type": "dict", "properties": {"x": {"type": "string"}}}
    )
    assert display(bad.fields[0]["errors"]) == "[at x: expected type 'string', got 'int']"


def test_struct_and_closure_types_match_their_values():
    from harnpy.runtime.values import Builtin

    assert param_error(StructValue("P", {}), "p", {"type": "struct"}) is None
    assert (
        param_error(Builtin("len", len), "f", type_to_schema(ast.TypeFn((), name("int")))) is None
    )
    assert param_error(1, "f", {"type": "closure"}) == "parameter 'f' expected closure, got int (1)"
