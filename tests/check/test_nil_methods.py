"""``harnpy check`` warns (W201) about a method call that is certainly nil: an unknown method
on a string, list or set, or any method on a number, bool or nil (spec 3.7 gives them nil
silently, so a misspelling otherwise goes unnoticed). ``run`` keeps the spec's behaviour."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import harnpy

PROG = """let s = "abc"
println(s.uper())
println([1, 2].lenght())
println((5).foo())
println(true.not())
println(s.upper())
println({a: 1}.kyes())
let n = nil
println(n?.upper())
fn f(x) { return x.whatever() }
println("a,b".split(",").join("-"))
"""


def test_check_warns_about_certainly_nil_method_calls_with_hints(tmp_path: Path) -> None:
    f = tmp_path / "m.harn"
    f.write_text(PROG, encoding="utf-8")
    p = harnpy("check", str(f))
    assert p.returncode == 0, p.stderr  # warnings, not errors
    warned = [ln for ln in p.stderr.splitlines() if "warning[W201]" in ln]
    assert [ln.split(":")[1] for ln in warned] == ["2", "3", "4", "5"]
    assert "no method `uper`: the call is always nil (did you mean `.upper()`?)" in warned[0]
    assert "lists have no method `lenght`" in warned[1] and "len(x)" in warned[1]
    assert "on a number is always nil" in warned[2]
    assert "on a bool is always nil" in warned[3]
    # run gives the spec's silent nil, unchanged
    r = harnpy("run", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:4] == ["nil"] * 4
