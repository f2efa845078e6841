"""Regex (spec 4.11) and encoding/hashing/UUID/bytes builtins (spec 4.12)."""

from __future__ import annotations

import re

import pytest

from harnpy.runtime.errors import HarnThrow


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("[0-9]+", "abc 123 def 456"), ["123", "456"]),
        (("[0-9]+", "hello"), None),
        (("hello", "HeLLo", "i"), ["HeLLo"]),
        (("^b", "a\nB", "im"), ["B"]),
        (("a.+c", "a\nb\nc", "s"), ["a\nb\nc"]),
        (("a b c", "abc", "x"), ["abc"]),
        (("hello", "world", "i"), None),
        (("b$", "ab\n"), None),  # Rust `$` does not match before a final newline
        (("(?<d>\\d)", "x7"), ["7"]),
        (("[[:digit:]]+", "ab12"), ["12"]),
    ],
)
def test_regex_match_lists_every_match_or_nil(thread, args, expected):
    assert thread.call("regex_match", *args) == expected


@pytest.mark.parametrize(
    ("pattern", "repl", "text", "expected"),
    [
        ("[0-9]+", "NUM", "abc 123 def 456", "abc NUM def NUM"),
        ("(\\w+)-(\\w+)", "$2-$1", "hello-world", "world-hello"),
        ("(\\w+)\\s(\\w+)", "$2 $1", "hello world", "world hello"),
        ("(?P<word>\\w+)", "<$word>", "one two three", "<one> <two> <three>"),
        ("(?P<word>\\w+)", "${word}!", "hi", "hi!"),
        ("(a)", "$$1", "a", "$1"),
        ("(a)", "[$9]", "a", "[]"),
    ],
)
def test_regex_replace_expands_rust_references(thread, pattern, repl, text, expected):
    assert thread.call("regex_replace", pattern, repl, text) == expected
    assert thread.call("regex_replace_all", pattern, repl, text) == expected


def test_regex_captures_lists_groups_and_named_groups(thread):
    caps = thread.call("regex_captures", "(\\w+)@(\\w+)", "user@host admin@server")
    assert [c["match"] for c in caps] == ["user@host", "admin@server"]
    assert caps[1]["groups"] == ["admin", "server"]
    named = thread.call("regex_captures", "(?P<name>\\w+):(?P<value>\\d+)", "foo:42 bar:99")
    assert [(c["name"], c["value"]) for c in named] == [("foo", "42"), ("bar", "99")]
    assert thread.call("regex_captures", "(\\d+)", "no digits here") == []
    opt = thread.call("regex_captures", "(\\w+)(-(\\w+))?", "hello")
    assert opt[0]["groups"] == ["hello", None, None]


def test_regex_split_takes_text_first(thread):
    assert thread.call("regex_split", "a, b, c", ",\\s*") == ["a", "b", "c"]
    assert thread.call("regex_split", "a1b22c", "(\\d+)") == ["a", "b", "c"]


def test_invalid_regex_throws(thread):
    with pytest.raises(HarnThrow, match="invalid regex"):
        thread.call("regex_match", "(", "x")


@pytest.mark.parametrize(
    ("name", "arg", "expected"),
    [
        ("base64_encode", "hello world", "aGVsbG8gd29ybGQ="),
        ("base64_decode", "aGVsbG8gd29ybGQ=", "hello world"),
        ("base64url_encode", "\xff\xfe?", "w7_Dvj8"),
        ("base64url_decode", "w7_Dvj8", "\xff\xfe?"),
        ("base32_encode", "hi", "NBUQ===="),
        ("base32_decode", "NBUQ", "hi"),
        ("hex_encode", "hi", "6869"),
        ("hex_decode", "6869", "hi"),
        ("url_encode", "hello world", "hello%20world"),
        ("url_encode", "a=1&b=2", "a%3D1%26b%3D2"),
        ("url_encode", "abc-123_test.file~ok", "abc-123_test.file~ok"),
        ("url_decode", "a%3D1%26b%3D2", "a=1&b=2"),
        ("url_decode", "hello+world", "hello world"),
        ("sha256", "hello", "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
        ("md5", "hello", "5d41402abc4b2a76b9719d911017c592"),
    ],
)
def test_encoders_and_digests(thread, name, arg, expected):
    assert thread.call(name, arg) == expected


@pytest.mark.parametrize("name", ["base64_decode", "hex_decode", "bytes_from_hex"])
def test_decoders_reject_malformed_input(thread, name):
    with pytest.raises(HarnThrow, match=name):
        thread.call(name, "!!zz")


def test_hmac_and_constant_time_eq(thread):
    mac = thread.call("hmac_sha256", "key", "The quick brown fox jumps over the lazy dog")
    assert mac == "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    assert thread.call("constant_time_eq", "abc", "abc") is True
    assert thread.call("constant_time_eq", "abc", "abd") is False


UUID_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)


def test_uuid_versions(thread):
    assert UUID_RE.match(thread.call("uuid")).group(1) == "4"
    v7 = thread.call("uuid_v7")
    assert UUID_RE.match(v7).group(1) == "7"
    assert thread.call("uuid_parse", v7) == v7
    a = thread.call("uuid_v5", "dns", "harnlang.com")
    assert a == thread.call("uuid_v5", "dns", "harnlang.com")
    assert UUID_RE.match(a).group(1) == "5"
    assert thread.call("uuid_nil") == "00000000-0000-0000-0000-000000000000"
    assert thread.call("uuid_parse", "not-a-uuid") is None
    assert thread.call("uuid_parse", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11") == (
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    )


def test_uuid_v7_is_time_ordered_by_the_runtime_clock(thread):
    thread.runtime.clock.set(1_700_000_000_000)
    first = thread.call("uuid_v7")
    thread.runtime.clock.advance(5)
    assert thread.call("uuid_v7")[:13] > first[:13]
    assert int(first[:8] + first[9:13], 16) == 1_700_000_000_000


def test_bytes_helpers(thread):
    b = thread.call("bytes_from_string", "hello world")
    assert type(b) is bytes and thread.call("bytes_to_string", b) == "hello world"
    assert thread.call("bytes_to_hex", thread.call("bytes_from_hex", "0001ff")) == "0001ff"
    assert thread.call("bytes_to_base64", thread.call("bytes_from_string", "hi")) == "aGk="
    assert thread.call("bytes_to_string", thread.call("bytes_from_base64", "aGk=")) == "hi"
    assert thread.call("bytes_len", thread.call("bytes_from_string", "ab")) == 2
