"""Fakes for testing the core builtins (output, strings, collections, math, iters) without
the evaluator.

``FakeThread`` collects what builtins write. ``Driver`` calls builtins and methods the way
the evaluator does (thread first, surplus arguments dropped) and runs callback builtins by
answering each ``CallRequest``: Python test callbacks are wrapped as
``Builtin(name, fn, thread_arg=False)``; ``next`` requests on a fake Harn generator are
answered from a Python iterator registered with :meth:`Driver.fake_generator`.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pytest

from harnpy.runtime.errors import HarnError
from harnpy.runtime.values import BoundMethod, Builtin, CallRequest, Generator
from harnpy.stdlib.registry import BUILTINS, lookup_method

# The builtin modules under test (imported for their registrations).
_MODULES = ("core", "strings", "lists", "dicts", "sets", "mathlib", "iters")
for _name in _MODULES:
    importlib.import_module(f"harnpy.stdlib.{_name}")


class FakeThread:
    """The slice of the evaluator's thread that builtins use."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.err: list[str] = []
        self.runtime = SimpleNamespace(stdout_isatty=False)

    def write_out(self, text: str) -> None:
        self.out.append(text)

    def write_err(self, text: str) -> None:
        self.err.append(text)

    def source_path(self) -> str | None:
        return None

    @property
    def stdout(self) -> str:
        return "".join(self.out)


class Driver:
    """Calls builtins/methods and answers the CallRequests of callback builtins."""

    def __init__(self) -> None:
        self.thread = FakeThread()
        self.calls = 0  # number of CallRequests answered
        self._gens: dict[int, Any] = {}

    # -- values used as Harn callbacks -------------------------------------------------

    def fn(self, f: Callable[..., Any], name: str = "f") -> Builtin:
        """Wrap a Python function as a Harn builtin value (no thread argument)."""
        return Builtin(name, f, thread_arg=False)

    def fake_generator(self, items: Iterable[Any]) -> Generator:
        """A Harn generator value whose ``next()`` yields ``items``."""
        g = Generator(None, "generator")
        self._gens[id(g)] = iter(items)
        return g

    # -- calling ------------------------------------------------------------------------

    def call(self, name: str, *args: Any) -> Any:
        """Call global builtin ``name``."""
        return self.invoke(BUILTINS[name], list(args))

    def meth(self, type_name: str, name: str, receiver: Any, *args: Any) -> Any:
        """Call method ``name`` of Harn type ``type_name`` on ``receiver``."""
        b = lookup_method(type_name, name)
        assert b is not None, f"no method {type_name}.{name}"
        if b.max_args is not None:
            args = args[: b.max_args]
        return self._run(b, [receiver, *args])

    def invoke(self, b: Builtin, args: list[Any]) -> Any:
        if b.max_args is not None:
            args = args[: b.max_args]
        return self._run(b, args)

    def _run(self, b: Builtin, args: list[Any]) -> Any:
        r = b.fn(self.thread, *args) if b.thread_arg else b.fn(*args)
        if not b.callback:
            return r
        assert isinstance(r, types.GeneratorType), f"{b.name} is not a generator"
        send: Any = None
        while True:
            try:
                req = r.send(send)
            except StopIteration as stop:
                return stop.value
            assert isinstance(req, CallRequest)
            self.calls += 1
            try:
                send = self._answer(req)
            except HarnError as exc:
                send = None
                try:
                    req = r.throw(exc)
                except StopIteration as stop:  # pragma: no cover - builtins do not catch
                    return stop.value
                raise AssertionError("callback builtin swallowed a Harn error") from exc

    def _answer(self, req: CallRequest) -> Any:
        f = req.fn
        if type(f) is Builtin:
            return self.invoke(f, list(req.args))
        if type(f) is BoundMethod and type(f.receiver) is Generator and f.name == "next":
            src = self._gens[id(f.receiver)]
            for v in src:
                return {"done": False, "value": v}
            f.receiver.done = True
            return {"done": True, "value": None}
        raise AssertionError(f"unexpected callable {f!r}")


@pytest.fixture
def h() -> Driver:
    """A fresh driver with its own fake thread."""
    return Driver()
