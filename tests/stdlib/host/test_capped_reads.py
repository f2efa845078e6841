"""The reading builtins refuse a file or stream over ``HARNPY_MAX_READ_BYTES`` (default
64 MiB) and refuse FIFOs and devices instead of hanging on them (issue 13 point 4): a
catchable Harn error naming the builtin, the size and the limit; at most limit + 1 bytes
are read."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.errors import HarnThrow
from harnpy.security import DEFAULT_READ_LIMIT, read_limit
from tests.blocking import within
from tests.conftest import harnpy

LIMIT = 50


@pytest.fixture(autouse=True)
def _small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNPY_MAX_READ_BYTES", str(LIMIT))


def _fifo(tmp_path: Path) -> str:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return str(p)


def _big(tmp_path: Path, size: int = LIMIT + 1) -> str:
    p = tmp_path / "big.txt"
    p.write_bytes(b"x" * size)
    return str(p)


def test_the_limit_defaults_to_64_mib_and_reads_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert read_limit() == LIMIT
    monkeypatch.delenv("HARNPY_MAX_READ_BYTES")
    assert read_limit() == DEFAULT_READ_LIMIT == 64 * 1024 * 1024


@pytest.mark.parametrize("name", ["read_file", "read_file_bytes"])
def test_a_file_over_the_limit_is_refused_naming_builtin_size_and_limit(
    thread: Any, tmp_path: Path, name: str
) -> None:
    with pytest.raises(HarnThrow) as e:
        thread.call(name, _big(tmp_path))
    msg = str(e.value.value)
    assert msg.startswith(f"{name}: ") and f"is {LIMIT + 1} bytes" in msg, msg
    assert f"over the {LIMIT}-byte limit" in msg and "HARNPY_MAX_READ_BYTES" in msg, msg


def test_a_file_at_the_limit_is_read(thread: Any, tmp_path: Path) -> None:
    assert thread.call("read_file", _big(tmp_path, LIMIT)) == "x" * LIMIT
    assert thread.call("read_file_bytes", _big(tmp_path, LIMIT)) == b"x" * LIMIT


def test_read_file_result_gives_err_over_the_limit(thread: Any, tmp_path: Path) -> None:
    r = thread.call("read_file_result", _big(tmp_path))
    assert r.variant == "Err" and f"is {LIMIT + 1} bytes" in r.fields[0], r


def test_read_file_keeps_line_endings_and_replaces_bad_utf8(thread: Any, tmp_path: Path) -> None:
    p = tmp_path / "crlf.txt"
    p.write_bytes(b"a\r\nb\xff")
    assert thread.call("read_file", str(p)) == "a\r\nb\ufffd"


@pytest.mark.parametrize("name", ["read_file", "read_file_bytes", "read_file_result"])
def test_a_fifo_is_refused_instead_of_waiting_for_a_writer(
    thread: Any, tmp_path: Path, name: str
) -> None:
    fifo = _fifo(tmp_path)

    def call() -> Any:
        try:
            return thread.call(name, fifo)
        except HarnThrow as e:
            return e.value

    got = within(5, call)
    text = got.fields[0] if hasattr(got, "fields") else got
    assert "read_file" in text and "FIFO" in text and "not a regular file" in text, got


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused(thread: Any) -> None:
    with pytest.raises(HarnThrow, match="read_file: /dev/zero is a device"):
        within(5, lambda: thread.call("read_file", "/dev/zero"))


def test_render_refuses_a_big_template_and_a_fifo(thread: Any, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("{{ x }}" + "y" * LIMIT)
    with pytest.raises(HarnThrow, match=r"render: .*big.txt is \d+ bytes, over the 50-byte"):
        thread.call("render", "big.txt", {"x": 1})
    _fifo(tmp_path)
    with pytest.raises(HarnThrow, match="render: .*FIFO"):
        within(5, lambda: thread.call("render", "pipe", {}))


def test_render_refuses_a_big_included_file(thread: Any, tmp_path: Path) -> None:
    (tmp_path / "main.tpl").write_text('{{ include "big.txt" }}')
    (tmp_path / "big.txt").write_text("z" * (LIMIT + 1))
    with pytest.raises(HarnThrow, match="cannot read included template 'big.txt'.*over the"):
        thread.call("render", "main.tpl", {})


def test_summarize_prompt_file_is_capped(thread: Any, tmp_path: Path) -> None:
    from harnpy.lifecycle.compaction import _prompt_template

    (tmp_path / "prompt.txt").write_text("p" * (LIMIT + 1))
    with pytest.raises(HarnThrow, match="summarize_prompt.*over the 50-byte limit"):
        _prompt_template(thread, "prompt.txt")
    _fifo(tmp_path)
    with pytest.raises(HarnThrow, match="summarize_prompt.*FIFO"):
        within(5, lambda: _prompt_template(thread, "pipe"))
    (tmp_path / "ok.txt").write_text("Summarise.")
    assert _prompt_template(thread, "ok.txt") == "Summarise."


def test_mocked_stdin_over_the_limit_is_refused(thread: Any) -> None:
    thread.runtime.stdin_mock = io.StringIO("s" * (LIMIT + 1))
    with pytest.raises(HarnThrow, match="read_stdin: stdin has more than 50 bytes"):
        thread.call("read_stdin")
    thread.runtime.stdin_mock = io.StringIO("l" * (LIMIT + 1) + "\nnext\n")
    with pytest.raises(HarnThrow, match="read_line: stdin has more than 50 bytes"):
        thread.call("read_line")
    # a line of exactly the limit (plus its newline) is fine
    thread.runtime.stdin_mock = io.StringIO("l" * LIMIT + "\nnext\n")
    assert thread.call("read_line") == "l" * LIMIT
    assert thread.call("read_line") == "next"
    assert thread.call("read_line") is None


def test_real_stdin_over_the_limit_is_a_catchable_error() -> None:
    prog = (
        "let r = try { read_stdin() }\n"
        'println(if is_err(r) { "refused: " + to_string(unwrap_err(r)) } else { "read" })\n'
    )
    p = harnpy("run", "-e", prog, env={"HARNPY_MAX_READ_BYTES": "1000"}, input="q" * 5000)
    assert p.returncode == 0, p.stderr
    assert "refused: read_stdin: stdin has more than 1000 bytes" in p.stdout, p.stdout
    p = harnpy("run", "-e", prog, env={"HARNPY_MAX_READ_BYTES": "1000"}, input="q" * 999)
    assert p.stdout.strip() == "read", p.stdout + p.stderr


def test_a_bad_limit_value_is_reported(thread: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HARNPY_MAX_READ_BYTES", "lots")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(HarnThrow, match="HARNPY_MAX_READ_BYTES must be a whole number"):
        thread.call("read_file", str(tmp_path / "f.txt"))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX FIFOs")
def test_cli_read_file_of_a_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path)
    p = harnpy("run", "-e", f"println(try {{ read_file({fifo!r}) }})".replace("'", '"'), timeout=20)
    assert "not a regular file" in p.stdout, p.stdout + p.stderr
