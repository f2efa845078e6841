"""YAML and TOML builtins."""

from __future__ import annotations

import pytest

from harnpy.runtime.errors import HarnThrow


def test_yaml_parse_and_stringify(thread):
    doc = thread.call(
        "yaml_parse", "name: app\nports: [80, 443]\nratio: 0.5\nwhen: 2024-01-15\nnone: null\n"
    )
    assert doc == {
        "name": "app",
        "ports": [80, 443],
        "ratio": 0.5,
        "when": "2024-01-15",
        "none": None,
    }
    text = thread.call("yaml_stringify", {"b": [1, 2], "a": "é"})
    assert text == "a: é\nb:\n- 1\n- 2\n"
    assert thread.call("yaml_parse", text) == {"a": "é", "b": [1, 2]}


def test_toml_parse_and_stringify(thread):
    doc = thread.call("toml_parse", 'title = "x"\n[server]\nport = 8080\nhosts = ["a", "b"]\n')
    assert doc == {"title": "x", "server": {"port": 8080, "hosts": ["a", "b"]}}
    text = thread.call("toml_stringify", {"title": "x", "skip": None, "server": {"port": 8080}})
    assert thread.call("toml_parse", text) == {"title": "x", "server": {"port": 8080}}


@pytest.mark.parametrize(
    ("name", "arg", "message"),
    [
        ("yaml_parse", "a: [1, 2", "YAML parse error"),
        ("toml_parse", "a = ", "TOML parse error"),
        ("toml_stringify", [1], "expected a dict"),
    ],
)
def test_format_errors(thread, name, arg, message):
    with pytest.raises(HarnThrow, match=message):
        thread.call(name, arg)
