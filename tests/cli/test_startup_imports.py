"""Start-up stays lean: a plain ``harnpy run`` imports neither the store package (only the
``store``/``worker`` commands need it) nor, once the parse is cached, Lark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = (
    "import sys\n"
    "from harnpy.cli import main\n"
    "rc = main(['run', '-e', 'println(1 + 1)'])\n"
    "heavy = ('harnpy.store', 'lark', 'pydantic', 'prompt_toolkit', 'croniter', 'openai',"
    " 'anthropic', 'harnpy.lifecycle.triggers.cli')\n"
    "print(__import__('json').dumps({'rc': rc, 'loaded': [m for m in heavy if m in sys.modules]}))\n"
)


def _probe(cache: Path) -> dict[str, object]:
    env = {**os.environ, "HARNPY_CACHE_DIR": str(cache)}
    env.pop("HARNPY_NO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "2"
    result: dict[str, object] = json.loads(out[-1])
    return result


def test_plain_run_skips_the_store_and_a_cached_parse_skips_lark(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    first = _probe(cache)
    assert first["rc"] == 0
    assert first["loaded"] == ["lark"]  # a cold parse needs the parser, nothing else heavy
    second = _probe(cache)
    assert second == {"rc": 0, "loaded": []}


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
