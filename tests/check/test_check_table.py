"""Table tests for the static checks (spec language.md 3.10, 3.11, 3.19).

Each negative case is a small program with the code and message substring it must produce;
each positive case is a valid program that must produce
no diagnostics. A fixed set of builtin names keeps the tests independent of the registry.
"""

from __future__ import annotations

import textwrap

import pytest

from harnpy.check import check_file, static_errors
from harnpy.syntax import ast as A
from harnpy.syntax import parse

BUILTINS = frozenset(
    {
        "println",
        "print",
        "log",
        "len",
        "to_string",
        "type_of",
        "iter",
        "split",
        "Ok",
        "Err",
        "schema_is",
        "await",
        "unreachable",
        "read_file",
    }
)


def run_check(src: str, builtins: frozenset[str] | None = BUILTINS, path: str = "t.harn"):
    return check_file(path, textwrap.dedent(src), builtins)


NEGATIVE = [
    # --- names (3.10, 3.11)
    ("undefined_variable", "log(undefined_var)\n", "E210", "Undefined variable: undefined_var"),
    (
        "undefined_variable_hint",
        "let response = 1\nlog(reponse)\n",
        "E210",
        "Undefined variable: reponse (did you mean `response`?)",
    ),
    ("discard_read", "let _ = 1\nlog(_)\n", "E210", "Undefined variable: _"),
    (
        "call_target",
        "pipeline test(task) {\n  nonexistent_function()\n}\n",
        "E211",
        "call target `nonexistent_function` is not defined or imported",
    ),
    ("call_target_hint", 'printl("hello")\n', "E211", "(did you mean `println`?)"),
    # --- bindings (3.10)
    ("immutable", "let x = 1\nx = 2\n", "E204", "Cannot assign to immutable binding: x"),
    ("immutable_compound", "let x = 1\nx += 2\n", "E204", "Cannot assign to immutable binding: x"),
    (
        "immutable_property",
        "let d = {}\nd.k = 1\n",
        "E204",
        "Cannot assign to immutable binding: d",
    ),
    (
        "immutable_global_in_fn",
        "let count = 0\nfn inc() {\n  count = count + 1\n}\n",
        "E204",
        "Cannot assign to immutable binding: count",
    ),
    (
        "redeclare",
        "pipeline test(task) {\n  let x = 1\n  let x = 2\n}\n",
        "E203",
        "Cannot redeclare immutable variable 'x' in the same scope",
    ),
    (
        "try_star_top_level",
        'let x = try* read_file("f")\n',
        "E205",
        "try* requires an enclosing function",
    ),
    # --- declared types
    (
        "let_literal",
        'let x: int = "not an int"\n',
        "E212",
        "'x' declared as int, but assigned string",
    ),
    (
        "shape_missing_field",
        "let user: {name: string, age: int} = {age: 30}\n",
        "E212",
        "declared as {name: string, age: int}, but assigned {age: int}",
    ),
    (
        "shape_wrong_field",
        "let user: {name: string, age: int} = {name: 42, age: 30}\n",
        "E212",
        "declared as {name: string, age: int}, but assigned {name: int, age: int}",
    ),
    (
        "iter_is_not_list",
        "let xs: list<int> = iter([1, 2]).map({ x -> x + 1 })\n",
        "E212",
        "'xs' declared as list<int>, but assigned iter",
    ),
    (
        "stream_is_not_generator",
        "gen fn values() -> Stream<int> {\n  emit 1\n}\nlet g: Generator<int> = values()\n",
        "E212",
        "declared as Generator<int>, but assigned Stream<int>",
    ),
    (
        "unknown_needs_narrowing",
        'let u: unknown = "hello"\nlet s: string = u\n',
        "E212",
        "'s' declared as string, but assigned unknown",
    ),
    (
        "list_invariance",
        "let xs: list<int> = [1, 2]\nlet ys: list<float> = xs\n",
        "E212",
        "'ys' declared as list<float>, but assigned list<int>",
    ),
    (
        "literal_union",
        'type Verdict = "pass" | "fail"\nlet v: Verdict = "maybe"\n',
        "E212",
        "'v' declared as Verdict, but assigned string",
    ),
    (
        "declared_return_flows",
        'fn name() -> string {\n  return "a"\n}\nlet n: int = name()\n',
        "E212",
        "'n' declared as int, but assigned string",
    ),
    # --- calls and returns (3.11)
    (
        "argument",
        'fn add(a: int, b: int) -> int {\n  return a + b\n}\nadd("hello", 1)\n',
        "E213",
        "Argument 1 ('a'): expected int, got string",
    ),
    (
        "return",
        'fn get() -> int {\n  return "not an int"\n}\n',
        "E214",
        "return type doesn't match: expected int, got string",
    ),
    (
        "typed_pipeline",
        'pipeline test(task) -> int {\n  return "not an int"\n}\n',
        "E214",
        "return type doesn't match: expected int, got string",
    ),
    # --- operators
    ("add_bools", "log(true + false)\n", "E215", "can't add bool and bool"),
    ("mul_bool", "log(true * 5)\n", "E215", "can't multiply bool and int (try string * int)"),
    (
        "sub_strings",
        'log("hello" - "world")\n',
        "E215",
        "can't use '-' on string and string (needs numeric operands)",
    ),
    ("add_through_let", 'let n = 1\nlog(n + "x")\n', "E215", "can't add int and string"),
    # --- match exhaustiveness
    (
        "enum_variant_strings",
        "enum Action { Create, Edit, Delete }\nlet a = Action.Create\nmatch a.variant {\n"
        '  "Create" -> { log("c") }\n  "Delete" -> { log("d") }\n}\n',
        "E216",
        "Non-exhaustive match on enum Action: missing variants Edit",
    ),
    (
        "enum_patterns",
        "enum Color { Red, Green, Blue }\nfn f(c: Color) {\n  match c {\n"
        '    Color.Red -> { log("r") }\n  }\n}\n',
        "E216",
        "missing variants Green, Blue",
    ),
    (
        "tagged_union",
        'type Msg = {kind: "ping", ttl: int} | {kind: "pong", ms: int}\n'
        'let m: Msg = {kind: "ping", ttl: 5}\nmatch m.kind {\n  "ping" -> { log("p") }\n}\n',
        "E216",
        'Non-exhaustive match on tagged shape union: missing variants "pong"',
    ),
    # --- generators
    (
        "yield_in_gen_fn",
        "gen fn wrong() -> Stream<int> {\n  yield 1\n}\n",
        "E217",
        "use `emit` inside `gen fn`",
    ),
    # --- generics and interfaces
    (
        "generic_conflict",
        'fn keep<T>(a: T, b: T) -> T {\n  return a\n}\nkeep(1, "x")\n',
        "E218",
        "type parameter 'T' was inferred as both int and string",
    ),
    (
        "interface_param",
        "interface P {\n  fn process(self, x: int) -> string\n}\nstruct S {\n  name: string\n}\n"
        "impl S {\n  fn process(self, x: string) -> string {\n    return x\n  }\n}\n"
        'fn run<T>(p: T) where T: P {\n  log(p)\n}\nrun(S({name: "a"}))\n',
        "E219",
        "type 'S' does not satisfy interface 'P'",
    ),
    (
        "interface_return",
        "interface Sizable {\n  fn size(self) -> int\n}\nstruct B {\n  w: int\n}\n"
        'impl B {\n  fn size(self) -> string {\n    return "x"\n  }\n}\n'
        "fn measure(item: Sizable) {\n  log(item)\n}\nmeasure(B {w: 3})\n",
        "E219",
        "method 'size' returns string, expected int",
    ),
    (
        "interface_missing_method",
        "interface Named {\n  fn name(self) -> string\n}\nstruct B {\n  w: int\n}\n"
        "fn show(item: Named) {\n  log(item)\n}\nshow(B {w: 3})\n",
        "E219",
        "missing method 'name'",
    ),
    (
        "interface_assoc_type",
        "interface IntCollection {\n  type Item = int\n  fn get(self, i: int) -> Item\n}\n"
        'struct L {\n}\nimpl L {\n  fn get(self, i: int) -> string {\n    return "x"\n  }\n}\n'
        "fn first<C>(c: C) where C: IntCollection {\n  log(c)\n}\nfirst(L {})\n",
        "E219",
        "associated type 'Item' resolves to 'string', expected 'int'",
    ),
    (
        "variance_in",
        "interface Producer<in T> {\n  fn next() -> T\n}\n",
        "E220",
        "declared 'in'",
    ),
    ("variance_out", "type Box<out T> = fn(T) -> int\n", "E220", "declared 'out'"),
    # --- properties
    (
        "property_on_int",
        "let x = 42\nlog(x.name)\n",
        "E222",
        "cannot access property `name` on int",
    ),
    # --- tool declarations bind a one-tool registry
    (
        "tool_called_directly",
        'tool probe(path: string) -> string {\n  description "P."\n  return path\n}\n'
        'log(probe("x"))\n',
        "E223",
        "cannot call tool `probe` directly",
    ),
    (
        "tool_reassigned",
        'tool probe() {\n  description "P."\n  return 1\n}\nprobe = 2\n',
        "E204",
        "Cannot assign to immutable binding: probe",
    ),
    # --- destructuring and spreads
    (
        "destructure_string",
        'let [a] = "hello"\n',
        "E221",
        "cannot destructure string with [...] pattern",
    ),
    ("spread_int_list", "let x = [...42]\n", "E221", "cannot destructure int with [...] pattern"),
    ("spread_int_dict", "let x = {...42}\n", "E221", "cannot destructure int with {...} pattern"),
]


