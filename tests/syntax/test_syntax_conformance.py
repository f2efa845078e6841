"""Every Harn file of the shared conformance corpus parses, except the syntax-error cases,
which must fail with a message matching their `.error` file (run.py matching rules)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harnpy.syntax import HarnSyntaxError, parse
from harnpy.syntax import ast as A

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CORPUS = SHARED / "conformance"


def harn_files() -> list[Path]:
    if not CORPUS.is_dir():
        pytest.skip("shared conformance corpus not present")
    return sorted(CORPUS.rglob("*.harn"))


def is_syntax_error_case(path: Path) -> bool:
    """Cases whose expected error is a parse error: errors/syntax/* and the semicolon
    separator cases of tests/language."""
    if not path.with_suffix(".error").is_file():
        return False
    return (
        path.parent.name == "syntax" or re.fullmatch(r"semicolon_.*_invalid", path.stem) is not None
    )


def error_matches(actual: str, spec: str) -> bool:
    """The `.error` comparison of conformance/run.py: any line of a multi-line spec, `re:`
    patterns searched, otherwise a case-sensitive substring."""
    lines = [ln.strip() for ln in spec.rstrip().split("\n") if ln.strip()]

    def one(pattern: str) -> bool:
        if pattern.startswith("re:"):
            return re.search(pattern[3:].strip(), actual) is not None
        return pattern in actual

    return any(one(ln) for ln in lines) if len(lines) > 1 else one(spec.strip())


def span_problems(module: A.Module, src: str) -> list[str]:
    """Spans that are empty, not nested in their parent's span, or whose line/column
    numbers disagree with their offsets."""
    problems = []
    todo: list[A.Node] = [module]
    while todo:
        node = todo.pop()
        for child in A.children(node):
            s, p = child.span, node.span
            first_line_start = src.rfind("\n", 0, s.start) + 1
            last_line_start = src.rfind("\n", 0, s.end - 1) + 1
            ok = (
                p.start <= s.start < s.end <= p.end
                and (s.line, s.col)
                == (src.count("\n", 0, s.start) + 1, s.start - first_line_start + 1)
                and (s.end_line, s.end_col)
                == (src.count("\n", 0, s.end - 1) + 1, s.end - last_line_start)
            )
            if not ok:
                problems.append(f"{type(child).__name__} {s} in {type(node).__name__} {p}")
            todo.append(child)
    return problems


def test_all_non_syntax_error_files_parse_with_consistent_spans() -> None:
    files = [p for p in harn_files() if not is_syntax_error_case(p)]
    failures = []
    for path in files:
        src = path.read_text(encoding="utf-8")
        try:
            module = parse(src, str(path))
        except HarnSyntaxError as exc:
            failures.append(exc.render().splitlines()[0])
            continue
        failures.extend(f"{path.name}: {problem}" for problem in span_problems(module, src)[:3])
    assert len(files) > 400
    assert not failures, f"{len(failures)} failures over {len(files)} files:\n" + "\n".join(
        failures
    )


def test_syntax_error_cases_fail_with_the_expected_message() -> None:
    cases = [p for p in harn_files() if is_syntax_error_case(p)]
    assert len(cases) >= 8
    for path in cases:
        with pytest.raises(HarnSyntaxError) as info:
            parse(path.read_text(encoding="utf-8"), str(path))
        spec = path.with_suffix(".error").read_text(encoding="utf-8")
        rendered = info.value.render()
        assert error_matches(rendered, spec), f"{path.name}: {rendered!r} vs {spec!r}"
