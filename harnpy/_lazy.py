"""Deferred imports for modules that only some builtins need (keeps ``harnpy run`` lean)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """A stand-in for a module that is imported on first attribute access."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_lazy_name"] = name
        self.__dict__["_lazy_mod"] = None

    def _load(self) -> ModuleType:
        mod = self.__dict__["_lazy_mod"]
        if mod is None:
            mod = importlib.import_module(self.__dict__["_lazy_name"])
            self.__dict__["_lazy_mod"] = mod
        return mod  # type: ignore[no-any-return]

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)


def lazy_module(name: str) -> Any:
    """Return a proxy for module ``name`` that imports it when first used."""
    return LazyModule(name)