@pytest.mark.parametrize(
    ("src", "code", "text"), [c[1:] for c in NEGATIVE], ids=[c[0] for c in NEGATIVE]
)
def test_check_reports(src: str, code: str, text: str) -> None:
    diags = run_check(src)
    assert any(d.code == code and text in d.message for d in diags), [
        (d.code, d.message) for d in diags
    ]


POSITIVE = [
    (
        "shadowing",
        'let x = 1\nif true {\n  let x = "s"\n  println(x + "a")\n}\nprintln(x + 1)\n'
        'for x in ["a"] {\n  println(x + "!")\n}\nmatch 3 {\n  x -> { println(x + 1) }\n}\n',
    ),
    (
        "numeric_widening",
        "let xs: list<float> = [1, 2]\nlet y: float = 1\nfn f(v: float) {\n  return v\n}\nf(2)\n",
    ),
    (
        "generics",
        "fn id<T>(v: T) -> T {\n  return v\n}\nlet z: int = id(3)\nlet w = id(nil)\n"
        "fn first<T>(items: list<T>) -> T {\n  return items[0]\n}\nlet q: int = first([1, 2])\n"
        "fn pair<T>(a: T, b: T) {\n  return [a, b]\n}\npair(1, nil)\n",
    ),
    (
        "unknown_narrowed",
        'fn describe(v: unknown) -> string {\n  if type_of(v) == "string" {\n'
        '    let s: string = v\n    return s\n  }\n  guard type_of(v) == "int" else {\n'
        '    return "other"\n  }\n  return "int:${v + 1}"\n}\n'
        "fn via_match(v: unknown) -> string {\n  match type_of(v) {\n"
        '    "string" -> { return v }\n    _ -> { return "x" }\n  }\n}\n',
    ),
    (
        "union_after_nil_check",
        "fn maybe(v: int | nil) -> int {\n  if v == nil {\n    return 0\n  }\n  return v + 1\n}\n",
    ),
    (
        "late_bound_functions",
        "fn later() {\n  return helper(1)\n}\nfn helper(v: int) -> int {\n  return v + 1\n}\n"
        "println(later())\n",
    ),
    ("pipe_placeholder", 'let parts = "a b" |> split(_, " ")\nprintln(parts)\n'),
    (
        "closure_copy_assignment",
        "pipeline default(task) {\n  let count = 0\n  fn inc() {\n    count = count + 1\n"
        "    return count\n  }\n  println(inc())\n}\n",
    ),
    ("var_reassign", 'var x = 1\nx = "s"\nx += "t"\nvar m = {}\nm.k = 1\n'),
    (
        "const_revision_let_is_mutable",
        "const limit = 3\nlet seen = []\nseen = seen + [1]\n",
    ),
    (
        "exhaustive_matches",
        "enum Color { Red, Green }\nlet c = Color.Red\nmatch c {\n  Color.Red -> { log(1) }\n"
        '  Color.Green -> { log(2) }\n}\nmatch c.variant {\n  "Red" -> { log(1) }\n'
        '  _ -> { log(2) }\n}\nmatch c.variant {\n  "Red" -> { log(1) }\n  other -> { log(other) }\n}\n',
    ),
    (
        "literal_types",
        'type Verdict = "pass" | "fail"\ntype Score = 0 | 1 | 2\nlet v: Verdict = "pass"\n'
        "let s: Score = 2\nlet n: string = nil\n",
    ),
    (
        "operators_valid",
        'let s = "ab" * 2\nlet t = 2 * "ab"\nlet d = {a: 1} + {b: 2}\nlet l = [1] + [2]\n'
        "let du = 5s + 3s\nlet f = 1 + 2.5\nprintln(s, t, d, l, du, f)\n",
    ),
    (
        "interfaces_satisfied",
        "interface Named {\n  fn name(self) -> string\n}\nstruct Dog {\n  n: string\n}\n"
        "impl Dog {\n  fn name(self) -> string {\n    return self.n\n  }\n}\n"
        "fn show<T>(x: T) -> string where T: Named {\n  return x.name()\n}\n"
        "fn show2(x: Named) -> string {\n  return x.name()\n}\n"
        'println(show(Dog({n: "rex"})))\nprintln(show2(Dog {n: "max"}))\n',
    ),
    (
        "variance_respected",
        "interface Producer<out T> {\n  fn next() -> T\n}\n"
        "interface Consumer<in T> {\n  fn take(x: T) -> int\n}\ntype F<in T> = fn(T) -> int\n",
    ),
    ("optional_property_on_int", "let x = 42\nlog(x?.name)\n"),
    (
        "try_star_in_function",
        'fn load() {\n  let x = try* read_file("f")\n  return x\n}\n',
    ),
    (
        "tool_is_a_registry",
        'tool probe(path: string) -> string {\n  description "P."\n  return path\n}\n'
        "fn offer(reg: dict) -> int {\n  return len(reg.tools)\n}\n"
        'let r: dict = probe\nlog(offer(probe))\nlog(probe.tools[0].handler("x"))\n'
        'fn shadow() {\n  let probe = { p -> p }\n  return probe("y")\n}\n',
    ),
    (
        "type_names_as_values",
        'type Out = {verdict: string}\nlet ok = schema_is({verdict: "x"}, Out)\nprintln(ok)\n',
    ),
]


