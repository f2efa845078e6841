"""harnpy.security: seal/unseal, the snapshot key (variable and key file), read_capped and the
private file helpers."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harnpy.security import (
    FileTooLarge,
    KeyUnavailable,
    NotRegularFile,
    SealError,
    UnsafePath,
    is_sealed,
    private_dir,
    read_capped,
    seal,
    snapshot_key,
    unseal,
    write_private,
)
from harnpy.security import keys as keys_mod


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh key file location for this test (not created yet)."""
    p = tmp_path / "cfg" / "harnpy" / "snapshot.key"
    monkeypatch.delenv("HARNPY_SNAPSHOT_KEY", raising=False)
    monkeypatch.setenv("HARNPY_SNAPSHOT_KEY_FILE", str(p))
    keys_mod.clear_cache()
    yield p
    keys_mod.clear_cache()


# ------------------------------------------------------------------ seal / unseal


def test_seal_keeps_valid_json_with_the_seal_first(key_file: Path) -> None:
    body = json.dumps({"a": 1, "b": [1, 2]}).encode()
    data = seal(body)
    assert is_sealed(data)
    doc = json.loads(data)
    assert list(doc)[0] == "_seal" and doc["a"] == 1 and doc["b"] == [1, 2]
    assert doc["_seal"].startswith(f"hs1:{snapshot_key().key_id}:")
    assert unseal(data, "doc") == body


@pytest.mark.parametrize("body", [b"{}", b"{ }", b'{\n  "x": "y"\n}', b'{"k":{"$t":"v"}}'])
def test_unseal_returns_the_exact_original_bytes(key_file: Path, body: bytes) -> None:
    data = seal(body)
    json.loads(data)  # still JSON
    assert unseal(data, "doc") == body


def test_every_single_byte_change_is_detected(key_file: Path) -> None:
    body = json.dumps({"status": "suspended", "n": 12345, "s": "text"}).encode()
    data = seal(body)
    for i in range(len(data)):
        for flip in (0x01, 0x20):
            bad = bytearray(data)
            bad[i] ^= flip
            with pytest.raises(SealError) as ei:
                unseal(bytes(bad), "snapshot `x.json`")
            assert "snapshot `x.json`" in str(ei.value)
            assert "\n" not in str(ei.value)


def test_truncated_and_extended_documents_are_refused(key_file: Path) -> None:
    data = seal(b'{"a":1}')
    for bad in (data[:-1], data + b" ", data[:50], b""):
        with pytest.raises(SealError):
            unseal(bad, "doc")


def test_unsealed_document_is_refused_without_parsing(key_file: Path) -> None:
    with pytest.raises(SealError) as ei:
        unseal(b'{"_type": "harnpy_snapshot"}', "snapshot `s.json`")
    assert ei.value.reason == "unsealed"
    assert "not sealed" in str(ei.value)
    # not JSON at all: the same clean refusal (nothing was parsed)
    with pytest.raises(SealError):
        unseal(b"[" * 100000, "x")


