"""Editing helpers of the REPL: when an entry is complete, auto-indent, completion,
``:doc``/``:type`` texts, the history file, and the Harn Pygments lexer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harnpy.repl import (
    HistoryFile,
    complete,
    describe_type,
    doc_text,
    indent_for,
    is_complete,
    read_entries,
    scan,
    stdlib_modules,
)
from harnpy.runtime.session import Session

# ----------------------------------------------------------------- completeness


@pytest.mark.parametrize(
    "text",
    [
        "1 + 2",
        "let x = 1",
        "fn f() { return 1 }",
        'println("a { b")',  # braces inside strings do not count
        "let s = \"${ {a: 1}['a'] }\"",
        'r"C:\\{"',
        "x // trailing { comment",
        "/* a { */ 1",
        '"""\nclosed\n"""',
        "fn f() {\n  1\n}",
        "fn f()\n",  # an empty last line submits (the parser reports the error)
        '"abc',  # plain strings end at the line end: submit, show the error
        'let s = "${ f("',  # an interpolation of a plain string too
        'let u = "${ "{" }"',  # the lexer counts that brace: unterminated, reported at once
        "xs.map({ x -> x })",
        "0 to 10 exclusive",
        "return",
        ":load some file.harn",
        "let a = 1 /** not a doc comment: code before it */",
        "//// four slashes are a plain comment",
        "/*** three stars are a plain comment */",
        "/// a doc comment ended by an empty line\n",
    ],
)
def test_complete_entries(text: str) -> None:
    assert is_complete(text)


@pytest.mark.parametrize(
    "text",
    [
        "fn f() {",
        "foo(1,",
        "[1, 2",
        "let x =",
        "1 +",
        "xs |>",
        "a &&",
        "x.",
        '"""\nstill open',
        "/* open /* nested */",
        "a \\",
        "fn f()",  # the parser wants more, and the line is not empty
        "if x { 1 }\nelse",
        "for x in",
        "match x",
        "/// Doubles a number.",  # a doc comment waits for the declaration it documents
        "/// two\n/// lines",
        "/** Triples a number. */",
        "/**\n * A block doc comment.\n */",
    ],
)
def test_incomplete_entries(text: str) -> None:
    assert not is_complete(text)


def test_scan_tracks_brackets_outside_strings_and_comments() -> None:
    st = scan('fn f(a) {\n  let s = "}" // )\n  [1, (2')
    assert st.brackets == ["{", "[", "("]
    assert st.depth == 3
    assert not scan("(]").brackets or scan("(]").mismatch


def test_indent_follows_open_brackets() -> None:
    assert indent_for("fn f() {") == "    "
    assert indent_for("fn f() {\n    if x {") == "        "
    assert indent_for("f(1)") == ""


def test_read_entries_splits_piped_input_like_the_terminal() -> None:
    lines = ["fn add(a, b) {\n", "  return a + b\n", "}\n", "\n", "add(1,\n", " 2)\n", "x +"]
    assert list(read_entries(lines)) == [
        "fn add(a, b) {\n  return a + b\n}",
        "add(1,\n 2)",
        "x +",  # end of input submits what is left
    ]


# ------------------------------------------------------------------- completion


@pytest.fixture
def session() -> Session:
    s = Session()
    s.eval('let greeting = "hi"\nvar items = [1, 2]\nlet cfg = {name: 1, depth: 2}')
    s.eval("fn greet_all() { return 1 }")
    s.eval("enum Mood { Happy, Sad }")
    s.eval("struct Pt { x: int, y: int }\nimpl Pt { fn len2(self) { return 0 } }")
    s.eval("let pt = Pt { x: 1, y: 2 }")
    return s


def _texts(cands: list) -> list[str]:  # type: ignore[type-arg]
    return [c.text for c in cands]


def test_completes_keywords_builtins_and_names_in_scope(session: Session) -> None:
    got = complete(session, "gre")
    assert {"greeting", "greet_all"} <= set(_texts(got))
    assert all(c.start == -3 for c in got)
    assert "println" in _texts(complete(session, "x = prin"))
    assert "while" in _texts(complete(session, "whi"))
    metas = {c.text: c.meta for c in complete(session, "gre")}
    assert metas["greeting"] == "let" and metas["greet_all"] == "fn"


def test_completes_names_declared_earlier_in_the_same_entry(session: Session) -> None:
    got = complete(session, "fn f() {\n    let total_count = 1\n    return tot")
    assert ("total_count", "let") in [(c.text, c.meta) for c in got]


def test_completes_methods_after_a_dot_by_the_receiver_type(session: Session) -> None:
    assert "map" in _texts(complete(session, "items.ma"))
    assert "upper" not in _texts(complete(session, "items.ma"))
    string_methods = _texts(complete(session, "greeting."))
    assert "split" in string_methods and "push" not in string_methods
    assert {"name", "keys"} <= set(_texts(complete(session, "cfg.")))
    assert {"x", "y", "len2"} <= set(_texts(complete(session, "pt.")))
    assert _texts(complete(session, "Mood.")) == ["Happy", "Sad"]
    assert "split" in _texts(complete(session, '"a b".spl'))
    assert "map" in _texts(complete(session, "stream.ma"))


def test_completes_std_module_paths_inside_imports(session: Session) -> None:
    mods = stdlib_modules()
    assert "std/math" in mods and not any("/_" in m for m in mods)
    got = complete(session, 'import "std/ma')
    assert _texts(got) == ["std/math"]
    assert got[0].start == -len("std/ma")