@pytest.mark.parametrize("src", [c[1] for c in POSITIVE], ids=[c[0] for c in POSITIVE])
def test_check_accepts(src: str) -> None:
    diags = run_check(src)
    assert diags == [], [(d.code, d.message, d.line) for d in diags]


def test_every_error_is_reported_with_location() -> None:
    src = 'let x: int = "s"\nlog(true + false)\nlet y = 1\ny = 2\n'
    diags = run_check(src)
    assert [(d.code, d.line) for d in diags] == [("E212", 1), ("E215", 2), ("E204", 4)]
    assert all(d.path == "t.harn" and d.col >= 1 and d.source is not None for d in diags)
    rendered = diags[1].render()
    assert rendered.startswith("t.harn:2:5: error[E215]: can't add bool and bool")
    assert "^" in rendered


def test_syntax_errors_become_diagnostics() -> None:
    diags = run_check('let x = "oops\n')
    assert diags and diags[0].code.startswith("E1")
    assert "Unterminated string" in diags[0].message


def test_dotted_builtin_names_define_their_namespace() -> None:
    src = "log(stream.collect([1]))\nlog(streams.collect([1]))\n"
    diags = run_check(src, builtins=BUILTINS | {"stream.collect"})
    assert [d.message for d in diags] == ["Undefined variable: streams (did you mean `stream`?)"]


