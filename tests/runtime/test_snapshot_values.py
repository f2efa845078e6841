"""Round trips of every value type through the snapshot encoding (Hypothesis), plus the
sharing and cycle guarantees of the heap table."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harnpy.runtime.snapshot import _Decoder, _Encoder
from harnpy.runtime.values import (
    Atomic,
    Duration,
    EnumValue,
    HSet,
    Pair,
    RangeValue,
    StructValue,
)


class _FakeRuntime:
    builtins: dict[str, Any] = {}


class _FakeThread:
    runtime = _FakeRuntime()


def roundtrip(value: Any) -> Any:
    """Encode ``value`` as the snapshot does, through real JSON text, and decode it."""
    enc = _Encoder({})
    enc.count([value])
    payload = enc.enc(value, "v")
    doc = json.loads(json.dumps({"heap": enc.heap, "v": payload}, allow_nan=False))
    dec = _Decoder({"heap": doc["heap"]}, {}, _FakeThread())
    return dec.dec(doc["v"])


def same(a: Any, b: Any) -> bool:
    """Structural identity including types (stricter than Harn ``==``: 1 vs 1.0 differ)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or a == b
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is HSet:
        return same(a.items, b.items)
    if type(a) is EnumValue:
        return a.enum == b.enum and a.variant == b.variant and same(a.fields, b.fields)
    if type(a) is StructValue:
        return a.name == b.name and same(a.fields, b.fields)
    if type(a) is Pair:
        return same(a.first, b.first) and same(a.second, b.second)
    if type(a) is RangeValue:
        return (a.start, a.end, a.inclusive) == (b.start, b.end, b.inclusive)
    if type(a) is Duration:
        return a.ms == b.ms
    if type(a) is Atomic:
        return same(a.value, b.value)
    return bool(a == b)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=10),
    st.builds(Duration, st.integers(-(10**9), 10**9)),
    st.builds(RangeValue, st.integers(-50, 50), st.integers(-50, 50), st.booleans()),
)

keys = st.one_of(st.text(max_size=8), st.sampled_from(["$t", "$ref", "$dict", "_type"]))


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(keys, children, max_size=5),
        st.lists(children, max_size=4).map(lambda xs: HSet.from_unique(xs)),
        st.builds(
            EnumValue,
            st.sampled_from(["Result", "Color"]),
            st.sampled_from(["Ok", "Err", "Red"]),
            st.lists(children, max_size=3),
        ),
        st.builds(
            StructValue,
            st.sampled_from(["Point", "User"]),
            st.dictionaries(st.text(max_size=5), children, max_size=3),
        ),
        st.builds(Pair, children, children),
        st.builds(Atomic, children),
    )


values = st.recursive(scalars, _extend, max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(values)
def test_every_value_type_round_trips(value: Any) -> None:
    assert same(roundtrip(value), value)


def test_shared_containers_stay_shared_and_cycles_survive() -> None:
    inner = [1, 2]
    outer = {"a": inner, "b": inner, "c": [inner]}
    back = roundtrip(outer)
    assert back["a"] is back["b"] is back["c"][0]
    cell = Atomic(None)
    loop = [cell]
    cell.value = loop  # a cycle through an atomic
    back_loop = roundtrip(loop)
    assert back_loop[0].value is back_loop


def test_dict_keys_that_look_like_tags_are_escaped() -> None:
    tricky = {"$t": "closure", "$ref": 0}
    assert roundtrip(tricky) == tricky
