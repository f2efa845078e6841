"""The lazy builtin registry (issue 15, start-up): the generated index
``harnpy/stdlib/_index.py`` matches the real registrations, and the registry serves every
builtin, method and runtime-state provider through it without importing unused modules."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def test_the_index_matches_the_registrations() -> None:
    # a fresh process imports every builtin module and diffs what each one registered
    proc = subprocess.run(
        [sys.executable, "-m", "harnpy.stdlib.indexgen", "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_names_come_from_the_index_and_a_lookup_imports_one_module() -> None:
    proc = _child(
        "import json, sys\n"
        "from harnpy.stdlib import load_core\n"
        "from harnpy.stdlib.registry import BUILTINS\n"
        "load_core()\n"
        "out = {'known': 'llm_providers' in BUILTINS and 'now_ms' in BUILTINS,\n"
        "       'before': 'harnpy.lifecycle.catalog_builtins' in sys.modules,\n"
        "       'registered': BUILTINS.registered('llm_providers') is not None,\n"
        "       'pure': BUILTINS.is_pure('llm_providers'), 'len': len(BUILTINS)}\n"
        "b = BUILTINS['llm_providers']\n"
        "out['after'] = 'harnpy.lifecycle.catalog_builtins' in sys.modules\n"
        "out['name'] = b.name\n"
        "out['same'] = BUILTINS.get('llm_providers') is b\n"
        "out['missing'] = BUILTINS.get('no_such_builtin_xyz')\n"
        "print(json.dumps(out))\n"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["known"] and not out["before"] and not out["registered"]
    assert out["pure"] and out["len"] > 500
    assert out["after"] and out["name"] == "llm_providers" and out["same"]
    assert out["missing"] is None


def test_lazy_and_eager_tables_agree_with_load_all() -> None:
    # everything known lazily is what load_all registers: same names, same flags, and the
    # method tables are complete before any lazy module is imported
    proc = _child(
        "import json\n"
        "from harnpy.stdlib import load_all, load_core\n"
        "from harnpy.stdlib.registry import BUILTINS, METHODS\n"
        "load_core()\n"
        "names = sorted(BUILTINS)\n"
        "pure = sorted(n for n in names if BUILTINS.is_pure(n))\n"
        "methods = sorted(f'{t}.{n}' for t, tb in METHODS.items() for n in tb)\n"
        "load_all()\n"
        "print(json.dumps({'names': names == sorted(dict.keys(BUILTINS)),\n"
        "  'pure': pure == sorted(n for n, b in BUILTINS.items() if not b.callback and not"
        " b.control),\n"
        "  'methods': methods == sorted(f'{t}.{n}' for t, tb in METHODS.items() for n in tb)}))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"names": True, "pure": True, "methods": True}


def test_a_runtime_state_section_imports_its_provider_on_restore() -> None:
    proc = _child(
        "import json, sys\n"
        "from harnpy.runtime import extensions\n"
        "from harnpy.stdlib import load_core\n"
        "load_core()\n"
        "out = {'before': 'http_mock' in extensions.RUNTIME_STATE,\n"
        "       'declared': extensions.LAZY_STATE.get('http_mock')}\n"
        "p = extensions.state_provider('http_mock')\n"
        "out['after'] = p is not None and p.name == 'http_mock'\n"
        "out['loaded'] = 'harnpy.stdlib.http' in sys.modules\n"
        "out['unknown'] = extensions.state_provider('no_such_section') is None\n"
        "print(json.dumps(out))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "before": False,
        "declared": "harnpy.stdlib.http",
        "after": True,
        "loaded": True,
        "unknown": True,
    }


def test_the_harness_constant_is_built_on_first_read() -> None:
    proc = _child(
        "import json, sys\n"
        "from harnpy.runtime.runtime import Runtime\n"
        "rt = Runtime()\n"
        "out = {'named': 'harness' in rt.constants and 'harness' in set(rt.constants),\n"
        "       'before': 'harnpy.lifecycle.harness' in sys.modules}\n"
        "h = rt.constants['harness']\n"
        "out['type'] = type(h).__name__ + ':' + h.name\n"
        "out['kept'] = rt.constants.get('harness') is h\n"
        "print(json.dumps(out))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "named": True,
        "before": False,
        "type": "StructValue:Harness",
        "kept": True,
    }


def test_a_program_that_never_loads_the_time_builtins_keeps_its_clock_across_a_snapshot(
    tmp_path: object,
) -> None:
    # the clock is the runtime's, not timelib's: a snapshot taken in a process that never
    # imported the time builtins carries it, so a deadline started before the snapshot
    # still expires after the restore (before: the section was missing, the restored clock
    # started at 0 and `deadline 50ms { sleep(75ms) }` completed without throwing)
    proc = _child(
        "import io, json, sys\n"
        "from harnpy.runtime.runtime import Runtime\n"
        "from harnpy.runtime.snapshot import snapshot\n"
        "rt = Runtime(stdout=io.StringIO().write, stderr=io.StringIO().write)\n"
        "mod = rt.load_main('/x/main.harn', 'sleep(30ms)\\n')\n"
        "rt.run_module(mod)\n"
        "doc = snapshot(rt.main_thread)\n"
        "print(json.dumps({'timelib': 'harnpy.stdlib.timelib' in sys.modules,\n"
        "                  'clock': doc.get('runtime_state', {}).get('clock')}))\n"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["timelib"] is False
    assert out["clock"]["wall_ms"] is None and out["clock"]["mono_ms"] >= 30