def test_without_builtin_names_name_checks_are_skipped() -> None:
    src = "nonexistent_function()\nlog(undefined_var)\n"
    assert run_check(src, builtins=None) == []


def test_static_errors_leaves_runtime_reported_checks_out() -> None:
    src = 'log(undefined_var)\nlet x = try* read_file("f")\nlet y: int = "s"\nnope()\n'
    tree = parse(src, "t.harn")
    codes = [d.code for d in static_errors(tree, "t.harn", src, BUILTINS)]
    assert codes == ["E212", "E211"]
    assert {d.code for d in check_file("t.harn", src, BUILTINS)} == {"E210", "E205", "E212", "E211"}


def test_static_errors_never_raises() -> None:
    bogus = A.Module((A.ExprStmt(object()),))  # type: ignore[arg-type]
    assert static_errors(bogus, "t.harn", "", BUILTINS) == []


def test_imported_functions_are_defined(tmp_path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.harn").write_text(
        'pub import "inner"\npub fn greet(n) {\n  return "hi " + n\n}\n', encoding="utf-8"
    )
    (tmp_path / "lib" / "inner.harn").write_text("fn deep() {\n  return 1\n}\n", encoding="utf-8")
    main = tmp_path / "main.harn"
    src = 'import "lib/helpers"\nprintln(greet("x"))\nprintln(deep())\nmissing()\n'
    diags = check_file(str(main), src, BUILTINS)
    assert [(d.code, d.message) for d in diags] == [
        ("E211", "call target `missing` is not defined or imported")
    ]


def test_unknown_module_disables_name_checks(tmp_path) -> None:
    src = 'import "no/such/module"\nwhatever()\nlog(undefined_thing)\n'
    assert check_file(str(tmp_path / "main.harn"), src, BUILTINS) == []


def test_selective_import_names_are_defined(tmp_path) -> None:
    src = 'import { alpha } from "std/not_here"\nalpha()\nbeta()\n'
    diags = check_file(str(tmp_path / "main.harn"), src, BUILTINS)
    assert [d.message for d in diags] == ["call target `beta` is not defined or imported"]


def test_a_direct_tool_call_is_left_to_the_runtime_by_run() -> None:
    # harnpy run does not refuse the program up front: the runtime raises its own
    # "Cannot call" (E302) only if the call runs; harnpy check reports E223.
    src = 'tool probe() {\n  description "P."\n  return 1\n}\nif false {\n  probe()\n}\n'
    tree = parse(src, "t.harn")
    assert static_errors(tree, "t.harn", src, BUILTINS) == []
    assert [d.code for d in check_file("t.harn", src, BUILTINS)] == ["E223"]
