"""API keys of ``harnpy serve``: the TOML file, HARNPY_API_KEYS, Bearer headers."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from harnpy.serve.auth import AuthError, KeyRing


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def test_key_file_and_env_keys_authenticate_their_users(tmp_path: Path) -> None:
    f = tmp_path / "keys.toml"
    f.write_text(
        f'[[key]]\nuser = "alice"\nsha256 = "{_sha("alice-secret-1")}"\n\n'
        f'[[key]]\nuser = "jobs"\nsha256 = "{_sha("jobs-secret-22").upper()}"\n'
        "complete_waitpoints = true\n"
    )
    ring = KeyRing.load(str(f), "bob:bob-secret-333")
    alice = ring.authenticate("Bearer alice-secret-1")
    assert alice is not None and alice.user == "alice" and not alice.complete_waitpoints
    jobs = ring.authenticate("bearer   jobs-secret-22")
    assert jobs is not None and jobs.user == "jobs" and jobs.complete_waitpoints
    bob = ring.authenticate("Bearer bob-secret-333")
    assert bob is not None and bob.user == "bob"
    for header in (None, "", "Bearer", "Bearer alice-secret-2", "Basic alice-secret-1",
                   "alice-secret-1", _sha("alice-secret-1")):  # fmt: skip
        assert ring.authenticate(header) is None, header
    assert ring.secrets() == ("bob-secret-333",)  # the file's keys are never known in clear


def test_no_key_refuses_unless_insecure() -> None:
    with pytest.raises(AuthError, match="no API keys configured"):
        KeyRing.load(None, None)
    ring = KeyRing.load(None, None, insecure=True)
    anon = ring.authenticate(None)
    assert anon is not None and anon.user == "anonymous"
    # keys configured: --insecure-no-auth does not open the door
    ring = KeyRing.load(None, "alice:alice-secret-1", insecure=True)
    assert ring.authenticate(None) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not toml = = 1", "not valid TOML"),
        ('[other]\nx = 1\n', "no [[key]] tables"),
        ('[[key]]\nuser = "a"\n', "sha256 must be the 64 hex digits"),
        ('[[key]]\nuser = "a b"\nsha256 = "' + "0" * 64 + '"\n', "user must be"),
        ('[[key]]\nuser = "a"\nsha256 = "' + "0" * 64 + '"\nkey = "x"\n', "unknown field 'key'"),
        ('[[key]]\nuser = "a"\nsha256 = "' + "0" * 64 + '"\ncomplete_waitpoints = 1\n',
         "complete_waitpoints must be true or false"),
    ],
)  # fmt: skip
def test_bad_key_files_are_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "keys.toml"
    f.write_text(text)
    with pytest.raises(AuthError, match=re.escape(message)):
        KeyRing.load(str(f))
    with pytest.raises(AuthError, match="cannot read the API key file"):
        KeyRing.load(str(tmp_path / "missing.toml"))


@pytest.mark.parametrize(
    "value", ["alice", "alice:", ":key-1234567", "al ice:key-1234567", "a:short"]
)
def test_bad_env_keys_are_refused(value: str) -> None:
    with pytest.raises(AuthError, match="HARNPY_API_KEYS"):
        KeyRing.load(None, value)
