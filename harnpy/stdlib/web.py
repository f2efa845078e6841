"""HTTP-adjacent encoders: cookies, signed sessions, signed URLs and multipart bodies.

* ``cookie_parse(header)`` -> ``{cookies, pairs, duplicates, invalid}`` (first value wins);
  ``cookie_serialize(name, value, opts?)``, ``cookie_delete(name, opts?)``;
  ``cookie_sign(value, secret)`` -> ``value.<sig>`` and ``cookie_verify(signed, secret)`` ->
  ``{ok, value, error}``; ``session_sign(payload, secret)`` -> ``v1.<b64 json>.<sig>``,
  ``session_verify``, ``session_cookie(name, payload, secret, opts?)``,
  ``session_from_cookies(header, name, secret)``, ``cookie_round_trip(request, set_cookies)``.
  Signatures are HMAC-SHA256 in unpadded base64url.
* ``signed_url(url, claims, secret, expires_at, opts?)`` appends the claims, ``exp``,
  optional ``kid`` and an HMAC ``sig`` to the query; ``verify_signed_url(url, secrets, now,
  opts?)`` -> ``{valid, signature_valid, expired, reason, kid, claims, expires_at}``.
* ``multipart_form_data(fields, opts?)`` builds a ``multipart/form-data`` body;
  ``multipart_parse(body, content_type, limits?)`` parses one; ``multipart_field_text`` and
  ``multipart_field_bytes`` read a parsed field.

Invalid input throws ``cookie: ...``, ``signed_url: ...`` or ``multipart: ...``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from typing import Any

from harnpy._lazy import lazy_module
from harnpy.runtime.values import StructValue
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.jsonlib import dumps, loads
from harnpy.stdlib.registry import builtin

# ------------------------------------------------------------------ shared helpers

_email_utils = lazy_module("email.utils")
_urlparse = lazy_module("urllib.parse")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64url(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def _sign(secret: str, message: str) -> str:
    return _b64url(hmac.new(secret.encode(), message.encode(), hashlib.sha256).digest())


def _options(name: str, opts: Any) -> dict[str, Any]:
    if opts is None:
        return {}
    if type(opts) is StructValue:
        return dict(opts.fields)
    if type(opts) is not dict:
        raise fail(f"{name}: options must be a dict")
    return opts


def _opt(opts: dict[str, Any], *names: str) -> Any:
    for n in names:
        if n in opts:
            return opts[n]
    return None


# ------------------------------------------------------------------ cookies

_COOKIE_NAME = re.compile(r"[!#$%&'*+\-.0-9A-Z^_`a-z|~]+")


def _cookie_error(msg: str) -> Exception:
    return fail(f"cookie: {msg}")


def _header_list(value: Any, header: str) -> list[str]:
    if value is None:
        return []
    if type(value) is str:
        return [value]
    if type(value) is list:
        return [text(v) for v in value]
    if type(value) is dict:
        out: list[str] = []
        for key, v in value.items():
            if key.lower() == header:
                out.extend(_header_list(v, header))
        return out
    raise _cookie_error(f"{header} headers must be a string, list, dict or nil")


def parse_cookie_header(raw: str) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
    """``(name, value)`` pairs of a ``Cookie`` header plus invalid segments."""
    pairs: list[tuple[str, str]] = []
    invalid: list[dict[str, str]] = []
    for segment in raw.split(";"):
        seg = segment.strip(" \t")
        if not seg:
            continue
        if "=" not in seg:
            invalid.append({"segment": seg, "reason": "missing '='"})
            continue
        name, value = seg.split("=", 1)
        name, value = name.strip(" \t"), value.strip(" \t")
        if not _COOKIE_NAME.fullmatch(name):
            invalid.append({"segment": seg, "reason": "invalid name"})
            continue
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if any(ord(c) < 32 or c == ";" for c in value):
            invalid.append({"segment": seg, "reason": "invalid value"})
            continue
        pairs.append((name, value))
    return pairs, invalid


def _cookie_parse(header: Any) -> dict[str, Any]:
    cookies: dict[str, Any] = {}
    all_values: dict[str, list[str]] = {}
    pairs: list[Any] = []
    invalid: list[Any] = []
    for raw in _header_list(header, "cookie"):
        found, bad = parse_cookie_header(raw)
        invalid.extend(bad)
        for name, value in found:
            cookies.setdefault(name, value)
            all_values.setdefault(name, []).append(value)
            pairs.append({"name": name, "value": value})
    duplicates = {k: v for k, v in all_values.items() if len(v) > 1}
    return {"cookies": cookies, "pairs": pairs, "duplicates": duplicates, "invalid": invalid}


_SESSION_DEFAULTS = {"path": "/", "http_only": True, "secure": True, "same_site": "Lax"}
_DELETE_DEFAULTS = {
    **_SESSION_DEFAULTS,
    "max_age": 0,
    "expires": "Thu, 01 Jan 1970 00:00:00 GMT",
}


def _attr(label: str, value: str) -> str:
    if not value or any(ord(c) < 32 or c == ";" for c in value):
        raise _cookie_error(f"{label} contains an invalid cookie attribute value")
    return value


def serialize_cookie(
    name: str, value: str, opts: dict[str, Any], defaults: dict[str, Any] | None = None
) -> str:
    """A ``Set-Cookie`` value; ``defaults`` fill options the caller left out."""
    d = defaults or {}
    if not _COOKIE_NAME.fullmatch(name):
        raise _cookie_error("cookie name is empty or contains invalid characters")
    if any(ord(c) < 33 or c in ';,\\"' or ord(c) == 127 for c in value):
        raise _cookie_error(
            "cookie value contains spaces, quotes, separators, or control characters; "
            "encode it first"
        )
    out = f"{name}={value}"
    path = _opt(opts, "path", "Path")
    path = d.get("path") if path is None else text(path)
    if path is not None:
        out += "; Path=" + _attr("Path", path)
    domain = _opt(opts, "domain", "Domain")
    if domain is not None:
        out += "; Domain=" + _attr("Domain", text(domain))
    max_age = _opt(opts, "max_age", "Max-Age", "maxAge")
    if max_age is not None and type(max_age) is not int:
        raise _cookie_error("option max_age must be an int")
    max_age = d.get("max_age") if max_age is None else max_age
    if max_age is not None:
        out += f"; Max-Age={max_age}"
    expires = _opt(opts, "expires", "Expires")
    expires = d.get("expires") if expires is None else text(expires)
    if expires is not None:
        out += "; Expires=" + _attr("Expires", expires)
    http_only = _opt(opts, "http_only", "HttpOnly", "httponly")
    secure = _opt(opts, "secure", "Secure")
    http_only = d.get("http_only", False) if http_only is None else bool(http_only)
    secure = d.get("secure", False) if secure is None else bool(secure)
    same_site = _opt(opts, "same_site", "SameSite", "sameSite")
    same_site = d.get("same_site") if same_site is None else text(same_site)
    if same_site is not None:
        canon = {"lax": "Lax", "strict": "Strict", "none": "None"}.get(same_site.lower())
        if canon is None:
            raise _cookie_error("same_site must be one of Lax, Strict, or None")
        if canon == "None" and not secure:
            raise _cookie_error("SameSite=None requires Secure")
        same_site = canon
    if http_only:
        out += "; HttpOnly"
    if secure:
        out += "; Secure"
    if same_site is not None:
        out += f"; SameSite={same_site}"
    return out


def _session_token(payload: Any, secret: str) -> str:
    encoded = _b64url(dumps(payload).encode("utf-8"))
    return f"v1.{encoded}.{_sign(secret, encoded)}"


def _session_verify(token: str, secret: str) -> dict[str, Any]:
    def result(ok: bool, payload: Any, error: str | None) -> dict[str, Any]:
        return {"ok": ok, "payload": payload, "error": error}

    parts = token.split(".")
    if len(parts) != 3 or parts[0] != "v1":
        return result(False, None, "malformed")
    if not hmac.compare_digest(parts[2].encode(), _sign(secret, parts[1]).encode()):
        return result(False, None, "invalid_signature")
    try:
        payload = loads(_unb64url(parts[1]).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return result(False, None, "malformed_payload")
    return result(True, payload, None)


def _set_cookie_entry(header: str) -> tuple[str, str, bool] | None:
    segments = header.split(";")
    first = segments[0].strip(" \t")
    if "=" not in first:
        return None
    name, value = (p.strip(" \t") for p in first.split("=", 1))
    if not _COOKIE_NAME.fullmatch(name):
        return None
    delete = False
    for attr in segments[1:]:
        key, _, val = attr.strip(" \t").partition("=")
        if key.lower() == "max-age":
            try:
                delete = delete or int(val.strip()) <= 0
            except ValueError:
                pass
        elif key.lower() == "expires":
            try:
                delete = delete or _email_utils.parsedate_to_datetime(val.strip()).timestamp() <= 0
            except (TypeError, ValueError):
                pass
    return name, value, delete


@builtin()
def cookie_parse(thread: Any, header: Any = None) -> dict[str, Any]:
    """``cookie_parse(header)``: parse ``Cookie`` header(s) (string, list or headers
    dict) into ``{cookies (first value wins), pairs, duplicates, invalid}``."""
    return _cookie_parse(header)


@builtin()
def cookie_serialize(thread: Any, name: Any = None, value: Any = None, opts: Any = None) -> str:
    """``cookie_serialize(name, value, opts?)``: ``Set-Cookie`` text; options ``path``,
    ``domain``, ``max_age``, ``expires``, ``http_only``, ``secure``, ``same_site``."""
    return serialize_cookie(text(name), text(value), _options("cookie_serialize", opts))


@builtin()
def cookie_delete(thread: Any, name: Any = None, opts: Any = None) -> str:
    """``cookie_delete(name, opts?)``: an expiring ``Set-Cookie`` (``Max-Age=0``, epoch
    ``Expires``, ``Path=/``, ``HttpOnly``, ``Secure``, ``SameSite=Lax`` by default)."""
    return serialize_cookie(text(name), "", _options("cookie_delete", opts), _DELETE_DEFAULTS)


@builtin()
def cookie_sign(thread: Any, value: Any = None, secret: Any = None) -> str:
    """``cookie_sign(value, secret)``: ``value.<hmac>``."""
    v = text(value)
    if ";" in v or any(ord(c) < 32 for c in v):
        raise _cookie_error("cookie_sign value must not contain separators or control characters")
    return f"{v}.{_sign(text(secret), v)}"


@builtin()
def cookie_verify(thread: Any, signed: Any = None, secret: Any = None) -> dict[str, Any]:
    """``cookie_verify(signed, secret)``: ``{ok, value, error}`` (``malformed`` or
    ``invalid_signature`` on failure)."""
    s = text(signed)
    if "." not in s:
        return {"ok": False, "value": None, "error": "malformed"}
    value, sig = s.rsplit(".", 1)
    if hmac.compare_digest(sig.encode(), _sign(text(secret), value).encode()):
        return {"ok": True, "value": value, "error": None}
    return {"ok": False, "value": None, "error": "invalid_signature"}


@builtin()
def session_sign(thread: Any, payload: Any = None, secret: Any = None) -> str:
    """``session_sign(payload, secret)``: ``v1.<base64url JSON>.<hmac>``."""
    return _session_token(payload, text(secret))


@builtin()
def session_verify(thread: Any, token: Any = None, secret: Any = None) -> dict[str, Any]:
    """``session_verify(token, secret)``: ``{ok, payload, error}``."""
    return _session_verify(text(token), text(secret))


@builtin()
def session_cookie(
    thread: Any, name: Any = None, payload: Any = None, secret: Any = None, opts: Any = None
) -> str:
    """``session_cookie(name, payload, secret, opts?)``: ``Set-Cookie`` carrying a
    signed session (``Path=/; HttpOnly; Secure; SameSite=Lax`` by default)."""
    token = _session_token(payload, text(secret))
    return serialize_cookie(text(name), token, _options("session_cookie", opts), _SESSION_DEFAULTS)


@builtin()
def session_from_cookies(
    thread: Any, header: Any = None, name: Any = None, secret: Any = None
) -> dict[str, Any]:
    """``session_from_cookies(header, name, secret)``: verify the named session cookie
    (error ``missing_cookie`` when absent)."""
    token = _cookie_parse(header)["cookies"].get(text(name))
    if token is None:
        return {"ok": False, "payload": None, "error": "missing_cookie"}
    return _session_verify(token, text(secret))


@builtin()
def cookie_round_trip(thread: Any, request: Any = None, set_cookies: Any = None) -> dict[str, Any]:
    """``cookie_round_trip(request_cookies, set_cookie_headers)``: the cookies a client
    would send next (``{cookies, cookie_header}``); with one argument it is the
    ``Set-Cookie`` list."""
    if set_cookies is None:
        request, set_cookies = None, request
    jar: dict[str, str] = dict(_cookie_parse(request)["cookies"])
    for header in _header_list(set_cookies, "set-cookie"):
        entry = _set_cookie_entry(header)
        if entry is None:
            continue
        cname, cvalue, delete = entry
        if delete:
            jar.pop(cname, None)
        else:
            jar[cname] = cvalue
    names = sorted(jar)
    return {
        "cookies": {n: jar[n] for n in names},
        "cookie_header": "; ".join(f"{n}={jar[n]}" for n in names),
    }


# ------------------------------------------------------------------ signed URLs

_RESERVED = ("exp", "kid", "sig")


def _pct(s: str) -> str:
    return _urlparse.quote(s, safe="-_.~")


def _canonical(path: str, params: list[tuple[str, str]]) -> str:
    query = "&".join(f"{_pct(k)}={_pct(v)}" for k, v in sorted(params) if k != "sig")
    return f"{path}?{query}"


def _claim_text(v: Any) -> str:
    if type(v) is bool:
        return "true" if v else "false"
    return text(v)


@builtin()
def signed_url(
    thread: Any,
    url: Any = None,
    claims: Any = None,
    secret: Any = None,
    expires_at: Any = None,
    opts: Any = None,
) -> str:
    """``signed_url(url, claims, secret, expires_at, opts?)``: ``url`` with the claims,
    ``exp`` (Unix seconds), optional ``kid`` (``opts.kid``) and an HMAC-SHA256 ``sig``
    over the path and sorted query, all percent-encoded (spaces as ``%20``)."""
    if type(expires_at) is not int:
        raise fail("signed_url: expires_at must be Unix seconds (int)")
    parts = _urlparse.urlsplit(text(url))
    params = _urlparse.parse_qsl(parts.query, keep_blank_values=True)
    if claims is not None:
        if type(claims) is not dict:
            raise fail("signed_url: claims must be a dict")
        for k in sorted(claims):
            if k in _RESERVED:
                raise fail(f"signed_url: claim name '{k}' is reserved")
            params.append((k, _claim_text(claims[k])))
    params.append(("exp", str(expires_at)))
    kid = _opt(_options("signed_url", opts), "kid")
    if kid is not None:
        params.append(("kid", text(kid)))
    path = _urlparse.quote(parts.path, safe="/%:@!$&'()*+,;=-._~")
    sig = _sign(text(secret), _canonical(path, params))
    query = "&".join(f"{_pct(k)}={_pct(v)}" for k, v in params) + f"&sig={sig}"
    return _urlparse.urlunsplit((parts.scheme, parts.netloc, path, query, parts.fragment))


@builtin()
def verify_signed_url(
    thread: Any, url: Any = None, secrets: Any = None, now: Any = None, opts: Any = None
) -> dict[str, Any]:
    """``verify_signed_url(url, secret_or_secrets_by_kid, now?, opts?)``: ``{valid,
    signature_valid, expired, reason (ok, bad_signature, expired, missing_signature,
    missing_expiry, unknown_kid), kid, claims, expires_at}``; ``opts.skew_seconds``
    tolerates clock skew."""
    parts = _urlparse.urlsplit(text(url))
    params = _urlparse.parse_qsl(parts.query, keep_blank_values=True)
    found = dict(params)
    kid = found.get("kid")
    claims = {k: v for k, v in params if k not in _RESERVED}
    exp_text = found.get("exp")
    expires = int(exp_text) if exp_text and exp_text.lstrip("-").isdigit() else None
    result: dict[str, Any] = {
        "valid": False,
        "signature_valid": False,
        "expired": False,
        "reason": "ok",
        "kid": kid,
        "claims": claims,
        "expires_at": expires,
    }
    if type(secrets) is dict:
        secret = secrets.get(kid) if kid is not None else None
        if secret is None and kid is None and len(secrets) == 1:
            secret = next(iter(secrets.values()))
    else:
        secret = secrets
    if "sig" not in found:
        result["reason"] = "missing_signature"
        return result
    if secret is None:
        result["reason"] = "unknown_kid"
        return result
    expected = _sign(text(secret), _canonical(parts.path, params))
    result["signature_valid"] = hmac.compare_digest(found["sig"].encode(), expected.encode())
    if expires is None:
        result["reason"] = "missing_expiry" if result["signature_valid"] else "bad_signature"
        return result
    current = now if type(now) in (int, float) else thread.runtime.clock.now_s()
    skew = _opt(_options("verify_signed_url", opts), "skew_seconds") or 0
    result["expired"] = current > expires + skew
    if not result["signature_valid"]:
        result["reason"] = "bad_signature"
    elif result["expired"]:
        result["reason"] = "expired"
    else:
        result["valid"] = True
    return result


# ------------------------------------------------------------------ multipart

_DEFAULT_LIMITS = {
    "max_total_bytes": 10 * 1024 * 1024,
    "max_field_bytes": 5 * 1024 * 1024,
    "max_fields": 256,
}


def _as_bytes(v: Any) -> bytes:
    return v if type(v) is bytes else text(v).encode("utf-8")


def _quoted(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "%0D").replace("\n", "%0A")


def _boundary_of(content_type: str) -> str | None:
    m = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', content_type, re.I)
    if not m or not content_type.lower().lstrip().startswith("multipart/"):
        return None
    return m.group(1) or m.group(2)


def _header_params(value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in re.finditer(r';\s*([\w*-]+)=(?:"((?:[^"\\]|\\.)*)"|([^;]*))', value):
        raw = m.group(2) if m.group(2) is not None else (m.group(3) or "").strip()
        out[m.group(1).lower()] = re.sub(r"\\(.)", r"\1", raw)
    return out


def parse_multipart(body: bytes, content_type: str, limits: dict[str, Any]) -> dict[str, Any]:
    """Parse a multipart body into ``{fields, field_count, total_bytes}``; throws
    ``multipart: ...`` on malformed input or exceeded limits."""
    lim = dict(_DEFAULT_LIMITS)
    for k in lim:
        if type(limits.get(k)) is int:
            lim[k] = limits[k]
    if len(body) > lim["max_total_bytes"]:
        raise fail(f"multipart: body exceeds max_total_bytes ({lim['max_total_bytes']})")
    boundary = _boundary_of(content_type)
    if boundary is None:
        raise fail("multipart: content type has no multipart boundary")
    delim = b"--" + boundary.encode("latin-1")
    if not body.startswith(delim) and b"\r\n" + delim not in body:
        raise fail("multipart: boundary not found in body")
    chunks = (b"\r\n" + body).split(b"\r\n" + delim)
    fields: list[dict[str, Any]] = []
    closed = False
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            closed = True
            break
        if not chunk.startswith(b"\r\n"):
            raise fail("multipart: malformed part delimiter")
        head, sep, content = chunk[2:].partition(b"\r\n\r\n")
        if not sep:
            raise fail("multipart: part is missing its header block")
        headers: dict[str, str] = {}
        for line in head.decode("utf-8", errors="replace").split("\r\n"):
            if not line:
                continue
            if ":" not in line:
                raise fail(f"multipart: malformed part header '{line}'")
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        disposition = headers.get("content-disposition", "")
        if not disposition.lower().startswith("form-data"):
            raise fail("multipart: part without Content-Disposition: form-data")
        params = _header_params(disposition)
        if "name" not in params:
            raise fail("multipart: part without a name")
        if len(content) > lim["max_field_bytes"]:
            raise fail(
                f"multipart: field '{params['name']}' exceeds max_field_bytes "
                f"({lim['max_field_bytes']})"
            )
        if len(fields) >= lim["max_fields"]:
            raise fail(f"multipart: more than max_fields ({lim['max_fields']}) fields")
        try:
            as_text: Any = content.decode("utf-8")
        except UnicodeDecodeError:
            as_text = None
        fields.append(
            {
                "name": params["name"],
                "filename": params.get("filename"),
                "content_type": headers.get("content-type"),
                "headers": headers,
                "bytes": content,
                "text": as_text,
                "size": len(content),
            }
        )
    if not closed:
        raise fail("multipart: missing closing boundary")
    return {"fields": fields, "field_count": len(fields), "total_bytes": len(body)}


@builtin()
def multipart_form_data(thread: Any, fields: Any = None, opts: Any = None) -> dict[str, Any]:
    """``multipart_form_data(fields, opts?)``: build a body from ``[{name, content,
    filename?, content_type?, headers?}]``; returns ``{body (bytes), content_type,
    boundary}`` (``opts.boundary`` fixes the boundary)."""
    if type(fields) is not list:
        raise fail("multipart: fields must be a list of dicts")
    boundary = _opt(_options("multipart_form_data", opts), "boundary")
    boundary = text(boundary) if boundary is not None else "harn-" + os.urandom(12).hex()
    out = bytearray()
    for f in fields:
        if type(f) is not dict or "name" not in f:
            raise fail("multipart: each field needs a name")
        out += f"--{boundary}\r\n".encode()
        disp = f'Content-Disposition: form-data; name="{_quoted(text(f["name"]))}"'
        if f.get("filename") is not None:
            disp += f'; filename="{_quoted(text(f["filename"]))}"'
        out += (disp + "\r\n").encode()
        if f.get("content_type") is not None:
            out += f"Content-Type: {text(f['content_type'])}\r\n".encode()
        extra = f.get("headers")
        if type(extra) is dict:
            for k, v in extra.items():
                out += f"{k}: {text(v)}\r\n".encode()
        out += b"\r\n" + _as_bytes(f.get("content", "")) + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return {
        "body": bytes(out),
        "content_type": f"multipart/form-data; boundary={boundary}",
        "boundary": boundary,
    }


@builtin()
def multipart_parse(
    thread: Any, body: Any = None, content_type: Any = None, limits: Any = None
) -> dict[str, Any]:
    """``multipart_parse(body, content_type, limits?)``: ``{fields: [{name, filename,
    content_type, headers (lower-case names), bytes, text (nil unless UTF-8), size}],
    field_count, total_bytes}``; limits ``max_total_bytes``, ``max_field_bytes``,
    ``max_fields``."""
    return parse_multipart(_as_bytes(body), text(content_type), _options("multipart_parse", limits))


@builtin()
def multipart_field_text(thread: Any, field: Any = None) -> str:
    """``multipart_field_text(field)``: the field's content as text; throws when it is
    not valid UTF-8."""
    if type(field) is not dict:
        raise fail("multipart: expected a parsed field")
    if type(field.get("text")) is str:
        return str(field["text"])
    raise fail(f"multipart: field '{text(field.get('name'))}' is not valid UTF-8 text")


@builtin()
def multipart_field_bytes(thread: Any, field: Any = None) -> bytes:
    """``multipart_field_bytes(field)``: the field's raw content."""
    if type(field) is not dict:
        raise fail("multipart: expected a parsed field")
    return _as_bytes(field.get("bytes", b""))
