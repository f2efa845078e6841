"""The ``stream.*`` operator builtins (harnpy/stdlib/streams.py), run in-process.

Until the interpreter exposes the ``stream`` namespace (``stream.map(...)``), the programs
here reach each builtin through a runtime constant ``s_<name>`` bound to ``stream.<name>``.
"""

from __future__ import annotations

from typing import Any

import pytest

from harnpy.runtime.errors import HarnError
from harnpy.runtime.runtime import Runtime
from harnpy.stdlib.registry import BUILTINS
from harnpy.stdlib.streams import NAMES, stream_namespace


def run(source: str) -> str:
    out: list[str] = []
    rt = Runtime(stdout=out.append)
    for n in NAMES:
        rt.constants[f"s_{n}"] = BUILTINS[f"stream.{n}"]
    mod = rt.load_main("<streams-test>", source)
    rt.run_module(mod)
    return "".join(out)


def lines(body: str) -> list[str]:
    return run("pipeline default() {\n" + body + "\n}\n").splitlines()


def test_namespace_lists_every_operator() -> None:
    ns: dict[str, Any] = stream_namespace()
    assert ns["_namespace"] == "stream"
    assert sorted(k for k in ns if k != "_namespace") == sorted(NAMES)
    assert ns["merge"].name == "stream.merge"


def test_combinators_are_lazy_streams() -> None:
    out = lines(
        """
  let seen = atomic(0)
  let s = s_map(s_tap([1, 2, 3, 4], { x -> atomic_add(seen, 1) }), { x -> x * x })
  println(type_of(s))
  println(atomic_get(seen))
  println(s_collect(s_take(s, 2)))
  println(atomic_get(seen))
  for rest in s { println(rest) }
  println(s_collect(s_scan(1 to 4, 0, { a, x -> a + x })))
  println(s_fold(s_filter([1, 2, 3, 4, 5], { x -> x % 2 == 1 }), "", { a, x -> a + to_string(x) }))
  println(s_collect(s_take_until(["a", "b", "stop", "c"], { x -> x == "stop" })))
  println(s_collect(s_zip(s_map([1, 2], { x -> x }), "xyz")))
  println(s_first(s_filter([1, 2], { x -> x > 5 })))
"""
    )
    assert out == [
        "stream",
        "0",
        "[1, 4]",
        "2",
        "9",
        "16",
        "[1, 3, 6, 10]",
        "135",
        "[a, b]",
        "[(1, x), (2, y)]",
        "nil",
    ]


def test_merge_interleave_race_broadcast() -> None:
    out = lines(
        """
  println(s_collect(s_merge([1, 2, 3], ["a"], [])))
  println(s_collect(s_interleave([1, 2, 3], ["a"])))
  println(s_collect(s_race([], ["x", "y"], [1])))
  let b = s_broadcast(s_map([1, 2], { x -> x * 10 }), 3)
  println([s_collect(b[2]), s_collect(b[0]), s_first(b[1])])
  // an open channel without messages is not ready: other sources go first
  let quiet = channel("quiet")
  let busy = channel("busy")
  send(busy, "b1")
  send(busy, "b2")
  println(s_first(s_merge(quiet, busy)))
  spawn {
    sleep(5)
    send(quiet, "q1")
    close_channel(quiet)
    close_channel(busy)
  }
  println(s_collect(s_merge(quiet, busy)))
  let late = channel("late")
  let early = channel("early")
  spawn {
    sleep(5)
    send(early, "e")
    close_channel(early)
    sleep(1)
    send(late, "l")
  }
  println(s_collect(s_race(late, early)))
"""
    )
    assert out == [
        "[1, a, 2, 3]",
        "[1, a, 2, 3]",
        "[x, y]",
        "[[10, 20], [10, 20], 10]",
        "b1",
        "[b2, q1]",
        "[e]",
    ]


def test_throttle_and_debounce_on_the_runtime_clock() -> None:
    out = lines(
        """
  mock_time(0)
  let t0 = monotonic_ms()
  println(s_collect(s_throttle([1, 2, 3], 100)))
  println(monotonic_ms() - t0)
  println(s_collect(s_debounce([1, 2, 3], 50)))
  let ch = channel("events")
  spawn {
    send(ch, "a")
    send(ch, "b")
    sleep(100)
    send(ch, "c")
    close_channel(ch)
  }
  println(s_collect(s_debounce(ch, 30)))
"""
    )
    assert out == ["[1, 2, 3]", "20", "[3]", "[b, c]"]


def test_errors() -> None:
    out = lines(
        """
  println(try { s_collect([1, 2, 3], {max: 2}) })
  println(s_collect([1, 2], 2))
  let failing = s_map([1, 2], { x ->
    if x == 2 { throw "bad item" }
    x
  })
  println(try { s_collect(s_merge(failing, [9])) })
  println(try { s_map(5, { x -> x }) })
  println(try { s_take([1], -1) })
  println(try { s_throttle([1], 0) })
  println(try { s_zip([1]) })
"""
    )
    assert out == [
        "Result.Err(Runtime error: stream.collect: stream produced more than 2 items)",
        "[1, 2]",
        "Result.Err(bad item)",
        "Result.Err(Type error: stream.map: expected a stream, list, iter or channel, got int)",
        "Result.Err(Type error: stream.take: argument 2 must be a non-negative int, got int)",
        "Result.Err(Type error: stream.throttle: argument 2 must be a positive finite number)",
        "Result.Err(Type error: stream.zip: expected 2 streams, got 1)",
    ]


def test_unknown_source_type_is_a_type_error() -> None:
    with pytest.raises(HarnError, match="stream.first: expected a stream"):
        run("pipeline default() { s_first(3.5) }")
