"""Property tests: random and mutated programs either parse or raise HarnSyntaxError, never
any other exception (no Lark or Python error leaks out of the syntax stage)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnpy.syntax import HarnSyntaxError, parse, parse_expression

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"

SAMPLES = [
    'pipeline default(task) {\n  let xs = [1, 2, 3]\n  for x in xs { log("x=${x}") }\n}\n',
    "fn f(a, b = 2, ...rest) -> int {\n  return match a {\n    1 | 2 if b > 0 -> { a }\n"
    "    _ -> { b }\n  }\n}\n",
    'let s = """\n    total: ${n}\n    done\n    """\nlet d = {type: 1, "k": 2, [k]: 3}\n',
    "let r = try { f()? } catch (e: Err) { nil } finally { g() }\n"
    "let v = c ? xs?[0] : a?.b ?? 1 to 10 exclusive\n",
    "struct P { x: int, y?: string }\nenum E { A, B(v: int) }\nimpl P { fn m(self) { self.x } }\n"
    "type T = {a: int} | [string] | fn(int) -> bool\n",
    "let out = parallel each xs with { max_concurrent: 2 } { x -> x * 2 } as stream\n"
    "select {\n  m from ch { log(m) }\n  timeout 5ms { }\n}\n",
    '@test\npub gen fn s() { emit 1 }\ntool t(q) { description "d"\n  q }\nimport { a } from "x"\n',
]


def _corpus_sources() -> list[str]:
    if not CORPUS.is_dir():
        return []
    return [p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.harn"))]


SOURCES = SAMPLES + _corpus_sources()

TOKENS = (
    "{ } ( ) [ ] , : ; . ... ? ?. ?[ ?? -> | |> = == += - + * ** / % ! < > @ && || "
    "x Foo _ 1 2.5 5ms fn if else let var const match try catch finally type not in to "
    "exclusive gen parallel each settle with as stream select timeout default from import "
    "pub struct enum impl interface tool description skill pipeline extends override return "
    "yield emit throw spawn retry deadline mutex defer guard require for while break "
    "continue where out nil true max_concurrent"
).split() + [
    '"s"',
    '"a ${x} b"',
    '"""\n  t ${y}\n  """',
    'r"raw"',
    "\n",
    "// c\n",
    "/* c */",
    "\\\n",
]

CHARS = "{}()[]\"$\\/*-+?.:;,|&!<>=\n `#@r'0123456789abxyz_ \t"


def check(src: str) -> None:
    for fn in (parse, parse_expression):
        try:
            fn(src)
        except HarnSyntaxError as exc:
            assert exc.diagnostics
            for diag in exc.diagnostics:
                assert diag.code.startswith("E1")
                assert diag.message


@st.composite
def mutated(draw: st.DrawFn) -> str:
    src = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(src)))
        op = draw(st.sampled_from(["delete", "insert_char", "insert_token", "swap"]))
        if op == "delete":
            src = src[:i] + src[i + draw(st.integers(1, 12)) :]
        elif op == "insert_char":
            src = src[:i] + draw(st.sampled_from(CHARS)) + src[i:]
        elif op == "insert_token":
            src = src[:i] + " " + draw(st.sampled_from(TOKENS)) + " " + src[i:]
        else:
            j = draw(st.integers(0, len(src)))
            a, b = sorted((i, j))
            k = min(len(src), b + draw(st.integers(1, 20)))
            src = src[:a] + src[b:k] + src[a:b] + src[k:]
    return src


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(mutated())
def test_mutated_programs(src: str) -> None:
    check(src)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join))
def test_token_soup(src: str) -> None:
    check(src)


@FUZZ
@given(st.text(alphabet=CHARS, max_size=60))
def test_random_text(src: str) -> None:
    check(src)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_unicode(src: str) -> None:
    check(src)
