"""The one "did you mean" helper (spec 3.10): Levenshtein budget by the name's length."""

from __future__ import annotations

import pytest

from harnpy.diagnostics import did_you_mean, levenshtein


@pytest.mark.parametrize(
    ("a", "b", "d"),
    [("", "", 0), ("a", "", 1), ("kitten", "sitting", 3), ("kjx", "vqx", 2), ("é", "e", 1)],
)
def test_levenshtein(a: str, b: str, d: int) -> None:
    assert levenshtein(a, b) == d == levenshtein(b, a)


@pytest.mark.parametrize(
    ("name", "candidates", "hint"),
    [
        ("ab", ["xb"], "xb"),  # length <= 2: distance 1
        ("ab", ["xy"], None),
        ("kjx", ["vqx"], "vqx"),  # length 3-5: distance 2
        ("abcde", ["axyde"], "axyde"),
        ("abcde", ["xyzde"], None),
        ("reponse", ["response"], "response"),
        ("abcdef", ["xyzdef"], "xyzdef"),  # length >= 6: distance 3
        ("abcdef", ["wxyzef"], None),
        ("printl", ["print", "println"], "println"),  # tie: longest common prefix
        ("abc", ["abd", "abe"], "abd"),  # then alphabetical
        ("abc", ["abx", "ab"], "ab"),  # closest first
        ("x", ["x"], None),  # the name itself is no hint
        ("_", ["a"], None),  # `_` is never bound
        ("agent_x", ["__agent_x"], None),  # internal builtins only for `__` names
        ("__agent_x", ["__agent_y"], "__agent_y"),
    ],
)
def test_did_you_mean_budget(name: str, candidates: list[str], hint: str | None) -> None:
    assert did_you_mean(name, candidates) == hint


def test_on_a_tie_the_programs_own_names_win_over_builtins() -> None:
    # `jq` (a builtin) and `vqx` (the user's variable) are both 2 edits from `kjx`
    assert did_you_mean("kjx", ["jq", "vqx"]) == "jq"
    assert did_you_mean("kjx", ["jq", "vqx"], preferred={"vqx"}) == "vqx"
    # a closer builtin still beats a farther own name
    assert did_you_mean("prinln", ["println", "prinxxx"], preferred={"prinxxx"}) == "println"


def test_runtime_and_checker_hints_prefer_the_programs_names() -> None:
    import io

    from harnpy.runtime.errors import HarnError
    from harnpy.runtime.runtime import Runtime

    rt = Runtime(stdout=io.StringIO().write)
    with pytest.raises(HarnError) as info:
        rt.run_module(rt.load_main("<t>", "let vqx = 1\nprintln(kjx)\n"))
    assert info.value.message.endswith("(did you mean `vqx`?)")
    # the static checker (a call to an undefined function)
    from harnpy.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError) as static:
        rt.load_main("<t2>", "fn vqx() { return 1 }\nprintln(kjx())\n")
    assert static.value.diagnostics[0].message.endswith("(did you mean `vqx`?)")


def test_an_assignment_to_an_undeclared_name_says_how_to_declare_it() -> None:
    # Python's `x = 1`: the hint is the declaration, not a near name (`e` is one edit away)
    import io

    from harnpy.check import check_file
    from harnpy.runtime.errors import HarnError
    from harnpy.runtime.runtime import Runtime

    rt = Runtime(stdout=io.StringIO().write)
    with pytest.raises(HarnError) as info:
        rt.run_module(rt.load_main("<t>", "x = 1\n"))
    assert info.value.message == "Undefined variable: x (declare it first: `var x = ...`)"
    (d,) = check_file("<t>", "x = 1\n", {"e", "println"})
    assert d.code == "E210"
    assert d.message == "Undefined variable: x (declare it first: `var x = ...`)"
