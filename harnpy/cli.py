"""The ``harnpy`` command line: a thin shell over the runtime.

Exit codes (documented in README):

* 0 — the program completed (whatever its entry pipeline returned); a root ``agent_loop``
  that parks returns its ``Suspension`` to the script, so such a run completes too;
* 1 — a runtime error escaped (message and Harn stack trace on stderr), or a root
  ``agent_loop`` failed and the program never read its result's ``status`` / ``error``
  (:mod:`harnpy.runtime.outcomes`); for
  ``run --resume <worker snapshot>``: the worker failed, or the resume was refused
  (``HARN-SUS-003/004/006/010``: not suspended, unreadable, resumed by another process,
  closed);
* 2 — usage error, syntax error or static (check) error (or a program snapshot that cannot
  be restored);
* 3 (``EXIT_PARKED``) — parked: the program called ``__snapshot_exit(path)`` (its whole
  state is in ``path``; ``harnpy run --resume path`` continues it), or ``run --resume <worker
  snapshot>``: the worker parked again; its snapshot was rewritten and can be resumed with
  ``harnpy run --resume`` again;
* 130 — interrupted (Ctrl-C).

``run --resume SNAPSHOT [--json [--quiet]] [--llm-mock FILE]``: see
:mod:`harnpy.resume_cli` (``--json`` prints NDJSON envelopes ending with a
``result`` event whose ``exit_code`` is the process exit code).

Start-up is kept lean: nothing heavy (prompt-toolkit, pydantic, LLM SDKs) is imported on
the ``run`` path unless the program uses it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from harnpy import clitext
from harnpy.clitext import write_err

if TYPE_CHECKING:
    from harnpy.diagnostics import Diagnostic

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_PARKED = 3
EXIT_INTERRUPTED = 130


def _version() -> str:
    from harnpy import __version__

    return __version__


class HarnpyParser(argparse.ArgumentParser):
    """The ``argparse`` parser class of ``harnpy`` and its subcommands: help shows each
    option's default (:class:`HelpFormatter`), and long options are never abbreviated (an
    option spelled differently is refused, not guessed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        """argparse's usage error (exit status 2), with a hint when a ``.harn`` file was
        given where the command belongs (``harnpy app.harn``: ``harnpy run app.harn``)."""
        import re

        m = re.search(r"invalid choice: '([^']*)'", message)
        if m and (m.group(1).endswith(".harn") or os.path.isfile(m.group(1))):
            message += f"; to run a program: harnpy run {m.group(1)}"
        super().error(message)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` text that ends each option's help with ``(default: X)`` when the option has
    a default worth showing (not None, False or an empty list)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        # argparse asks shutil for the terminal width, importing it (and bz2, lzma...) on
        # every run: the parser builds formatters to check each option; same rule here
        # (COLUMNS, else the terminal of stdout, else 80), minus the 2 columns argparse
        # leaves.
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or default in (None, False, argparse.SUPPRESS)
            or default == []
            or not (action.option_strings or action.nargs in ("?", "*"))
        ):
            return action.help
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


#: Subcommands whose arguments after a ``--`` are the program's own (``argv()``).
SCRIPT_ARG_COMMANDS = frozenset({"run"})


#: Subcommands defined here; any other command (``worker``, ``workers``, ``store``, a typo,
#: ``--help``) builds the whole parser, which imports the worker and store command modules.
_OWN_COMMANDS = frozenset({"run", "check", "test", "doc", "repl"})

#: Commands whose parser is built alone (:func:`build_parser` ``only``): a run of one of them
#: imports only its own command module.
_SINGLE_COMMANDS = frozenset(
    {"run", "check", "fmt", "lint", "test", "doc", "waitpoint", "repl", "serve", "runs"}
)


def build_parser(full: bool = True, only: str | None = None) -> argparse.ArgumentParser:
    """The argparse parser of every subcommand: ``run``, ``check``, ``test``, ``repl`` and the
    worker commands of :mod:`harnpy.lifecycle.triggers.cli`.

    ``full=False`` leaves out the worker and store commands (and their imports: the store
    package is not loaded by a plain ``harnpy run``). ``only`` (a command of
    :data:`_SINGLE_COMMANDS`) builds that subcommand's group alone, so that ``harnpy run``
    imports neither the tooling nor the serve and waitpoint command modules (start-up).

    A subcommand sets its handler with ``set_defaults(handler=fn)``: :func:`main` calls
    ``fn(args)`` and returns its exit code. A subcommand in :data:`SCRIPT_ARG_COMMANDS` gets
    the arguments after ``--`` as ``args.args`` (:func:`split_script_args`)."""
    p = HarnpyParser(
        prog="harnpy", description="Run Harn scripts: agent orchestration with resumable state."
    )
    p.add_argument("--version", action="version", version=f"harnpy {_version()}")
    sub = p.add_subparsers(dest="command", parser_class=HarnpyParser)

    def want(*names: str) -> bool:
        return only is None or only in names

    if want("run"):
        _add_run(sub)
    if want("check", "fmt", "lint"):
        from harnpy.tooling import add_subparsers as add_tooling_subparsers

        add_tooling_subparsers(sub)  # check, fmt, lint
    if want("test", "doc"):
        _add_test_doc(sub)
    if want("waitpoint"):
        from harnpy.lifecycle.waitpoints.cli import add_subparsers as add_waitpoint_subparsers

        add_waitpoint_subparsers(sub)
    if want("repl"):
        repl = sub.add_parser("repl", help="interactive session")
        repl.add_argument("--strict", action="store_true", help="exit 1 if any entry failed")
        repl.set_defaults(handler=_cmd_repl)
    if want("serve", "runs"):
        from harnpy.serve.cli import add_subparsers as add_serve_subparsers

        add_serve_subparsers(sub)

    if not full or only is not None:
        return p
    from harnpy.lifecycle.triggers.cli import add_subparsers as add_worker_subparsers

    add_worker_subparsers(sub)
    from harnpy.store_cli import add_subparsers as add_store_subparsers

    add_store_subparsers(sub)
    return p


def _add_run(sub: Any) -> None:
    from harnpy.lifecycle.cli_args import positive_int

    run = sub.add_parser(
        "run",
        help="run a .harn file (or -e CODE, or --resume SNAPSHOT)",
        description="Run a .harn file, a snippet (-e CODE) or a parked program (--resume). "
        "Options may come before or after the file; the program's own arguments (argv()) "
        "go after `--`: harnpy run FILE [OPTIONS] -- ARGS...",
    )
    run.add_argument("file", nargs="?", help="the .harn script")
    run.add_argument("-e", dest="code", metavar="CODE", help="run CODE instead of a file")
    run.add_argument("--resume", metavar="SNAPSHOT", help="continue a parked program")
    run.add_argument(
        "--input", metavar="TEXT", default=None, help="with --resume: the worker's resume input"
    )
    run.add_argument(
        "--upgrade-code",
        action="store_true",
        help="with --resume: continue on the current files when the functions on the parked "
        "stack did not change (default: the code the snapshot started with)",
    )
    run.add_argument("--json", action="store_true", help="emit NDJSON events (with --resume)")
    run.add_argument("--quiet", action="store_true", help="with --json: drop stdout/stderr events")
    run.add_argument("--llm-mock", metavar="FILE", help="queue mock LLM replies from JSONL")
    run.add_argument("--llm-mock-record", metavar="FILE", help="record LLM replies as JSONL")
    run.add_argument(
        "--max-depth",
        type=positive_int,
        default=None,
        metavar="N",
        help="Harn frame limit, at least 1 (default: 10000)",
    )
    run.add_argument(
        "--store",
        metavar="URL",
        help="durable store for waitpoints (default: HARNPY_STORE; none: in memory)",
    )
    run.set_defaults(handler=cmd_run, args=[])


def _add_test_doc(sub: Any) -> None:
    test = sub.add_parser(
        "test",
        help="run a project's tests (or: test conformance DIR)",
        description="Run the tests under PATHs (default: ./tests, else .): NAME.harn with "
        "NAME.expected (exact output) or NAME.error (an error text), and test_* pipelines. "
        "`harnpy test conformance DIR` runs a conformance directory.",
    )
    test.add_argument("paths", nargs="*", metavar="PATH", help="files or directories")
    test.add_argument("--filter", default=None, metavar="TEXT", help="only names containing TEXT")
    test.add_argument("-v", "--verbose", action="store_true", help="list the passing tests too")
    test.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    test.add_argument("--json", action="store_true", help="print the results as one JSON document")
    test.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="per-test time limit"
    )
    test.set_defaults(handler=_cmd_test)

    doc = sub.add_parser(
        "doc",
        help="show the documentation of a builtin, method or std/ function",
        description="Print the reference text of NAME: a builtin (len), a method "
        "(list.map, or map for every type's), or a function of a bundled std/ module "
        "(std/agent/loop.agent_loop). The REPL's `:doc NAME` prints the same.",
    )
    doc.add_argument("name", metavar="NAME")
    doc.set_defaults(handler=_cmd_doc)


def split_script_args(
    argv: list[str], parser: argparse.ArgumentParser
) -> tuple[list[str], list[str]]:
    """Split a command line at the ``--`` that ends harnpy's own options: returns
    ``(harnpy_argv, script_args)``.

    Only a subcommand in :data:`SCRIPT_ARG_COMMANDS` takes script arguments; its first
    ``--`` that is not the value of an option (``-e --`` runs the code ``--``) ends the
    options. Everything before it is parsed by argparse — an option after the file is an
    option, an unknown one is refused — and everything after it is the program's
    ``argv()``, verbatim (a later ``--`` included)."""
    cmd = next((i for i, tok in enumerate(argv) if not tok.startswith("-")), None)
    if cmd is None or argv[cmd] not in SCRIPT_ARG_COMMANDS:
        return argv, []
    takes_value = _value_options(parser, argv[cmd])
    i = cmd + 1
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return argv[:i], argv[i + 1 :]
        i += 2 if tok in takes_value else 1
    return argv, []


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def _value_options(parser: argparse.ArgumentParser, command: str) -> set[str]:
    """The option strings of ``command`` that take a separate value (``-e``, ``--resume``)."""
    sub = _subparser(parser, command)
    if sub is None:
        return set()
    return {opt for action in sub._actions if action.nargs != 0 for opt in action.option_strings}


#: Exit status after SIGTERM (128 + 15): the program was interrupted as by Ctrl-C —
#: ``finally`` blocks ran, a resumed worker's park was put back, claims were released.
EXIT_TERMINATED = 143
_terminated = False


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM is handled like SIGINT (issue 13 point 12): it raises KeyboardInterrupt where
    the program is, so it is interrupted cooperatively; :func:`main` then exits 143."""
    global _terminated
    if _terminated:
        return  # already stopping: let the cleanup finish
    _terminated = True
    raise KeyboardInterrupt


def _install_sigterm() -> None:
    import signal

    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main thread, or no SIGTERM on this platform
        pass


_gc_tuned = False


def _tune_gc() -> None:
    """Once per process: collect the young generation less often. The evaluator allocates
    many short-lived frames and slot lists, and a run with thousands of workers spent about
    a quarter of its time in collections (issue 15). See also :func:`_freeze_heap`."""
    global _gc_tuned
    if _gc_tuned:
        return
    _gc_tuned = True
    import gc

    gc.set_threshold(20_000, 50, 50)


_heap_frozen = False


def _freeze_heap() -> None:
    """Once per process: move everything allocated so far (imported modules, the builtin
    registry, the loaded program) out of the cyclic collector's way: it lives for the whole
    run."""
    global _heap_frozen
    if _heap_frozen:
        return
    _heap_frozen = True
    import gc

    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``harnpy`` console script; returns the process exit code (143
    after SIGTERM, which interrupts the program as Ctrl-C does)."""
    # The evaluator keeps Harn frames off the Python stack, but the compiler, parser and
    # display of deeply nested values recurse; CPython 3.11 runs Python-to-Python calls
    # without growing the C stack, so a higher limit is safe.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 30_000))
    _tune_gc()
    # harnpy uses no pydantic plugins; looking them up imports importlib.metadata and scans
    # every installed distribution (~12 ms at start-up) the first time a model is built.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _install_sigterm()
    try:
        rc = _dispatch(argv)
        return EXIT_TERMINATED if _terminated and rc in (EXIT_INTERRUPTED, 0) else rc
    except KeyboardInterrupt:  # before a command could take it (start-up, argument parsing)
        write_err("harnpy: interrupted\n")
        return EXIT_TERMINATED if _terminated else EXIT_INTERRUPTED
    except RecursionError:
        # Every command handles input nested too deeply itself; this is the last line of
        # defence, so that no input ever ends in a Python traceback.
        flush_stdout()
        write_err(f"harnpy: {NESTED_TOO_DEEPLY_TEXT}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        # stdout was closed early (`harnpy run x | head -1`): end quietly, as Unix tools do.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141


def _dispatch(argv: list[str] | None) -> int:
    tokens = list(sys.argv[1:] if argv is None else argv)
    command = next((tok for tok in tokens if not tok.startswith("-")), None)
    parser = build_parser(
        full=command not in _OWN_COMMANDS,
        only=command if command in _SINGLE_COMMANDS else None,
    )
    own, script_args = split_script_args(tokens, parser)
    args, unknown = parser.parse_known_args(own)
    if unknown:
        return _unrecognized(parser, args, unknown)
    handler = getattr(args, "handler", None)
    if handler is not None:
        if args.command in SCRIPT_ARG_COMMANDS:
            args.args = script_args
        return int(handler(args))
    if args.command in ("worker", "workers"):
        from harnpy.lifecycle.triggers.cli import main as worker_main

        return worker_main(args)
    if args.command == "store":
        from harnpy.store_cli import main as store_main

        return store_main(args)
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def _unrecognized(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> int:
    """Refuse arguments no option or positional took (exit status 2): the subcommand's usage
    line, then ``harnpy CMD: error: unrecognized arguments: ...``; for ``run``, a word that
    is not an option gets the hint that script arguments go after ``--``."""
    command = getattr(args, "command", None)
    sub = _subparser(parser, command) if command else None
    target = sub or parser
    target.print_usage(sys.stderr)
    message = "unrecognized arguments: " + " ".join(extra)
    words = [a for a in extra if not a.startswith("-")]
    if command in SCRIPT_ARG_COMMANDS and words and len(words) == len(extra):
        what = getattr(args, "file", None) or "FILE"
        message += (
            f" (the program's own arguments go after `--`: harnpy {command} {what} -- "
            + " ".join(words)
            + ")"
        )
    options = [a for a in extra if a.startswith("-") and a != "-"]
    if options:
        from harnpy.diagnostics import did_you_mean

        known = [o for act in target._actions for o in act.option_strings]
        hints = []
        for o in options:
            name = o.split("=", 1)[0]
            close = did_you_mean(name, known)
            if close is not None:
                hints.append(f"did you mean `{close}` for `{name}`?")
        if hints:
            message += " (" + "; ".join(hints) + ")"
        elif command in SCRIPT_ARG_COMMANDS:
            what = getattr(args, "file", None) or "FILE"
            message += (
                f" (an option of the program goes after `--`: harnpy {command} {what} -- "
                + " ".join(extra)
                + ")"
            )
    write_err(f"{target.prog}: error: {message}\n")
    return EXIT_USAGE


def _cmd_test(args: argparse.Namespace) -> int:
    from harnpy.testrun import main as test_main

    return test_main(args)


def _cmd_doc(args: argparse.Namespace) -> int:
    """``harnpy doc NAME``: print :func:`harnpy.docgen.builtin_doc`; exit 1 (with a
    did-you-mean hint) when nothing of that name is documented."""
    from harnpy.diagnostics import did_you_mean
    from harnpy.docgen import builtin_doc, known_names

    text = builtin_doc(args.name)
    if text is None:
        hint = did_you_mean(args.name, known_names())
        extra = f" (did you mean `{hint}`?)" if hint else ""
        clitext.error("doc", f"no builtin, method or std/ function named {args.name}{extra}")
        return EXIT_RUNTIME
    sys.stdout.write(text + "\n")
    return EXIT_OK


def _cmd_repl(args: argparse.Namespace) -> int:
    from harnpy.repl import run_repl

    return run_repl(strict=args.strict)


def _read_source(path: str, command: str = "run") -> str | None:
    """The text of the script ``path`` (capped and regular files only, like every module
    source: ``harnpy.runtime.modules.read_source``), or None after saying why on stderr."""
    from harnpy.runtime.modules import read_source
    from harnpy.security import ReadRefused

    try:
        return read_source(path)
    except ReadRefused as e:  # a FIFO, a device, a directory, a file over the cap
        clitext.error(command, e.message)
        return None
    except OSError as e:
        clitext.error(command, f"cannot read {path}: {e.strerror or e}")
        return None
    except UnicodeDecodeError:
        clitext.error(command, f"{path} is not UTF-8 text")
        return None


def cmd_run(args: argparse.Namespace) -> int:
    """``harnpy run``: validate the ``--llm-mock`` options, then resume a snapshot (``--resume``)
    or run ``-e CODE`` or FILE with the script arguments after ``--``. Returns the exit code (2
    for bad options, no program, ``--resume`` together with a FILE or ``-e CODE``, ``--json``
    / ``--quiet`` without ``--resume``, or an unreadable file)."""
    script_args = list(args.args or [])
    problem = check_llm_mock_file(args) or check_store_option(args)
    if problem is not None:
        clitext.error("run", problem)
        return EXIT_USAGE
    if args.resume:
        extra = "-e CODE" if args.code is not None else args.file
        if extra is not None:
            # the snapshot names its own program: a script given too would be ignored
            write_err(
                f"harnpy run: error: --resume continues the program of its snapshot; remove {extra!s} "
                "(give either --resume SNAPSHOT, a FILE or -e CODE)\n"
            )
            return EXIT_USAGE
        if script_args:
            write_err(
                "harnpy run: error: --resume continues the program of its snapshot with the "
                f"arguments it was started with; remove `-- {' '.join(script_args)}`\n"
            )
            return EXIT_USAGE
        from harnpy.resume_cli import resume_main

        return resume_main(args)
    upgrade = getattr(args, "upgrade_code", False)
    if args.json or args.quiet or upgrade or getattr(args, "input", None) is not None:
        flag = (
            "--json"
            if args.json
            else "--quiet"
            if args.quiet
            else "--upgrade-code"
            if upgrade
            else "--input"
        )
        write_err(
            f"harnpy run: error: {flag} applies to --resume SNAPSHOT only (a script's own output is "
            "plain text)\n"
        )
        return EXIT_USAGE
    if args.code is not None:
        if args.file is not None:
            write_err(
                f"harnpy run: error: give either FILE ({args.file}) or -e CODE, not both "
                f"(the program's own arguments go after `--`: harnpy run -e CODE -- {args.file})\n"
            )
            return EXIT_USAGE
        path, source = "<-e>", args.code
    elif args.file:
        path = os.path.abspath(args.file)
        src = _read_source(args.file)
        if src is None:
            return EXIT_USAGE
        source = src
    else:
        clitext.error("run", "give a FILE, -e CODE or --resume SNAPSHOT")
        return EXIT_USAGE
    return run_source(path, source, script_args, args)


def run_source(path: str, source: str, argv: list[str], args: Any = None) -> int:
    """Load and run a program; report errors the documented way; return the exit code.

    Loading (parse, static checks, imports and their top-level code, compile) and running
    report failures alike (:func:`_report_failure`), except that a program nested too deeply
    to compile is a static error (``error[E109]``, exit status 2).
    """
    from harnpy.diagnostics import DiagnosticError
    from harnpy.runtime.runtime import Runtime

    kwargs: dict[str, Any] = {}
    if args is not None and getattr(args, "max_depth", None):
        kwargs["max_depth"] = args.max_depth
    rt = Runtime(argv=argv, **kwargs)
    if args is not None:
        _configure_llm(rt, args)
        rt.store_option = getattr(args, "store", None)
    try:
        mod = rt.load_main(path, source)
    except DiagnosticError as e:
        write_err(e.render() + "\n")
        return EXIT_USAGE
    except RecursionError:
        # The evaluator turns recursion at run time into Harn errors; what escapes here is the
        # parser or the compiler recursing over deeply nested source.
        write_err(nested_too_deeply(path).render() + "\n")
        return EXIT_USAGE
    except BaseException as e:  # noqa: BLE001 - e.g. an imported module's top level failed
        return _report_failure(e, rt)
    try:
        _freeze_heap()
        rt.run_module(mod)
    except DiagnosticError as e:
        write_err(e.render() + "\n")
        return EXIT_USAGE
    except BaseException as e:  # noqa: BLE001 - _report_failure re-raises what is not ours
        _settle_durable_run(rt, e)
        return _report_failure(e, rt)
    flush_stdout()
    return unchecked_failures_exit(rt)


def _settle_durable_run(rt: Any, e: BaseException) -> None:
    """A run that resumed itself from a durable waitpoint park and then failed commits
    ``failed`` as its outcome (:func:`harnpy.lifecycle.waitpoints.durable.settle`)."""
    from harnpy.runtime.errors import HarnError

    st = getattr(rt, "waitpoint_state", None)
    if st is None or st.fence is None or not isinstance(e, HarnError):
        return
    from harnpy.lifecycle.waitpoints.durable import settle

    settle(rt, "failed", None, e.message)


def unchecked_failures_exit(rt: Any) -> int:
    """The exit status of a program that ran to its end: 1 when a root ``agent_loop`` failed
    and the program never read that result's ``status`` or ``error``
    (:mod:`harnpy.runtime.outcomes`; the failure itself was reported when the loop ended),
    else 0. Says on stderr which loop and how to take charge of it."""
    from harnpy.runtime.outcomes import unchecked

    left = unchecked(rt)
    if not left:
        return EXIT_OK
    first = left[0]
    where = f" at {first.where}" if first.where else ""
    more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
    write_err(
        f"harnpy run: error: the agent_loop{where} ended with {first.status}{more} and the "
        "program did not check the result; exit status 1 (read result.status to handle a "
        "failed loop yourself)\n"
    )
    return EXIT_RUNTIME


#: What every command says about input nested deeper than Python's recursion limit allows.
NESTED_TOO_DEEPLY_TEXT = (
    "error[E109]: input nested too deeply to process (Python recursion limit reached)"
)


def nested_too_deeply(path: str) -> Diagnostic:
    """The ``error[E109]`` Diagnostic for a program whose nesting exceeds what the parser and
    compiler can recurse over (Python's recursion limit)."""
    from harnpy.diagnostics import Diagnostic

    return Diagnostic(
        "E109", "program nested too deeply to compile (Python recursion limit reached)", path
    )


def _report_failure(e: BaseException, rt: Any) -> int:
    """Report how a program stopped short while loading or running; return the exit code: a
    runtime error (message, caret, Harn stack trace) 1, ``__snapshot_exit`` 3 (parked),
    ``exit(n)`` n,
    Ctrl-C 130, Python's recursion limit and internal errors 1. Re-raises BrokenPipeError
    (``main`` ends quietly) and base exceptions that are not the program's."""
    from harnpy.diagnostics import RECURSION_LIMIT_MESSAGE
    from harnpy.runtime.errors import HarnError, HarnExit, HarnInterrupt, SnapshotExit

    if isinstance(e, BrokenPipeError):
        raise e
    flush_stdout()
    if isinstance(e, HarnError):
        write_err(render_runtime_error(e, rt) + "\n")
        return EXIT_RUNTIME
    if isinstance(e, SnapshotExit):  # the program parked itself: `run --resume PATH` goes on
        return EXIT_PARKED
    if isinstance(e, HarnExit):
        return e.code
    if isinstance(e, (HarnInterrupt, KeyboardInterrupt)):
        write_err("harnpy: interrupted\n")
        return EXIT_INTERRUPTED
    if isinstance(e, SystemExit):
        return int(e.code or 0) if not isinstance(e.code, str) else 1
    if isinstance(e, RecursionError):
        write_err(RECURSION_LIMIT_MESSAGE + "\n")
        return EXIT_RUNTIME
    if isinstance(e, Exception):
        return report_internal_error(e)
    raise e


def check_llm_mock_file(args: Any) -> str | None:
    """Check ``--llm-mock FILE`` (read and parsed) and ``--llm-mock-record FILE`` (writable)
    up front: a problem is a usage error reported before anything runs, not at the first
    model call. Returns the message, or None."""
    record = getattr(args, "llm_mock_record", None)
    if record:
        if os.path.isdir(record):
            return f"--llm-mock-record: {record} is a directory"
        parent = os.path.dirname(os.path.abspath(record)) or "."
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            return f"--llm-mock-record: cannot write {record} (no such writable directory)"
        if os.path.exists(record) and not os.access(record, os.W_OK):
            return f"--llm-mock-record: cannot write {record} (permission denied)"
    mock = getattr(args, "llm_mock", None)
    if not mock:
        return None
    from harnpy.llm import LlmError, load_mock_jsonl

    try:
        load_mock_jsonl(mock)
    except LlmError as e:
        return e.message
    return None


def check_store_option(args: Any) -> str | None:
    """Check the store ``--store URL`` (or ``HARNPY_STORE``) names up front — its form, not
    whether it can be reached — so that a mistyped URL is a usage error before anything
    runs, not a runtime error at the first waitpoint (or nothing at all in a program that
    never uses the store). Returns the message, or None."""
    option = getattr(args, "store", None)
    if option is None and not os.environ.get("HARNPY_STORE"):
        return None  # no store named: nothing to import or check
    from harnpy.store import StoreError, configured_store_url

    try:
        configured_store_url(option)
    except StoreError as e:
        return str(e) if option is not None else f"HARNPY_STORE: {e}"
    return None


def _configure_llm(rt: Any, args: Any) -> None:
    mock = getattr(args, "llm_mock", None)
    record = getattr(args, "llm_mock_record", None)
    if mock or record:
        rt.llm_cli_options = {"mock_file": mock, "record_file": record}


def flush_stdout() -> None:
    """Flush ``sys.stdout``, ignoring any error (e.g. a closed pipe)."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass


def render_runtime_error(e: Any, rt: Any) -> str:
    """``path:line:col: error[CODE]: message`` + source line/caret + Harn stack trace
    (:func:`harnpy.runtime.errors.render_error` with the sources of ``rt``'s modules)."""
    from harnpy.runtime.errors import render_error

    modules = getattr(rt, "modules", {})

    def source_of(path: str) -> str | None:
        mod = modules.get(path)
        return None if mod is None else mod.source  # type: ignore[no-any-return]

    return render_error(e, source_of)


def report_internal_error(e: BaseException) -> int:
    """Report a harnpy bug as ``error[E999]`` (the Python traceback instead when ``HARNPY_DEBUG``
    is set); returns exit code 1."""
    if os.environ.get("HARNPY_DEBUG"):
        import traceback

        traceback.print_exception(e)
    else:
        from harnpy.diagnostics import internal_error_text

        write_err(internal_error_text(e) + "\n")
    return EXIT_RUNTIME


def _compile_errors(path: str, source: str) -> list[Any]:
    """What ``harnpy run`` would reject before running: imports that do not resolve and
    compile-time errors (``break`` outside a loop...). Modules are compiled, never run."""
    from harnpy.diagnostics import Diagnostic, DiagnosticError
    from harnpy.runtime.errors import HarnError
    from harnpy.runtime.runtime import Runtime

    rt = Runtime()
    rt.restoring = True  # compile imported modules without running their initialisers
    try:
        rt.load_main(path, source)
    except DiagnosticError as e:
        return list(e.diagnostics)
    except HarnError as e:
        return [Diagnostic(e.code, e.message, path, source=source)]
    except RecursionError:
        return [nested_too_deeply(path)]
    return []


def cmd_check(path: str) -> int:
    """``harnpy check FILE``: print the static-check diagnostics (spec 3.19) and, when they hold
    no error, the errors ``harnpy run`` would raise before running (unresolved imports, compile
    errors). Prints ``FILE: ok`` and returns 0 when nothing is an error, else 2 (also for an
    unreadable file). Several files and ``--format json``: :mod:`harnpy.tooling`."""
    diags = check_diagnostics(path)
    if diags is None:
        return EXIT_USAGE
    for d in diags:
        write_err(d.render() + "\n")
    if any(d.severity == "error" for d in diags):
        return EXIT_USAGE
    sys.stdout.write(f"{path}: ok\n")
    return EXIT_OK


def _method_names() -> dict[str, frozenset[str]]:
    """The builtin method names of the receiver kinds whose unknown methods are nil (the
    registry's method tables; ``harnpy check``'s W201)."""
    from harnpy.stdlib.registry import METHODS

    return {k: frozenset(METHODS.get(k, ())) for k in ("string", "list", "set")}


def check_diagnostics(path: str) -> list[Diagnostic] | None:
    """What ``harnpy check`` reports for the file ``path``: the static-check diagnostics
    and, when they hold no error, the errors ``harnpy run`` would raise before running. None
    (after saying why on stderr) when the file cannot be read."""
    from harnpy.check import check_file
    from harnpy.stdlib import load_core
    from harnpy.stdlib.mathlib import GLOBAL_CONSTANTS
    from harnpy.stdlib.registry import BUILTINS

    src = _read_source(path, "check")
    if src is None:
        return None
    load_core()  # every builtin's name is known from the registry's index
    try:
        diags = check_file(
            os.path.abspath(path), src, set(BUILTINS) | set(GLOBAL_CONSTANTS), _method_names()
        )
    except RecursionError:
        diags = [nested_too_deeply(os.path.abspath(path))]
    if not any(d.severity == "error" for d in diags):
        diags.extend(_compile_errors(os.path.abspath(path), src))
    return diags


if __name__ == "__main__":
    sys.exit(main())
