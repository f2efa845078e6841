"""String builtins and methods (spec 4.5), including case and Unicode helpers."""

from __future__ import annotations

import pytest

from harnpy.runtime.errors import HarnThrow


@pytest.mark.parametrize(
    ("name", "args", "result"),
    [
        ("trim", ["  hello  "], "hello"),
        ("lowercase", ["HELLO"], "hello"),
        ("uppercase", ["hello"], "HELLO"),
        ("split", ["a,b,c", ","], ["a", "b", "c"]),
        ("split", ["a b  c"], ["a", "b", "", "c"]),
        ("split", ["a,,b", ","], ["a", "", "b"]),
        ("split", ["a🔥b🔥c", "🔥"], ["a", "b", "c"]),
        ("split", ["ab", ""], ["", "a", "b", ""]),
        ("starts_with", ["hello world", "hello"], True),
        ("starts_with", ["hello world", "world"], False),
        ("ends_with", ["hello world", "world"], True),
        ("ends_with", ["hello world", "hello"], False),
        ("contains", ["hello world", "lo wo"], True),
        ("contains", ["hello world", "xyz"], False),
        ("contains", ["a1", 1], True),
        ("contains", [[1, 2, 3], 2], True),
        ("contains", [[1, 2, 3], 5], False),
        ("contains", [None, 1], False),
        ("replace", ["hello world", "world", "harn"], "hello harn"),
        ("replace", ["naïve résumé", "é", "e"], "naïve resume"),
        ("join", [["a", "b", "c"], ", "], "a, b, c"),
        ("join", [["x"], "-"], "x"),
        ("join", [[1, None, 2.0]], "1nil2.0"),
        ("join", ["not a list", ","], ""),
        ("substring", ["hello world", 0, 5], "hello"),
        ("substring", ["hello world", 6], "world"),
        ("substring", ["hello world", 6, 3], "wor"),
        ("substring", ["hello", 3, 99], "lo"),
        ("substring", ["hello", -2, 2], "he"),
        ("substring", ["hello", 99], ""),
        ("trim", [42], "42"),
        ("uppercase", [None], "NIL"),
    ],
)
def test_string_builtins(h, name, args, result):
    assert h.call(name, *args) == result


@pytest.mark.parametrize(
    ("name", "arg", "result"),
    [
        ("snake_to_camel", "test_file_patterns", "testFilePatterns"),
        ("snake_to_camel", "a", "a"),
        ("snake_to_camel", "", ""),
        ("camel_to_snake", "testFilePatterns", "test_file_patterns"),
        ("camel_to_snake", "HTTPServer", "http_server"),
        ("camel_to_snake", "already_snake", "already_snake"),
        ("camel_to_snake", "parseJSONData2Go", "parse_json_data2_go"),
        ("camel_to_snake", "", ""),
        ("snake_to_pascal", "test_file_patterns", "TestFilePatterns"),
        ("pascal_to_snake", "TestFilePatterns", "test_file_patterns"),
        ("pascal_to_snake", "HTTPServer", "http_server"),
        ("kebab_to_camel", "test-file-patterns", "testFilePatterns"),
        ("camel_to_kebab", "testFilePatterns", "test-file-patterns"),
        ("snake_to_kebab", "test_file_patterns", "test-file-patterns"),
        ("kebab_to_snake", "test-file-patterns", "test_file_patterns"),
        ("uppercase_first", "hello", "Hello"),
        ("lowercase_first", "Hello", "hello"),
        ("uppercase_first", "", ""),
        ("title_case", "hello world from harn", "Hello World From Harn"),
        ("title_case", "hELLO  wORLD", "Hello  World"),
    ],
)
def test_case_helpers(h, name, arg, result):
    assert h.call(name, arg) == result


def test_case_helpers_round_trip(h):
    assert h.call("camel_to_snake", h.call("snake_to_camel", "abc_def_ghi")) == "abc_def_ghi"
    assert h.call("snake_to_camel", h.call("camel_to_snake", "fooBarBaz")) == "fooBarBaz"


