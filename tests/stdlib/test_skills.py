"""Skill registries and the `skill NAME { ... }` declaration (spec language.md 2: skills
lower to `skill_define(skill_registry(), name, {...})`)."""

from __future__ import annotations

import io

import pytest

from harnpy.runtime.runtime import Runtime


def run(source: str) -> list[str]:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue().splitlines()


def test_skill_declaration_binds_a_registry_holding_the_skill() -> None:
    out = run(
        """
skill review {
  description "Review a pull request"
  when_to_use "when a PR is opened"
  paths ["src/"]
  on_activate { -> println("activated") }
}
pipeline main() {
  println(review._type)
  println(skill_count(review))
  let s = skill_find(review, "review")
  println(s.name + " | " + s.description + " | " + s.when_to_use)
  s.on_activate()
  println(skill_list(review)[0].has("on_activate"))
}
"""
    )
    assert out == [
        "skill_registry",
        "1",
        "review | Review a pull request | when a PR is opened",
        "activated",
        "false",
    ]


def test_skill_declared_inside_a_function_is_local() -> None:
    out = run(
        """
fn make(p) {
  skill helper { prompt p }
  return helper
}
pipeline main() {
  println(make("one").skills[0].prompt + " " + make("two").skills[0].prompt)
  println(skill_find(make("x"), "helper").description == "")
}
"""
    )
    assert out == ["one two", "true"]


def test_registry_builtins_return_new_registries() -> None:
    out = run(
        """
pipeline main() {
  let empty = skill_registry()
  let a = skill_define(empty, "a", {description: "first", when_to_use: "early"})
  let ab = skill_define(a, "b", nil)
  let replaced = skill_define(ab, "a", {description: "again"})
  println([skill_count(empty), skill_count(a), skill_count(ab), skill_count(replaced)])
  println(skill_list(replaced).map({ e -> e.name + "=" + e.description }))
  println(skill_count(skill_select(ab, ["b", "zzz"])))
  println(skill_count(skill_remove(ab, "a")))
  println(skill_find(ab, "missing"))
  println(skill_describe(a))
  println(skill_describe(empty))
}
"""
    )
    assert out == [
        "[0, 1, 2, 2]",
        "[a=again, b=]",
        "1",
        "1",
        "nil",
        "Available skills:",
        "- a: first",
        "  when: early",
        "Available skills:",
        "(none)",
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'skill_define(skill_registry(), "x", {paths: "src"})',
            "skill_define: 'paths' must be a list",
        ),
        (
            'skill_define(skill_registry(), "x", {prompt: 3})',
            "skill_define: 'prompt' must be a string",
        ),
        (
            'skill_define(skill_registry(), "", {})',
            "skill_define: skill name must be a non-empty string",
        ),
        (
            'skill_define(skill_registry(), "x", 5)',
            "skill_define: third argument must be a config dict",
        ),
        ('skill_define({}, "x", {})', "skill_define: argument must be a skill registry"),
        ("skill_find(skill_registry())", "skill_find: requires registry and name"),
        ('skill_select(skill_registry(), "a")', "skill_select: second argument must be a list"),
        ("skill_count(5)", "skill_count: requires a skill registry"),
    ],
)
def test_bad_arguments_throw_catchable_messages(call: str, message: str) -> None:
    (line,) = run(f"pipeline main() {{ try {{ {call} }} catch (e) {{ println(e) }} }}")
    assert line.startswith(message), line
