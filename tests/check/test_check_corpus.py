"""The static checks over the shared conformance corpus.

* No false positives: no passing program (a ``.harn`` with a ``.expected`` file, in the main
  corpus and the lifecycle corpus) gets an error from ``check_file``.
* Undefined-name reports on passing programs, with the real builtin registry, only name
  builtins the reference provides and the harnpy registry does not have yet.
* The static error cases (``.error`` files whose reference error is a compile-time one) are
  caught, with a message matching the ``.error`` spec.

Skipped when ``../shared`` is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harnpy.check import check_file
from harnpy.conformance import error_matches

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CASES = SHARED / "conformance" / "cases"
LIFECYCLE = SHARED / "conformance" / "lifecycle" / "cases"

#: Builtins the corpus calls that the registry lacks (reference host/stdlib features). The
#: test only requires undefined-name reports to be a subset of these.
KNOWN_MISSING_BUILTINS = frozenset(
    {
        "progress",
        "stream",
        "flow_evidence_atom",
        "flow_evidence_citation",
        "flow_evidence_metadata",
        "flow_evidence_transcript",
        "flow_invariant_allow",
        "flow_invariant_block",
        "flow_invariant_confidence",
        "flow_invariant_is_blocking",
        "flow_invariant_kind",
        "flow_invariant_require_approval",
        "flow_invariant_warn",
        "flow_remediation",
        "flow_with_confidence",
        "flow_with_evidence",
        "flow_with_remediation",
    }
)

#: `.error` cases whose reference error is static (syntax or type check), relative to CASES.
STATIC_ERROR_CASES = [
    *(
        f"errors/semantic/{n}"
        for n in (
            "adt_non_exhaustive_match",
            "compound_assign_immutable",
            "destructure_string_as_list",
            "did_you_mean_builtin",
            "discard_binding_undefined",
            "immutable_assignment",
            "let_redeclare",
            "shape_missing_field",
            "shape_union_non_exhaustive_match",
            "shape_wrong_field_type",
            "spread_non_dict",
            "spread_non_list",
            "undefined_builtin",
            "undefined_variable",
        )
    ),
    *(
        f"errors/syntax/{n}"
        for n in (
            "default_after_required",
            "missing_close_brace",
            "multiple_parse_errors",
            "unexpected_character",
            "unterminated_string",
        )
    ),
    *(
        f"errors/types/{n}"
        for n in (
            "binop_add_type_error",
            "binop_mul_type_error",
            "binop_sub_type_error",
            "property_on_int",
            "type_check_runtime",
            "type_mismatch_fn_param",
            "type_mismatch_let",
            "type_mismatch_return",
        )
    ),
    *(
        f"tests/types/{n}"
        for n in (
            "generic_binding_conflict",
            "interface_associated_type_default",
            "interface_constraint_param_type",
            "interface_constraint_return_type",
            "stream_generator_distinct",
            "stream_rejects_yield",
            "typed_pipeline_mismatch",
            "unknown_requires_narrowing",
            "variance_list_invariant_write",
            "variance_user_generic_in_violation",
            "variance_user_generic_out_violation",
        )
    ),
    "tests/collections/iter_type_error",
    "tests/errors_tests/try_star_top_level",
    "tests/language/semicolon_empty_statement_invalid",
    "tests/language/semicolon_if_else_invalid",
    "tests/language/semicolon_try_catch_invalid",
]


def _require_corpus() -> None:
    if not CASES.is_dir():
        pytest.skip("shared conformance corpus not present")


def _passing_cases() -> list[Path]:
    _require_corpus()
    found = [
        p for root in (CASES, LIFECYCLE) if root.is_dir() for p in sorted(root.rglob("*.harn"))
    ]
    return [p for p in found if p.with_suffix(".expected").is_file()]


def _registry_names() -> set[str]:
    from harnpy.stdlib import load_all
    from harnpy.stdlib.mathlib import GLOBAL_CONSTANTS
    from harnpy.stdlib.registry import BUILTINS

    load_all()
    return set(BUILTINS) | set(GLOBAL_CONSTANTS)


def test_no_false_positives_on_passing_programs() -> None:
    bad = {}
    cases = _passing_cases()
    assert len(cases) > 250
    for path in cases:
        diags = [
            d
            for d in check_file(str(path), path.read_text(encoding="utf-8"))
            if d.severity == "error"
        ]
        if diags:
            bad[str(path)] = [f"{d.line}:{d.col} {d.code} {d.message}" for d in diags]
    assert bad == {}


def test_undefined_names_on_passing_programs_are_registry_gaps() -> None:
    names = _registry_names()
    reported: dict[str, set[str]] = {}
    for path in _passing_cases():
        if LIFECYCLE in path.parents:
            continue  # host builtins of the lifecycle layer are not in the registry yet
        for d in check_file(str(path), path.read_text(encoding="utf-8"), names):
            assert d.code in ("E210", "E211"), (str(path), d.code, d.message)
            name = d.message.split("`")[1] if d.code == "E211" else d.message.split(": ")[1]
            reported.setdefault(name.split(" ")[0], set()).add(path.name)
    assert set(reported) <= KNOWN_MISSING_BUILTINS, reported


@pytest.mark.parametrize("rel", STATIC_ERROR_CASES)
def test_static_error_cases_are_caught(rel: str) -> None:
    _require_corpus()
    path = CASES / f"{rel}.harn"
    spec = path.with_suffix(".error").read_text(encoding="utf-8")
    diags = check_file(str(path), path.read_text(encoding="utf-8"), _registry_names())
    assert diags, "no diagnostic"
    text = "\n".join(d.render() for d in diags)
    assert error_matches(text, spec), text