def test_seal_with_another_key_names_both_key_ids(
    key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = seal(b'{"a":1}')
    theirs = snapshot_key().key_id
    monkeypatch.setenv("HARNPY_SNAPSHOT_KEY", "x" * 40)
    mine = snapshot_key().key_id
    assert mine != theirs
    with pytest.raises(SealError) as ei:
        unseal(data, "snapshot `s.json`")
    msg = str(ei.value)
    assert ei.value.reason == "other_key"
    assert theirs in msg and mine in msg and "HARNPY_SNAPSHOT_KEY" in msg


def test_a_forged_mac_under_our_key_id_is_refused(key_file: Path) -> None:
    data = seal(b'{"a":1}')
    kid = snapshot_key().key_id
    forged = b'{"_seal":"hs1:%s:%s","a":2}' % (kid.encode(), b"0" * 64)
    with pytest.raises(SealError) as ei:
        unseal(forged, "doc")
    assert ei.value.reason == "changed"
    assert unseal(data, "doc") == b'{"a":1}'


def test_seal_refuses_non_objects_and_double_sealing(key_file: Path) -> None:
    with pytest.raises(ValueError):
        seal(b"[1]")
    with pytest.raises(ValueError):
        seal(seal(b"{}"))


# ------------------------------------------------------------------ keys


def test_env_key_is_used_and_shared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNPY_SNAPSHOT_KEY", "k" * 64)
    monkeypatch.setenv("HARNPY_SNAPSHOT_KEY_FILE", str(tmp_path / "never" / "snapshot.key"))
    keys_mod.clear_cache()
    data = seal(b'{"a":1}')
    assert not (tmp_path / "never").exists()  # no key file is made when the variable is set
    # another process with the same variable reads it
    code = (
        "import sys; from harnpy.security import unseal; "
        "sys.stdout.buffer.write(unseal(sys.stdin.buffer.read(), 'd'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=data, capture_output=True, check=True
    ).stdout
    assert out == b'{"a":1}'


def test_short_env_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNPY_SNAPSHOT_KEY", "short")
    keys_mod.clear_cache()
    with pytest.raises(KeyUnavailable) as ei:
        seal(b"{}")
    assert "HARNPY_SNAPSHOT_KEY is too short" in str(ei.value)


def test_key_file_is_created_private_on_first_use(key_file: Path) -> None:
    old = os.umask(0o022)
    try:
        key = snapshot_key()
    finally:
        os.umask(old)
    st = key_file.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert len(key_file.read_text().strip()) == 64
    assert key.source == f"the key file {key_file}"
    keys_mod.clear_cache()
    assert snapshot_key() == key  # read back: the same key


def test_key_file_readable_by_others_is_refused(key_file: Path) -> None:
    snapshot_key()
    keys_mod.clear_cache()
    os.chmod(key_file, 0o644)
    with pytest.raises(KeyUnavailable) as ei:
        snapshot_key()
    assert f"chmod 600 {key_file}" in str(ei.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown the key file")
def test_key_file_of_another_user_is_refused(key_file: Path) -> None:
    snapshot_key()
    keys_mod.clear_cache()
    os.chown(key_file, 65534, 65534)
    with pytest.raises(KeyUnavailable) as ei:
        snapshot_key()
    assert "belongs to another user" in str(ei.value)


def test_key_file_that_is_not_a_file_or_holds_no_key(key_file: Path) -> None:
    key_file.parent.mkdir(parents=True, mode=0o700)
    key_file.write_text("abc\n")
    os.chmod(key_file, 0o600)
    with pytest.raises(KeyUnavailable) as ei:
        snapshot_key()
    assert "does not hold a key" in str(ei.value)
    key_file.unlink()
    os.mkfifo(key_file, 0o600)
    keys_mod.clear_cache()
    with pytest.raises(KeyUnavailable) as ei:
        snapshot_key()  # a FIFO: refused at once, no blocking open
    assert "not a regular file" in str(ei.value)


def _make_key(path: str, q: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    os.environ["HARNPY_SNAPSHOT_KEY_FILE"] = path
    os.environ.pop("HARNPY_SNAPSHOT_KEY", None)
    from harnpy.security import snapshot_key as sk

    q.put(sk().key_id)


def test_concurrent_first_use_agrees_on_one_key(key_file: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_make_key, args=(str(key_file), q)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    ids = {q.get(timeout=5) for _ in procs}
    assert len(ids) == 1
    assert ids == {keys_mod.key_id_of(key_file.read_text().strip().encode())}
    assert [p.name for p in key_file.parent.iterdir()] == ["snapshot.key"]  # no temp left


def test_threads_share_one_key(key_file: Path) -> None:
    got: list[str] = []
    ts = [threading.Thread(target=lambda: got.append(snapshot_key().key_id)) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(got)) == 1


# ------------------------------------------------------------------ read_capped


def test_read_capped_reads_a_small_file(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    assert read_capped(str(p), 10) == b"x" * 10
    with pytest.raises(FileTooLarge) as ei:
        read_capped(str(p), 9)
    assert ei.value.size == 10 and ei.value.cap == 9


def test_read_capped_refuses_a_sparse_huge_file_without_reading(tmp_path: Path) -> None:
    p = tmp_path / "sparse"
    with open(p, "wb") as fh:
        fh.truncate(1 << 30)
    with pytest.raises(FileTooLarge) as ei:
        read_capped(str(p), 4 << 20)
    assert ei.value.size == 1 << 30
    assert "over the 4194304-byte limit" in str(ei.value)


def test_read_capped_refuses_fifo_without_blocking(tmp_path: Path) -> None:
    p = tmp_path / "fifo"
    os.mkfifo(p)
    with pytest.raises(NotRegularFile) as ei:
        read_capped(str(p), 100)  # would hang forever without O_NONBLOCK
    assert "a FIFO" in str(ei.value)


def test_read_capped_refuses_devices_and_directories(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile):
        read_capped("/dev/zero", 100)
    with pytest.raises(NotRegularFile):
        read_capped(str(tmp_path), 100)
    with pytest.raises(FileNotFoundError):
        read_capped(str(tmp_path / "missing"), 100)


def test_read_capped_stops_at_cap_plus_one_for_files_that_lie(tmp_path: Path) -> None:
    # /proc files report size 0 and can be longer: read at most cap + 1 bytes
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc")
    with pytest.raises(FileTooLarge):
        read_capped("/proc/self/status", 10)


# ------------------------------------------------------------------ private files


def test_private_dir_creates_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        d = private_dir(str(tmp_path / "a" / "b"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700


def test_private_dir_tightens_an_existing_dir_of_ours(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    private_dir(str(d))
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_private_dir_refuses_a_file_and_another_users_dir(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("")
    with pytest.raises(UnsafePath):
        private_dir(str(f))
    if os.geteuid() == 0:
        d = tmp_path / "theirs"
        d.mkdir()
        os.chown(d, 65534, 65534)
        with pytest.raises(UnsafePath) as ei:
            private_dir(str(d))
        assert "belongs to another user" in str(ei.value)


def test_write_private_is_0600_and_atomic(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    old = os.umask(0o000)
    try:
        write_private(str(p), b"one")
        write_private(str(p), b"two", durable=False)
    finally:
        os.umask(old)
    assert p.read_bytes() == b"two"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert sorted(x.name for x in tmp_path.iterdir()) == ["state.json"]


def test_write_private_leaves_the_old_file_on_error(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    write_private(str(p), b"old")
    with pytest.raises(TypeError):
        write_private(str(p), "not bytes")  # type: ignore[arg-type]
    assert p.read_bytes() == b"old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["state.json"]
