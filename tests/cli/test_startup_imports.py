"""Start-up stays lean (issue 15): a plain ``harnpy run`` imports neither the store package
(only the ``store``/``worker`` commands need it) nor, once the parse is cached, Lark; nor the
builtin modules it does not use (the registry loads them lazily), so no pydantic, attrs /
cattrs shapes, LLM layer, HTTP client, cron parser or database driver; nor the command
modules of the other subcommands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: Modules a plain run must not import (prefixes: a package and its submodules).
HEAVY = (
    "harnpy.store",
    "lark",
    "pydantic",
    "prompt_toolkit",
    "croniter",
    "httpx",
    "openai",
    "anthropic",
    "psycopg",
    "psycopg_pool",
    "attr",
    "cattrs",
    "harnpy.llm",
    "harnpy.lifecycle.agents",
    "harnpy.lifecycle.triggers.cli",
    "harnpy.lifecycle.waitpoints",
    "harnpy.serve",
    "harnpy.tooling",
    "harnpy.repl",
    # a clean verdict is cached (harnpy/check/verdicts.py): a warm run skips the checker
    "harnpy.check._checker",
    # the translator of direct calls and loops is needed only once a fn or loop is compiled
    "harnpy.runtime.direct",
    "harnpy.runtime.direct_loops",
    # argparse's help formatter and the parse cache's writer import these; a warm run needs
    # neither (the CLI reads the terminal width itself)
    "shutil",
    "tempfile",
    "logging",
    "socket",
)

PROBE = (
    "import json, sys\n"
    "from harnpy.cli import main\n"
    "rc = main(['run', '-e', sys.argv[1]])\n"
    "heavy = json.loads(sys.argv[2])\n"
    "loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + '.')})\n"
    "print(json.dumps({'rc': rc, 'loaded': loaded}))\n"
)


def _probe(cache: Path, code: str = "println(1 + 1)") -> dict[str, object]:
    env = {**os.environ, "HARNPY_CACHE_DIR": str(cache)}
    env.pop("HARNPY_NO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, code, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    if code == "println(1 + 1)":
        assert out[0] == "2"
    result: dict[str, object] = json.loads(out[-1])
    return result


def test_plain_run_skips_the_store_and_a_cached_parse_skips_lark(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    first = _probe(cache)
    assert first["rc"] == 0
    # a cold parse needs the parser (lark uses logging) and writes the cache entry
    # (tempfile, which imports shutil): nothing else heavy
    loaded = set(first["loaded"])  # type: ignore[call-overload]
    assert "lark" in loaded and "harnpy.check._checker" in loaded
    assert loaded <= {"lark", "logging", "shutil", "tempfile", "harnpy.check._checker"}
    second = _probe(cache)
    assert second == {"rc": 0, "loaded": []}


def test_run_nil_on_a_warm_cache_imports_nothing_heavy(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    _probe(cache, "nil")
    assert _probe(cache, "nil") == {"rc": 0, "loaded": []}


def test_a_builtin_loads_its_module_when_the_program_uses_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    # llm_providers lives in the lifecycle layer (harnpy.llm's catalog): used, it loads
    result = _probe(cache, 'println(contains(llm_providers(), "mock"))')
    assert result["rc"] == 0
    assert "harnpy.llm" in result["loaded"]  # type: ignore[operator]


def test_store_commands_still_parse(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harnpy", "store", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "store" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "harnpy", "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "worker" in proc.stdout and "store" in proc.stdout
