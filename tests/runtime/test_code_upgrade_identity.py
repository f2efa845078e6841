"""Function identities and fingerprints of ``--upgrade-code`` (harnpy.runtime.code_upgrade):
stable when functions move or others change, changed by an edit of the function itself,
not by comments, layout or a tool's description."""

from __future__ import annotations

from harnpy.runtime.code_upgrade import module_functions
from harnpy.syntax import parse

BASE = """fn a(x) {
  return x + 1
}

tool lookup(q: string) {
  description "find things"
  return q
}

fn b(y) {
  let f = { z -> z * y }
  return f(2)
}
"""


def _fns(src: str) -> dict[str, str]:
    return {k: v.tree_hash for k, v in module_functions(parse(src, "m.harn")).by_ident.items()}


def test_identities_name_functions_by_their_place() -> None:
    fns = module_functions(parse(BASE, "m.harn"))
    assert set(fns.by_ident) == {"<module>", "fn a", "tool lookup", "fn b", "fn b/closure#0"}
    assert fns.by_ident["fn b/closure#0"].name == "a closure in `b`"
    assert fns.by_ident["tool lookup"].name == "tool `lookup`"
    assert fns.by_ident["fn a"].line == 1


def test_moving_a_function_or_editing_another_keeps_its_fingerprint() -> None:
    base = _fns(BASE)
    moved = BASE.replace("fn a(x) {\n  return x + 1\n}\n", "") + "\nfn a(x) {\n  return x + 1\n}\n"
    assert _fns(moved)["fn a"] == base["fn a"]
    assert _fns(moved)["fn b"] == base["fn b"]
    other = _fns(BASE.replace("x + 1", "x + 2"))
    assert other["fn a"] != base["fn a"] and other["fn b"] == base["fn b"]
    # only the top level's declarations list, not their bodies, make up the top level
    assert other["<module>"] == base["<module>"]
    assert _fns(moved)["<module>"] != base["<module>"]


def test_comments_layout_and_tool_descriptions_are_not_changes() -> None:
    base = _fns(BASE)
    relaid = _fns(BASE.replace("return x + 1", "// one more\n  return   x+1"))
    assert relaid["fn a"] == base["fn a"]
    described = _fns(BASE.replace('"find things"', '"find things, better"'))
    assert described["tool lookup"] == base["tool lookup"]
    assert _fns(BASE.replace("return q", "return q + q"))["tool lookup"] != base["tool lookup"]
    # an edit inside a nested closure changes it and the function around it
    nested = _fns(BASE.replace("z * y", "z + y"))
    assert nested["fn b/closure#0"] != base["fn b/closure#0"] and nested["fn b"] != base["fn b"]
