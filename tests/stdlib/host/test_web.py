"""Cookies, signed sessions, signed URLs and multipart bodies."""

from __future__ import annotations

import pytest

from harnpy.runtime.errors import HarnThrow


def test_cookie_parse_reports_duplicates_and_invalid_segments(thread):
    parsed = thread.call("cookie_parse", "sid=abc; theme=light; sid=old; badsegment")
    assert parsed["cookies"] == {"sid": "abc", "theme": "light"}
    assert parsed["duplicates"] == {"sid": ["abc", "old"]}
    assert parsed["invalid"] == [{"segment": "badsegment", "reason": "missing '='"}]
    assert [p["name"] for p in parsed["pairs"]] == ["sid", "theme", "sid"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            (
                "theme",
                "dark",
                {
                    "path": "/",
                    "max_age": 60,
                    "http_only": True,
                    "secure": True,
                    "same_site": "Strict",
                },
            ),
            "theme=dark; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Strict",
        ),
        (("a", "b"), "a=b"),
        (
            ("a", "b", {"domain": "example.com", "same_site": "none", "secure": True}),
            "a=b; Domain=example.com; Secure; SameSite=None",
        ),
    ],
)
def test_cookie_serialize(thread, args, expected):
    assert thread.call("cookie_serialize", *args) == expected


@pytest.mark.parametrize(
    "args",
    [
        ("bad name", "value"),
        ("sid", "value", {"same_site": "None"}),
        ("sid", "has space"),
        ("sid", "v", {"same_site": "Loose"}),
    ],
)
def test_cookie_serialize_rejects_invalid_input(thread, args):
    with pytest.raises(HarnThrow, match="^Thrown: cookie: "):
        thread.call("cookie_serialize", *args)


def test_cookie_delete_defaults(thread):
    deleted = thread.call("cookie_delete", "sid", {"secure": False})
    assert deleted == (
        "sid=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax"
    )


def test_signed_cookies_and_sessions(thread):
    signed = thread.call("cookie_sign", "plain-value", "secret")
    assert thread.call("cookie_verify", signed, "secret") == {
        "ok": True,
        "value": "plain-value",
        "error": None,
    }
    forged = thread.call("cookie_verify", signed + "x", "secret")
    assert (forged["ok"], forged["error"]) == (False, "invalid_signature")
    token = thread.call("session_sign", {"user": "alice", "roles": ["operator"]}, "secret")
    assert token.startswith("v1.")
    session = thread.call("session_verify", token, "secret")
    assert session["ok"] and session["payload"] == {"user": "alice", "roles": ["operator"]}
    assert thread.call("session_verify", token + "x", "secret")["error"] == "invalid_signature"
    assert thread.call("session_verify", "nope", "secret")["error"] == "malformed"


def test_session_cookie_round_trip(thread):
    set_cookie = thread.call("session_cookie", "harn_session", {"user": "alice"}, "secret")
    assert set_cookie.startswith("harn_session=v1.")
    assert set_cookie.endswith("; Path=/; HttpOnly; Secure; SameSite=Lax")
    deleted = thread.call("cookie_delete", "sid", {"secure": False})
    jar = thread.call("cookie_round_trip", "sid=old; theme=light", [set_cookie, deleted])
    assert jar["cookies"]["theme"] == "light" and "sid" not in jar["cookies"]
    session = thread.call("session_from_cookies", jar["cookie_header"], "harn_session", "secret")
    assert session["ok"] and session["payload"] == {"user": "alice"}
    missing = thread.call("session_from_cookies", "a=b", "harn_session", "secret")
    assert missing["error"] == "missing_cookie"


def test_signed_url_sign_and_verify(thread):
    link = thread.call(
        "signed_url",
        "https://example.test/receipts/r_123?b=two+words",
        {"artifact": "transcript/json", "receipt": "r_123"},
        "secret",
        1700000600,
        {"kid": "v2"},
    )
    for part in ("artifact=transcript%2Fjson", "b=two%20words", "kid=v2", "sig="):
        assert part in link
    keys = {"v1": "old-secret", "v2": "secret"}
    ok = thread.call("verify_signed_url", link, keys, 1700000590)
    assert (ok["valid"], ok["signature_valid"], ok["expired"], ok["reason"], ok["kid"]) == (
        True,
        True,
        False,
        "ok",
        "v2",
    )
    assert ok["claims"]["artifact"] == "transcript/json" and ok["claims"]["receipt"] == "r_123"
    bad = thread.call(
        "verify_signed_url", link.replace("receipt=r_123", "receipt=r_999"), keys, 1700000590
    )
    assert (bad["valid"], bad["signature_valid"], bad["reason"]) == (False, False, "bad_signature")
    late = thread.call(
        "verify_signed_url", link, {"v2": "secret"}, 1700000631, {"skew_seconds": 30}
    )
    assert (late["valid"], late["signature_valid"], late["expired"], late["reason"]) == (
        False,
        True,
        True,
        "expired",
    )
    assert thread.call(
        "verify_signed_url", link, {"v2": "secret"}, 1700000630, {"skew_seconds": 30}
    )["valid"]
    path_link = thread.call(
        "signed_url", "/artifacts/run 1", {"download": "true"}, "secret", 1700000600
    )
    assert path_link.startswith("/artifacts/run%201?") and "download=true" in path_link
    assert thread.call("verify_signed_url", path_link, "secret", 1700000000)["valid"]


def test_multipart_round_trip(thread):
    fixture = thread.call(
        "multipart_form_data",
        [
            {"name": "title", "content": "Quarterly report"},
            {
                "name": "upload",
                "filename": "report.bin",
                "content_type": "application/octet-stream",
                "content": bytes.fromhex("000102ff"),
                "headers": {"X-Test-Header": "fixture"},
            },
        ],
    )
    assert fixture["content_type"].startswith("multipart/form-data; boundary=")
    form = thread.call(
        "multipart_parse",
        fixture["body"],
        fixture["content_type"],
        {"max_total_bytes": 1048576, "max_field_bytes": 262144, "max_fields": 8},
    )
    assert form["field_count"] == 2 and form["total_bytes"] == len(fixture["body"])
    title, upload = form["fields"]
    assert thread.call("multipart_field_text", title) == "Quarterly report"
    assert (upload["name"], upload["filename"], upload["content_type"]) == (
        "upload",
        "report.bin",
        "application/octet-stream",
    )
    assert upload["headers"]["x-test-header"] == "fixture" and upload["text"] is None
    assert thread.call("multipart_field_bytes", upload).hex() == "000102ff"
    with pytest.raises(HarnThrow, match="not valid UTF-8"):
        thread.call("multipart_field_text", upload)


@pytest.mark.parametrize(
    ("content_type", "limits", "message"),
    [
        ("multipart/form-data; boundary=wrong", None, "boundary not found"),
        (None, {"max_fields": 1}, "max_fields"),
        (None, {"max_total_bytes": 8}, "max_total_bytes"),
        (None, {"max_field_bytes": 2}, "max_field_bytes"),
        ("text/plain", None, "no multipart boundary"),
    ],
)
def test_multipart_parse_limits_and_errors(thread, content_type, limits, message):
    fixture = thread.call(
        "multipart_form_data", [{"name": "a", "content": "xyz"}, {"name": "b", "content": "w"}]
    )
    with pytest.raises(HarnThrow, match=message):
        thread.call(
            "multipart_parse", fixture["body"], content_type or fixture["content_type"], limits
        )
