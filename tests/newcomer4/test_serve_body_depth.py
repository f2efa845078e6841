"""A request body nested deeper than the decoder's recursion limit answered ``500
internal`` (a RecursionError traceback in the server log), and one nested 20,000 deep was
accepted and then failed its run with ``E399 internal error``: both are a ``400
invalid_json`` at the door now (found trying ``harnpy serve`` as an attacker)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from harnpy.serve.app import MAX_BODY_DEPTH, ApiError, parse_body


@pytest.fixture(autouse=True)
def server_recursion_limit() -> Iterator[None]:
    """The limit ``harnpy serve`` runs with (``cli.main`` raises it to 30,000): a body at
    the depth limit must parse there."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 30_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def nested(depth: int) -> bytes:
    return b'{"entry": "greet", "input": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("depth", [MAX_BODY_DEPTH, 20_000, 200_000])
def test_a_body_nested_too_deep_is_invalid_json(depth: int) -> None:
    with pytest.raises(ApiError) as e:
        parse_body(nested(depth))  # the dict is one level, so MAX_BODY_DEPTH lists is one more
    assert (e.value.status, e.value.type) == (400, "invalid_json")
    assert e.value.message == f"the request body is nested more than {MAX_BODY_DEPTH} levels deep"


def test_dicts_count_like_lists() -> None:
    body = b'{"a": ' * MAX_BODY_DEPTH + b"1" + b"}" * MAX_BODY_DEPTH
    assert parse_body(body) is not None  # exactly the limit
    with pytest.raises(ApiError):
        parse_body(b"[" + body + b"]")


def test_a_body_at_the_limit_and_ordinary_bodies_parse() -> None:
    v = parse_body(nested(MAX_BODY_DEPTH - 1))
    assert v["entry"] == "greet"
    assert parse_body(b'{"entry": "greet", "input": {"name": "x", "tags": [1, [2]]}}') == {
        "entry": "greet",
        "input": {"name": "x", "tags": [1, [2]]},
    }


def test_not_json_is_still_invalid_json() -> None:
    with pytest.raises(ApiError) as e:
        parse_body(b"{not json")
    assert e.value.type == "invalid_json"
    assert e.value.message.startswith("the request body is not JSON: ")


def test_brackets_inside_strings_do_not_count() -> None:
    deep_text = "[" * (MAX_BODY_DEPTH * 2)
    body = b'{"entry": "greet", "input": {"text": "' + deep_text.encode() + b'\\" {{"}}'
    assert parse_body(body)["input"]["text"] == deep_text + '" {{'
