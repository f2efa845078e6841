"""A Pygments lexer for Harn (spec language.md section 1: lexical structure).

Registered as a Pygments plugin (``pyproject.toml``: entry point group
``pygments.lexers``, name ``harn``), so once harnpy is installed any Pygments-based tool
finds it: ``pygments.lexers.get_lexer_by_name("harn")``, ``pygmentize -l harn file.harn``,
``*.harn`` file names. The REPL uses it for syntax highlighting.

Token mapping: reserved words -> ``Keyword`` (``Keyword.Declaration`` for ``fn``, ``let``,
``var``, ``struct``...; ``Keyword.Namespace`` for ``import``/``from``/``pub``);
``true``/``false``/``nil`` -> ``Keyword.Constant``; names after ``fn`` -> ``Name.Function``;
capitalised names -> ``Name.Class``; common builtins -> ``Name.Builtin``; ``@attr`` ->
``Name.Decorator``; numbers and durations (``5s``) -> ``Number``; the three string forms
with ``${...}`` interpolation (``String.Interpol`` around a nested Harn expression) and
escapes; ``//``, ``///`` and nested ``/* */`` comments.

This module only needs Pygments; it never imports the interpreter.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

__all__ = ["HarnLexer", "KEYWORDS", "CORE_BUILTINS"]

#: Reserved words (spec 1.4).
KEYWORDS = (
    "break catch continue deadline defer emit else enum eval_pack exclusive extends false "
    "finally fn for from guard if impl import in interface let match mutex nil override "
    "parallel pipeline pub require retry return select skill spawn struct throw to tool true "
    "try type var while yield"
).split()

_DECLARATION = (
    "fn",
    "let",
    "var",
    "struct",
    "enum",
    "impl",
    "interface",
    "type",
    "tool",
    "pipeline",
    "skill",
    "override",
    "extends",
)
_NAMESPACE = ("import", "from", "pub")
_CONSTANTS = ("true", "false", "nil")
_CONTROL = tuple(k for k in KEYWORDS if k not in _DECLARATION + _NAMESPACE + _CONSTANTS)

#: Frequently used builtins highlighted as ``Name.Builtin`` (a fixed list: the lexer must
#: not import the interpreter; every name here is a registered builtin, see the tests).
CORE_BUILTINS = (
    "println print eprintln eprint len to_string to_int to_float type_of range keys values "
    "entries contains split join replace trim uppercase lowercase starts_with ends_with "
    "substring format json_parse json_stringify read_file write_file file_exists exec shell "
    "env sleep await channel send receive assert assert_eq assert_ne unwrap unwrap_or "
    "unwrap_err is_ok is_err Ok Err min max abs floor ceil round sqrt pow random random_int "
    "uuid timestamp set iter to_list log_info log_warn log_error exit argv"
).split()


class HarnLexer(RegexLexer):
    """Pygments lexer for the Harn scripting language (``.harn`` files)."""

    name = "Harn"
    aliases: ClassVar[list[str]] = ["harn"]
    filenames: ClassVar[list[str]] = ["*.harn"]
    mimetypes: ClassVar[list[str]] = ["text/x-harn"]
    url = "https://github.com/burin-labs/harn"

    tokens: ClassVar[dict[str, list]] = {  # type: ignore[type-arg]
        "root": [
            (r"\A#!.*?$", Comment.Hashbang),
            (r"\s+", Whitespace),
            (r"\\\n", Text),
            (r"///(?!/).*?$", String.Doc),
            (r"//.*?$", Comment.Single),
            (r"/\*\*(?![*/])", String.Doc, "doccomment"),
            (r"/\*", Comment.Multiline, "comment"),
            (r'r"[^"\n]*"', String),
            (r'"""', String, "triple"),
            (r'"', String, "string"),
            (r"@[A-Za-z_]\w*", Name.Decorator),
            (r"\d+(?:ms|s|m|h|d|w)\b", Number),  # durations (1.6)
            (r"\d+\.\d+", Number.Float),
            (r"\d+", Number.Integer),
            (r"(fn)(\s+)([A-Za-z_]\w*)", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (r"(gen)(\s+)(fn)\b", bygroups(Keyword, Whitespace, Keyword.Declaration)),
            (words(_CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(_DECLARATION, suffix=r"\b"), Keyword.Declaration),
            (words(_NAMESPACE, suffix=r"\b"), Keyword.Namespace),
            (words(_CONTROL, suffix=r"\b"), Keyword),
            (r"(\.|\?\.)(\s*)([A-Za-z_]\w*)", bygroups(Operator, Whitespace, Name.Attribute)),
            (words(CORE_BUILTINS, suffix=r"\b"), Name.Builtin),
            (r"[A-Z]\w*", Name.Class),
            (r"[A-Za-z_]\w*", Name),
            (r"\|>|\?\?|\*\*|==|!=|<=|>=|&&|\|\||->|\+=|-=|\*=|/=|%=", Operator),
            (r"[=!+\-*/%<>?|]", Operator),
            (r"[{}()\[\],;:]", Punctuation),
            (r"\.\.\.|\.", Operator),
            (r".", Text),
        ],
        "comment": [
            (r"/\*", Comment.Multiline, "#push"),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"[^/*]+", Comment.Multiline),
            (r"[/*]", Comment.Multiline),
        ],
        "doccomment": [
            (r"/\*", String.Doc, "#push"),
            (r"\*/", String.Doc, "#pop"),
            (r"[^/*]+", String.Doc),
            (r"[/*]", String.Doc),
        ],
        "string": [
            (r'\\[nt\\"$]', String.Escape),
            (r"\$\{", String.Interpol, "interp"),
            (r'"', String, "#pop"),
            (r"\n", String, "#pop"),  # unterminated: plain strings end at the line end
            (r'[^"\\$\n]+', String),
            (r"[\\$]", String),
        ],
        "triple": [
            (r"\$\{", String.Interpol, "interp"),
            (r'"""', String, "#pop"),
            (r'[^"$]+', String),
            (r'["$]', String),
        ],
        "interp": [
            (r"\}", String.Interpol, "#pop"),
            (r"\{", Punctuation, "interp-brace"),
            include("root"),
        ],
        "interp-brace": [
            (r"\}", Punctuation, "#pop"),
            (r"\{", Punctuation, "#push"),
            include("root"),
        ],
    }

    @staticmethod
    def analyse_text(text: str) -> float:
        """Score for Pygments' guess_lexer: pipelines and ``fn ... {`` hint at Harn."""
        score = 0.0
        if "pipeline " in text:
            score += 0.3
        if "println(" in text and "fn " in text:
            score += 0.1
        return min(score, 1.0)
