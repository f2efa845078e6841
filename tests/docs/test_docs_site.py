"""The user docs site (issue 14 point 4): a real browserless ``mkdocs build --strict`` of
``docs/`` (broken links fail it), the generated reference covering every registered builtin,
method and ``std/`` function, reference tables kept true against the source (every error
code and environment variable harnpy uses is documented), and the getting-started page's
programs run as printed — including parking an agent and resuming it from another process."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import harnpy as harnpy_pkg
from tests.conftest import REPO, harnpy

pytest.importorskip("mkdocs")
pytest.importorskip("material")

# the package the tests import (the installed wheel in CI's second pass, not a source tree)
HARNPY_SRC = Path(harnpy_pkg.__file__).resolve().parent


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # no -q: it hides the warnings that --strict counts
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=_build_env(),
    )


def _pinned_theme() -> bool:
    """Whether the installed mkdocs-material is in pyproject.toml's range (below 9.7.2,
    whose builds print a banner); a venv installed before the range was set may be newer."""
    from importlib.metadata import version

    parts = tuple(int(x) for x in version("mkdocs-material").split(".")[:3] if x.isdigit())
    return parts < (9, 7, 2)


def _build_env() -> dict[str, str]:
    """The environment as a contributor has it (no NO_MKDOCS_2_WARNING) when the theme is in
    the pinned range, so a banner fails the test; with a newer theme, its documented switch."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "NO_MKDOCS_2_WARNING"}
    if not _pinned_theme():
        env["NO_MKDOCS_2_WARNING"] = "1"
    return env


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    r = _build(REPO, out)
    assert r.returncode == 0, r.stdout + r.stderr
    # only MkDocs' own log lines: no theme banner (an end-of-life or MkDocs 2 notice)
    noise = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert all(ln.startswith("INFO") for ln in noise), "\n".join(noise)
    return out


def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    for page in [
        "getting-started",
        "tour",
        "agents",
        "suspend-resume",
        "durable-runs",
        "serving",
        "cli",
        "repl",
        "testing",
        "reference/builtins",
        "reference/methods",
        "reference/std-modules",
        "reference/agent-loop",
        "reference/mock-format",
        "reference/environment",
        "reference/exit-codes",
        "reference/errors",
        "reference/snapshot-format",
    ]:
        assert (site / page / "index.html").is_file(), page
    tour = (site / "tour" / "index.html").read_text(encoding="utf-8")
    assert "greet" in tour and "--8&lt;--" not in tour  # the examples were included


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copytree(REPO / "dev", tmp_path / "dev")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    page = tmp_path / "docs" / "agents.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    r = _build(tmp_path, tmp_path / "site")
    assert r.returncode != 0
    assert "no-such-page.md" in r.stdout + r.stderr


def test_the_reference_covers_every_builtin_method_and_std_function(site: Path) -> None:
    from harnpy.docgen import std_functions
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS, METHODS

    load_all()
    builtins = (site / "reference" / "builtins" / "index.html").read_text(encoding="utf-8")
    missing = [n for n in BUILTINS if f"<code>{html.escape(n)}</code>" not in builtins]
    assert not missing, missing
    methods = (site / "reference" / "methods" / "index.html").read_text(encoding="utf-8")
    missing = [
        f"{t}.{m}"
        for t, table in METHODS.items()
        for m in table
        if f"<code>{t}.{m}</code>" not in methods
    ]
    assert not missing, missing
    std = (site / "reference" / "std-modules" / "index.html").read_text(encoding="utf-8")
    funcs = std_functions()
    assert funcs  # the bundled modules have public functions
    missing = [f"{f.module}.{f.name}" for f in funcs if f"<code>{f.name}</code>" not in std]
    assert not missing, missing


def _source_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(HARNPY_SRC.rglob("*.py")))


def test_every_error_code_in_the_source_is_documented() -> None:
    src = _source_text()
    codes = set(re.findall(r'"(E\d{3})"', src)) | set(re.findall(r"HARN-[A-Z]{3}-\d{3}", src))
    assert len(codes) > 40
    doc = (REPO / "docs" / "reference" / "errors.md").read_text(encoding="utf-8")
    missing = sorted(c for c in codes if f"`{c}`" not in doc)
    assert not missing, f"document these in docs/reference/errors.md: {missing}"


def test_every_environment_variable_is_documented() -> None:
    src = _source_text()
    names = set(re.findall(r'"((?:HARN|HARNPY|OPENAI|ANTHROPIC)_[A-Z_]+)"', src))
    assert "HARN_WORKER_STATE_DIR" in names
    doc = (REPO / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    missing = sorted(n for n in names if f"`{n}`" not in doc)
    assert not missing, f"document these in docs/reference/environment.md: {missing}"


def test_user_docs_hold_no_contributor_notes() -> None:
    assert not (REPO / "docs" / "impl.md").exists()
    assert not (REPO / "docs" / "helpers-common.md").exists()
    assert (REPO / "dev" / "impl.md").is_file() and (REPO / "CONTRIBUTING.md").is_file()


def _blocks(page: str) -> list[str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"```harn\n(.*?)```", text, re.S)


def test_getting_started_programs_run_as_printed(tmp_path: Path) -> None:
    """The walk a newcomer makes: the first program, an agent with two tools, then the same
    agent parked in one process and resumed from another (issue 14 acceptance)."""
    hello, agent, park = _blocks("getting-started.md")
    (tmp_path / "hello.harn").write_text(hello)
    r = harnpy("run", "hello.harn", "--", "you", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "hello, world!\nhello, you?\n"), r.stderr
    (tmp_path / "agent.harn").write_text(agent)
    r = harnpy("run", "agent.harn", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["done", "THE ANSWER IS 42", "[add, shout]"]
    state = tmp_path / "state"
    env = {"HARN_WORKER_STATE_DIR": str(state)}
    (tmp_path / "park.harn").write_text(park)
    r = harnpy("run", "park.harn", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    status, resume = r.stdout.splitlines()
    assert status == "status: suspended"
    assert resume.startswith("resume with: harnpy run --resume ")
    snapshot = resume.split("--resume ", 1)[1]
    again = harnpy("run", "--resume", snapshot, cwd=tmp_path, env=env)  # another process
    assert (again.returncode, again.stdout) == (0, "CONFIRMED: 42\n"), again.stderr


def test_the_pages_read_the_same_raw_as_on_the_site() -> None:
    """A page read as a raw Markdown file (on GitHub, in an editor) shows the code the site
    shows: no snippet includes, and every example block named after a file of the
    repository (a line ``\\`examples/....harn\\`:``) is that file, byte for byte."""
    named = re.compile(r"^`((?:examples|stdlib)/[^`]+\.harn)`:\n\n```harn\n(.*?)```$", re.M | re.S)
    shown = 0
    for page in sorted((REPO / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert "--8<--" not in text, f"{page.relative_to(REPO)} includes a snippet"
        for m in named.finditer(text):
            assert m.group(2) == (REPO / m.group(1)).read_text(encoding="utf-8"), (
                f"{page.relative_to(REPO)} shows an old copy of {m.group(1)}"
            )
            shown += 1
    tours = sorted((REPO / "examples" / "tour").glob("*.harn"))
    assert shown >= len(tours) > 0  # every tour example is on the tour page
