"""Output builtins (spec 3.3, 4.1): println/print/log/eprint, format, colour helpers."""

from __future__ import annotations

import pytest

from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.runtime.values import HSet, ok
from tests.conftest import harnpy


@pytest.mark.parametrize(
    ("name", "args", "written"),
    [
        ("println", ["hi"], "hi\n"),
        ("println", [], "\n"),
        ("println", [[1, 2.5, "x", None]], "[1, 2.5, x, nil]\n"),
        ("print", ["no newline"], "no newline"),
        ("print", [], ""),
        ("log", [ok(42)], "[harn] Result.Ok(42)\n"),
        ("log", [{"b": [2], "a": 1}], "[harn] {a: 1, b: [2]}\n"),
        ("log", [], "[harn] \n"),
        ("log", [HSet([1, 2])], "[harn] set(1, 2)\n"),
    ],
)
def test_output_builtins_print_display_of_their_argument(h, name, args, written):
    assert h.call(name, *args) is None
    assert h.thread.stdout == written
    assert h.thread.err == []


def test_eprint_and_eprintln_write_to_stderr_only(h):
    h.call("eprint", "warn: ")
    h.call("eprintln", "disk full")
    assert "".join(h.thread.err) == "warn: disk full\n"
    assert h.thread.stdout == ""


@pytest.mark.parametrize("name", ["println", "print", "log", "eprint", "eprintln"])
def test_output_builtins_refuse_a_second_argument_naming_the_builtin(h, name):
    # Harn's output builtins take one value; a second one used to vanish silently
    # (println("total", n) printed "total").
    with pytest.raises(HarnError) as exc:
        h.call(name, "total", 3)
    msg = str(exc.value)
    assert f"{name}: takes one value, got 2 arguments" in msg
    assert f'{name}("${{a}} ${{b}}")' in msg
    assert exc.value.code == "E324"
    assert h.thread.stdout == "" and h.thread.err == []


def test_extra_output_argument_is_catchable_from_harn(tmp_path):
    prog = tmp_path / "p.harn"
    prog.write_text(
        "pipeline default() {\n"
        '  let r = try { println("a", "b") } catch (e) { "caught: ${e}" }\n'
        "  println(r)\n"
        "}\n"
    )
    res = harnpy("run", str(prog))
    assert res.returncode == 0, res.stderr
    assert res.stdout == (
        "caught: Runtime error: println: takes one value, got 2 arguments; join them into "
        'one string first, e.g. println("${a} ${b}")\n'
    )


@pytest.mark.parametrize(
    ("args", "result"),
    [
        (["Hello, {}!", "world"], "Hello, world!"),
        (["{} is {} years old", "world", 42], "world is 42 years old"),
        (["no placeholders"], "no placeholders"),
        (["{} + {} = {}", 1, 2, 3], "1 + 2 = 3"),
        (["{} and {}", "one"], "one and {}"),
        (["Hello {name} from {city}", {"name": "Alice", "city": "NYC"}], "Hello Alice from NYC"),
        (["{a} + {b} = {c}", {"a": 1, "b": 2, "c": 3}], "1 + 2 = 3"),
        (["{known} {unknown}", {"known": [1]}], "[1] {unknown}"),
        (["nothing named", {"x": 1}], "nothing named"),
    ],
)
def test_format_fills_positional_and_named_placeholders(h, args, result):
    assert h.call("format", *args) == result


def test_colour_helpers_are_plain_text_when_not_a_tty(h):
    assert h.call("color", "hi", "red") == "hi"
    assert h.call("bold", "hi") == "hi"
    assert h.call("dim", 5) == "5"


def test_colour_helpers_follow_the_tty_in_auto_mode(h):
    h.thread.runtime.stdout_isatty = True
    assert h.call("color", "hi", "red") == "\x1b[31mhi\x1b[0m"


def test_set_color_mode_forces_ansi_on_or_off(h):
    h.call("set_color_mode", "always")
    assert h.call("color", "hi", "red") == "\x1b[31mhi\x1b[0m"
    assert h.call("bold", "hi") == "\x1b[1mhi\x1b[0m"
    assert h.call("dim", "hi") == "\x1b[2mhi\x1b[0m"
    assert h.call("color", "hi", "no-such-colour") == "hi"
    h.thread.runtime.stdout_isatty = True
    h.call("set_color_mode", "never")
    assert h.call("color", "hi", "red") == "hi"


def test_set_color_mode_rejects_unknown_modes(h):
    with pytest.raises(HarnThrow):
        h.call("set_color_mode", "sometimes")
