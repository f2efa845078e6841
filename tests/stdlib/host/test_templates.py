"""The template mini-language of ``render``/``render_string`` (spec 4.16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.values import HSet, RangeValue


@pytest.mark.parametrize(
    ("template", "bindings", "expected"),
    [
        ("Hi {{name}}!", {"name": "Ann"}, "Hi Ann!"),
        ("Hi {{ name }} and {{other}}", {}, "Hi {{ name }} and {{other}}"),
        (
            "{{ user.name }}/{{ user.tags[0] }}/{{ user.tags[-1] }}",
            {"user": {"name": "A", "tags": ["x", "y"]}},
            "A/x/y",
        ),
        ('{{ d["k k"] }}', {"d": {"k k": 3}}, "3"),
        ("[{{ user.missing }}]", {"user": {}}, "[]"),
        ("{{ n }} {{ f }} {{ xs }}", {"n": 1, "f": 2.0, "xs": [1, "a"]}, "1 2.0 [1, a]"),
        ("{{ if n == 1 }}one{{ elif n == 2 }}two{{ else }}many{{ end }}", {"n": 2}, "two"),
        ("{{ if n == 1 }}one{{ elif n == 2 }}two{{ else }}many{{ end }}", {"n": 9}, "many"),
        ("{{if flag}}yes{{end}}|{{if missing}}no{{end}}", {"flag": True}, "yes|"),
        ("{{ if s }}x{{ else }}blank{{ end }}", {"s": "  "}, "blank"),
        ("{{ if not a and (b or c) }}ok{{ end }}", {"a": False, "b": 0, "c": [1]}, "ok"),
        ("{{ if !a || b >= 3 }}ok{{ end }}", {"a": True, "b": 3}, "ok"),
        ("{{ if name != 'x' && n < 10 }}ok{{ end }}", {"name": "y", "n": 2}, "ok"),
        (
            "{{ for x in xs }}{{ loop.index }}/{{ loop.index0 }}/{{ loop.length }}:{{ x }}{{ if !loop.last }}, {{ end }}{{ end }}",
            {"xs": ["a", "b"]},
            "1/0/2:a, 2/1/2:b",
        ),
        (
            "{{ for x in xs }}{{ if loop.first }}^{{ end }}{{ x }}{{ end }}",
            {"xs": HSet([3, 4])},
            "^34",
        ),
        ("{{ for x in xs }}*{{ else }}(none){{ end }}", {"xs": []}, "(none)"),
        ("{{ for x in missing }}*{{ else }}(none){{ end }}", {}, "(none)"),
        ("{{ for k, v in m }}{{ k }}={{ v }};{{ end }}", {"m": {"b": 2, "a": 1}}, "a=1;b=2;"),
        ("{{ for i, x in xs }}{{ i }}{{ x }}{{ end }}", {"xs": ["a", "b"]}, "0a1b"),
        ("{{ for i in r }}{{ i }}{{ end }}", {"r": RangeValue(1, 3, True)}, "123"),
        ("Before{{# note #}}After", {}, "BeforeAfter"),
        ("{{ raw }}{{ x }} {{if y}}{{ endraw }}!", {"x": 1}, "{{ x }} {{if y}}!"),
        ("a  \n  {{- x -}}  \n  b", {"x": "X"}, "a  X  b"),
        ("{{ x -}}\n\nz", {"x": 1}, "1\nz"),
        (
            "{{ v | upper }} {{ v | lower }} {{ v | capitalize }}",
            {"v": "hEllo"},
            "HELLO hello Hello",
        ),
        (
            "{{ v | title }}|{{ v | trim | length }}",
            {"v": " the quick  fox "},
            " The Quick  Fox |14",
        ),
        (
            "{{ xs | first }}{{ xs | last }}{{ xs | reverse | join: '-' }}",
            {"xs": [1, 2, 3]},
            "133-2-1",
        ),
        ('{{ missing | default: "anon" }}', {}, "anon"),
        ("{{ d | json }}", {"d": {"b": [1, None], "a": "x"}}, '{"a":"x","b":[1,null]}'),
        ("{{ s | indent: 2 }}", {"s": "a\nb\n\nc"}, "a\n  b\n\n  c"),
        ("{{ s | indent: 2, true }}", {"s": "a\nb"}, "  a\n  b"),
        ("{{ s | lines | length }}", {"s": "a\nb"}, "2"),
        ("{{ s | escape_md }}", {"s": "*hi* [x]"}, "\\*hi\\* \\[x\\]"),
        ('{{ s | replace: "a", "o" }}', {"s": "banana"}, "bonono"),
        ('{{ "}}" }}', {}, "}}"),
    ],
)
def test_render_string_table(thread, template, bindings, expected):
    assert thread.call("render_string", template, bindings) == expected


def test_render_string_without_bindings_leaves_names(thread):
    assert thread.call("render_string", "Hello, {{name}}!") == "Hello, {{name}}!"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ if x }}open", "`{{ if }}` missing matching `{{ end }}`"),
        ("{{ end }}", "unexpected `{{ end }}`"),
        ("{{ x | nope }}", "unknown filter `nope`"),
        ("{{ x", "unterminated directive"),
        ("{{# never closed", "unterminated comment"),
        ("{{ for x xs }}{{ end }}", "expected `in` in for-loop"),
        ("{{ for x in n }}{{ end }}", "cannot iterate"),
    ],
)
def test_template_errors_carry_positions(thread, template, message):
    with pytest.raises(HarnThrow) as info:
        thread.call("render_string", template, {"n": 5, "x": 1})
    assert message in info.value.value and "at 1:" in info.value.value


def test_render_resolves_paths_and_includes(thread, tmp_path):
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "page.prompt").write_text(
        'Hello!\n{{ include "part.prompt" }}\n--\n{{ include "part.prompt" with { name: "override" } }}\nDone.\n'
    )
    (tmp_path / "tpl" / "part.prompt").write_text("> partial: {{name}}")
    out = thread.call("render", "tpl/page.prompt", {"name": "Alice"})
    assert out == "Hello!\n> partial: Alice\n--\n> partial: override\nDone.\n"


def test_include_cycles_are_detected(thread, tmp_path):
    (tmp_path / "a.prompt").write_text('A {{ include "b.prompt" }}')
    (tmp_path / "b.prompt").write_text('B {{ include "a.prompt" }}')
    with pytest.raises(
        HarnThrow, match="circular include detected: .*a.prompt → .*b.prompt → .*a.prompt"
    ):
        thread.call("render", "a.prompt", {})


def test_render_missing_file_throws(thread):
    with pytest.raises(HarnThrow, match="render: cannot read template 'nope.prompt'"):
        thread.call("render", "nope.prompt")


SHARED = Path(__file__).resolve().parents[3].parent / "shared"
FIXTURES = SHARED / "conformance" / "cases" / "tests" / "templates" / "fixtures"


@pytest.mark.parametrize(
    ("path", "bindings", "expected"),
    [
        ("greeting.prompt", {"name": "Alice", "place": "Harn"}, "Hello, Alice! Welcome to Harn."),
        ("greeting.prompt", None, "Hello, {{name}}! Welcome to {{place}}."),
        ("template/backcompat.prompt", {"name": "Bob"}, "Hello, Bob!\nDone.\n"),
        (
            "template/comments_raw.prompt",
            {},
            "BeforeAfter\nRaw: {{ not_a_directive }} {{if x}}...\nAfter raw.\n",
        ),
        (
            "template/for_loop.prompt",
            {"xs": ["apple", "banana"]},
            "items:\n- 1. apple\n- 2. banana\n",
        ),
        ("template/for_dict.prompt", {"m": {"beta": 2, "alpha": 1}}, "alpha=1\nbeta=2\n"),
        ("template/if_elif_else.prompt", {"n": 3}, "three\n"),
    ],
)
def test_conformance_fixture_templates(thread, path, bindings, expected):
    if not FIXTURES.is_dir():
        pytest.skip("shared conformance cases are not available")
    thread.source = FIXTURES.parent / "case.harn"
    assert thread.call("render", f"fixtures/{path}", bindings) == expected
