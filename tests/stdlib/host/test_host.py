"""Files, paths, environment, processes, stdin/TTY mocks, exit (spec 4.1, 4.14) and the
logging/tracing/timer/stderr-capture builtins."""

from __future__ import annotations

import json
import os
import sys

import pytest

from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.stdlib.fs import HarnExit


def test_file_lifecycle(thread, tmp_path):
    d = str(tmp_path / "a" / "b")
    thread.call("mkdir", d)
    thread.call("mkdir", d)  # existing directory is fine
    f = thread.call("path_join", d, "x.txt")
    thread.call("write_file", f, "héllo")
    thread.call("append_file", f, "\nmore")
    assert thread.call("read_file", f) == "héllo\nmore"
    assert thread.call("read_file_result", f).fields == ["héllo\nmore"]
    thread.call("copy_file", f, f + ".bak")
    assert thread.call("list_dir", d) == ["x.txt", "x.txt.bak"]
    info = thread.call("stat", f)
    assert info["is_file"] and not info["is_dir"] and info["size"] == len("héllo\nmore".encode())
    assert thread.call("file_exists", f)
    thread.call("delete_file", f)
    assert not thread.call("file_exists", f)
    thread.call("delete_file", str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()


def test_file_errors(thread, tmp_path):
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(HarnThrow, match="read_file: .*missing.txt"):
        thread.call("read_file", missing)
    result = thread.call("read_file_result", missing)
    assert result.variant == "Err" and "missing.txt" in result.fields[0]
    with pytest.raises(HarnThrow, match="^Thrown: stat: "):
        thread.call("stat", missing)


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("path_join", ("a", "b", "c.txt"), "a/b/c.txt"),
        ("path_join", ("a", "/abs"), "/abs"),
        ("path_join", (["x", "y"],), "x/y"),
        ("dirname", ("/a/b/c.txt",), "/a/b"),
        ("dirname", ("c.txt",), ""),
        ("basename", ("/a/b/c.txt",), "c.txt"),
        ("extname", ("/a/b/c.tar.gz",), ".gz"),
        ("extname", ("Makefile",), ""),
    ],
)
def test_path_helpers(thread, name, args, expected):
    assert thread.call(name, *args) == expected


def test_source_dir_and_project_root(thread, tmp_path):
    (tmp_path / "proj" / "src").mkdir(parents=True)
    (tmp_path / "proj" / "harn.toml").write_text("")
    thread.source = tmp_path / "proj" / "src" / "main.harn"
    assert thread.call("source_dir") == str(tmp_path / "proj" / "src")
    assert thread.call("project_root") == str(tmp_path / "proj")
    thread.source = tmp_path / "elsewhere.harn"
    assert thread.call("project_root") is None or not str(tmp_path).startswith(
        thread.call("project_root")
    )
    thread.source = None
    assert thread.call("source_dir") == os.getcwd()


def test_env(thread, monkeypatch):
    monkeypatch.setenv("HARNPY_TEST_VAR", "set")
    monkeypatch.delenv("HARNPY_TEST_UNSET", raising=False)
    assert thread.call("env", "HARNPY_TEST_VAR") == "set"
    assert thread.call("env", "HARNPY_TEST_UNSET") is None
    assert thread.call("env_or", "HARNPY_TEST_UNSET", 8080) == 8080
    assert thread.call("env_or", "HARNPY_TEST_VAR", 8080) == "set"


def test_exec_and_shell(thread):
    r = thread.call("exec", sys.executable, "-c", "import sys; print('hi'); sys.exit(3)")
    assert r == {"stdout": "hi\n", "stderr": "", "status": 3, "success": False}
    s = thread.call("shell", "echo out; echo err 1>&2")
    assert (s["stdout"], s["stderr"], s["success"]) == ("out\n", "err\n", True)
    missing = thread.call("exec", "/nonexistent/program")
    assert missing["status"] == 127 and not missing["success"]


def test_platform_and_exit(thread):
    assert thread.call("platform") in ("linux", "macos", "windows", sys.platform)
    with pytest.raises(HarnExit) as info:
        thread.call("exit", 4)
    assert info.value.code == 4
    assert not isinstance(info.value, HarnError)


def test_stdin_mocks(thread):
    thread.call("mock_stdin", "alpha\nbeta\r\ngamma")
    lines = [thread.call("read_line") for _ in range(4)]
    assert lines == ["alpha", "beta", "gamma", None]
    thread.call("unmock_stdin")
    thread.call("mock_stdin", "hello\nworld\n")
    assert thread.call("read_stdin") == "hello\nworld\n"
    assert thread.call("read_line") is None
    assert thread.call("read_stdin") is None
    thread.call("unmock_stdin")
    assert thread.runtime.stdin_mock is None


def test_tty_mocks(thread):
    thread.runtime.stdout_isatty = False
    thread.call("mock_tty", "stdin", True)
    thread.call("mock_tty", "stdout", True)
    assert thread.call("is_stdin_tty") is True and thread.call("is_stdout_tty") is True
    assert thread.runtime.stdout_isatty is True
    thread.call("mock_tty", "stdout", False)
    assert thread.call("is_stdout_tty") is False
    thread.call("unmock_tty")
    assert thread.runtime.stdout_isatty is False
    with pytest.raises(HarnThrow, match="unknown stream"):
        thread.call("mock_tty", "printer", True)


def test_capture_stderr(thread):
    thread.write_err("before\n")
    thread.call("capture_stderr_start")
    thread.write_err("warn: ")
    thread.write_err("disk full\n")
    assert thread.call("capture_stderr_take") == "warn: disk full\n"
    thread.write_err("after\n")
    assert thread.stderr == "before\nafter\n"
    assert thread.call("capture_stderr_take") == ""


def test_log_levels_filter_structured_records(thread):
    thread.runtime.clock.set(0)
    thread.call("log_set_level", "error")
    thread.call("log_debug", "a")
    thread.call("log_info", "b", {"key": "val"})
    thread.call("log_warn", "c")
    assert thread.stderr == "" and thread.stdout == ""
    thread.call("log_set_level", "debug")
    thread.call("log_info", "b", {"key": "val"})
    record = json.loads(thread.stderr)
    assert record == {
        "fields": {"key": "val"},
        "level": "info",
        "message": "b",
        "timestamp": "1970-01-01T00:00:00.000Z",
    }
    with pytest.raises(HarnThrow, match="unknown level"):
        thread.call("log_set_level", "loud")


def test_trace_spans(thread):
    thread.call("log_set_level", "error")
    assert thread.call("trace_id") is None
    thread.call("enable_tracing", True)
    outer = thread.call("trace_start", "op")
    inner = thread.call("trace_start", "inner")
    assert outer["name"] == "op" and outer["span_id"] and outer["trace_id"]
    assert inner["trace_id"] == outer["trace_id"] and inner["parent_id"] == outer["span_id"]
    assert thread.call("trace_id") == outer["trace_id"]
    thread.call("trace_end", inner)
    thread.call("trace_end", outer)
    assert thread.call("trace_id") is None
    assert [s["name"] for s in thread.call("trace_spans")] == ["inner", "op"]
    assert "op: " in thread.call("trace_summary")
    assert thread.stderr == ""


def test_timers_print_elapsed_ms(thread):
    thread.runtime.clock.set(1_000)
    t = thread.call("timer_start", "my_timer")
    assert t == {"name": "my_timer", "start_ms": 1_000}
    thread.runtime.clock.advance(42)
    assert thread.call("timer_end", t) == 42
    assert thread.stdout == "[timer] my_timer: 42ms\n"