def test_unicode_helpers(h):
    decomposed = "e\u0301"
    assert h.call("unicode_normalize", decomposed, "NFC") == "é"
    assert h.call("unicode_normalize", "é", "NFD") == decomposed
    assert h.call("unicode_graphemes", decomposed + "x") == [decomposed, "x"]
    assert len(h.call("unicode_graphemes", "👨\u200d👩\u200d👧🇫🇷")) == 2
    with pytest.raises(HarnThrow):
        h.call("unicode_normalize", "x", "NFX")


@pytest.mark.parametrize(
    ("args", "result"),
    [
        (["ha", 5, ".", "left"], "...ha"),
        (["ha", 5, ".", "right"], "ha..."),
        (["ha", 5], "ha   "),
        (["é", 3, ".", "both"], ".é."),
        (["e\u0301", 3, ".", "both"], ".e\u0301."),
        (["ab", 5, "-", "both"], "-ab--"),
        (["hello", 3, "."], "hello"),
        (["x", 4, "ab", "left"], "abax"),
        # one grapheme each (wcwidth >= 0.3.0; 0.2.x split them and padded one less)
        (["\U0001f1eb\U0001f1f7", 3, "."], "\U0001f1eb\U0001f1f7.."),
        (
            ["\U0001f468\u200d\U0001f469\u200d\U0001f467", 3, ".", "left"],
            "..\U0001f468\u200d\U0001f469\u200d\U0001f467",
        ),
    ],
)
def test_str_pad_counts_graphemes(h, args, result):
    assert h.call("str_pad", *args) == result


def test_str_pad_rejects_an_unknown_side(h):
    with pytest.raises(HarnThrow):
        h.call("str_pad", "x", 3, ".", "middle")


@pytest.mark.parametrize(
    ("name", "recv", "args", "result"),
    [
        ("count", "café", [], 4),
        ("len", "cafe", [], 4),
        ("empty", "", [], True),
        ("empty", "x", [], False),
        ("contains", "Hello 🌍🔥 World", ["🌍"], True),
        ("contains", "Hello 🌍🔥 World", ["🎉"], False),
        ("split", "a,b", [], ["a", "b"]),
        ("split", "line1\nline2\nline3", ["\n"], ["line1", "line2", "line3"]),
        ("trim", "  hello world  ", [], "hello world"),
        ("trim_start", "  hello world  ", [], "hello world  "),
        ("trim_end", "  hello world  ", [], "  hello world"),
        ("starts_with", "café", ["caf"], True),
        ("ends_with", "café", ["fé"], True),
        ("lower", "MiXeD", [], "mixed"),
        ("upper", "MiXeD", [], "MIXED"),
        ("to_lower", "Title", [], "title"),
        ("to_upper", "Title", [], "TITLE"),
        ("lowercase", "AB", [], "ab"),
        ("uppercase", "ab", [], "AB"),
        ("substring", "hello world", [6], "world"),
        ("substring", "hello world", [0, 5], "hello"),
        ("substring", "hello", [3, 1], ""),
        ("replace", "Hello 🌍🔥 World", ["🔥", "💧"], "Hello 🌍💧 World"),
        ("replace", "abc", ["b"], None),
        ("index_of", "hello world", ["world"], 6),
        ("index_of", "héllo", ["l"], 2),
        ("index_of", "abc", ["z"], -1),
        ("index_of", "src/lib/utils/lib.rs", ["lib"], 4),
        ("last_index_of", "src/lib/utils/lib.rs", ["lib"], 14),
        ("chars", "abc", [], ["a", "b", "c"]),
        ("lines", "line1\nline2\r\nline3\n", [], ["line1", "line2", "line3"]),
        ("lines", "", [], []),
        ("char_at", "hello", [0], "h"),
        ("char_at", "hello", [4], "o"),
        ("char_at", "hello", [99], None),
        ("char_at", "hello", [-1], None),
        ("repeat", "ha", [3], "hahaha"),
        ("repeat", "ha", [-1], ""),
        ("reverse", "hello", [], "olleh"),
        ("pad_left", "hi", [5], "   hi"),
        ("pad_right", "hi", [5, "."], "hi..."),
        ("pad_left", "hello", [3], "hello"),
    ],
)
def test_string_methods(h, name, recv, args, result):
    assert h.meth("string", name, recv, *args) == result