def test_completes_commands_and_file_names(session: Session, tmp_path: Path) -> None:
    assert _texts(complete(session, ":re")) == [":reset", ":restore"]
    (tmp_path / "prog.harn").write_text("1")
    (tmp_path / "dir").mkdir()
    got = _texts(complete(session, f":load {tmp_path}/p"))
    assert got == ["prog.harn"]
    assert "dir/" in _texts(complete(session, f":load {tmp_path}/"))
    assert "len" in _texts(complete(session, ":doc le"))


# ------------------------------------------------------------------ :doc / :type


def test_doc_of_builtins_methods_and_user_functions() -> None:
    s = Session()
    text = doc_text(s, "len")
    assert text is not None and text.startswith("len(v)  (builtin)")
    assert "``" not in text
    m = doc_text(s, "list.map")
    assert m is not None and "xs.map(f)" in m
    s.eval("/// Adds two numbers.\n/// Really.\nfn add(a, b = 1) { return a + b }")
    d = doc_text(s, "add")
    assert d is not None
    assert d.splitlines()[0] == "fn add(a, b = …)  (defined in <repl#1>)"
    assert "Adds two numbers.\n  Really." in d
    assert doc_text(s, "no_such_thing") is None


def test_describe_type() -> None:
    s = Session()
    s.eval("struct P { a: int }\nenum E { A }\nfn f(x, y) { return x }")
    assert describe_type(s.eval("f").value) == "closure fn(x, y)"
    assert describe_type(s.eval("P { a: 1 }").value) == "struct P"
    assert describe_type(s.eval("E.A").value) == "enum E"
    assert describe_type(s.eval("[1]").value) == "list"
    assert describe_type(s.eval("5s").value) == "duration"


# ---------------------------------------------------------------------- history


def test_history_round_trip_and_limit(tmp_path: Path) -> None:
    warnings: list[str] = []
    path = tmp_path / "h" / "repl_history"
    h = HistoryFile(str(path), warnings.append)
    assert h.load() == []
    h.store("fn f() {\n  1\n}")
    h.store("f()")
    assert HistoryFile(str(path), warnings.append).load() == ["fn f() {\n  1\n}", "f()"]
    for i in range(1100):
        h.store(f"e{i}")
    loaded = HistoryFile(str(path), warnings.append).load()
    assert len(loaded) == 1000 and loaded[-1] == "e1099"
    assert warnings == []


def test_damaged_history_warns_and_is_skipped(tmp_path: Path) -> None:
    warnings: list[str] = []
    path = tmp_path / "repl_history"
    path.write_bytes(b"\xff\xfe garbage \x00\n+ok\n")
    h = HistoryFile(str(path), warnings.append)
    assert h.load() == []
    assert warnings and "cannot read the history file" in warnings[0]
    path.write_text("garbage line\n+kept\n")
    warnings.clear()
    assert HistoryFile(str(path), warnings.append).load() == ["kept"]
    assert warnings and "damaged" in warnings[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_history_warns_once(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    warnings: list[str] = []
    h = HistoryFile(str(ro / "sub" / "repl_history"), warnings.append)
    h.store("a")
    h.store("b")
    assert len(warnings) == 1 and "cannot write the history file" in warnings[0]


def test_history_that_is_a_directory_warns(tmp_path: Path) -> None:
    warnings: list[str] = []
    h = HistoryFile(str(tmp_path), warnings.append)
    assert h.load() == []
    h.store("x")
    assert len(warnings) == 1


# ------------------------------------------------------------------ Pygments lexer


def test_lexer_is_registered_as_a_pygments_plugin() -> None:
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    from harnpy.highlight import HarnLexer

    assert isinstance(get_lexer_by_name("harn"), HarnLexer)
    assert isinstance(get_lexer_for_filename("x.harn"), HarnLexer)


def test_lexer_tokens() -> None:
    from pygments.token import Comment, Keyword, Name, Number, String

    from harnpy.highlight import HarnLexer

    src = (
        "/// doc\nfn add(a) { return a + 1 }\n"
        'let s = "x ${add({k: 2}.k)} \\n"\n'
        "/* a /* b */ c */ let d = 5s\nnil\n"
    )
    toks = [(t, v) for t, v in HarnLexer().get_tokens(src) if v.strip()]
    assert (String.Doc, "/// doc") in toks
    assert (Keyword.Declaration, "fn") in toks
    assert (Name.Function, "add") in toks
    assert (Keyword, "return") in toks
    assert (String.Interpol, "${") in toks and (String.Interpol, "}") in toks
    assert (String.Escape, "\\n") in toks
    assert (Number, "5s") in toks
    assert (Keyword.Constant, "nil") in toks
    comments = "".join(v for t, v in toks if t in Comment)
    assert comments == "/* a /* b */ c */"  # one nested comment
    # the dict braces inside the interpolation are not its end
    i = toks.index((String.Interpol, "${"))
    assert toks[i + 1 : i + 4] == [(Name, "add"), (toks[i + 2][0], "("), (toks[i + 3][0], "{")]


def test_lexer_lists_only_real_builtins_and_keywords() -> None:
    from harnpy.highlight import CORE_BUILTINS, KEYWORDS
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS
    from harnpy.syntax.lexer import KEYWORDS as LEXER_KEYWORDS

    load_all()
    assert set(CORE_BUILTINS) <= set(BUILTINS)
    assert set(KEYWORDS) == set(LEXER_KEYWORDS)
