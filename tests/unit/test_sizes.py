"""Human sizes (DESIGN.md §4): binary units, a bare number means MB, anything else names the value."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sizes import GIB, KIB, MIB, SizeError, format_size, heaviest, parse_size, sized_list

GOOD = [
    ("5MB", 5 * MIB),
    ("512KB", 512 * KIB),
    ("2.5MB", int(2.5 * MIB)),
    ("5", 5 * MIB),
    ("128k", 128 * KIB),
    ("1 MiB", MIB),
    ("1024B", 1024),
    ("0.5GB", GIB // 2),
    ("  64 kb ", 64 * KIB),
    ("1g", GIB),
    (".5MB", MIB // 2),
    (5, 5 * MIB),  # TOML integer
    (2.5, int(2.5 * MIB)),  # TOML float
    (1, MIB),
]


@pytest.mark.parametrize(("value", "expected"), GOOD, ids=[repr(v) for v, _ in GOOD])
def test_parse_size_table(value, expected):
    assert parse_size(value) == expected


BAD = [
    "5XB",
    "-1MB",
    "0",
    "abc",
    "",
    "1.2.3MB",
    "true",
    "0B",
    "0.1B",
    "5 M B",
    "MB",
    "1e3",
    "nan",
    "inf",
    "5MB extra",
    "1,5MB",
    "-5",
    "9" * 305 + "GB",
    "9" * 400,
]


@pytest.mark.parametrize("value", BAD)
def test_bad_sizes_raise_size_error_naming_the_value(value):
    with pytest.raises(SizeError) as info:
        parse_size(value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize(
    "value", [True, False, 0, -1, 0.0, -2.5, float("inf"), float("nan"), 10**400, 1e308, None, [5]]
)
def test_bad_non_string_sizes(value):
    with pytest.raises(SizeError):
        parse_size(value)


def test_size_error_is_a_value_error():
    assert issubclass(SizeError, ValueError)


def test_huge_integer_sizes_stay_exact():
    # An integer number of bytes must not be rounded through a float.
    assert parse_size(f"{2**60 + 1}B") == 2**60 + 1


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "—"),
        (0, "0 B"),
        (512, "512 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (int(126.4 * KIB), "126.4 KB"),
        (int(4.2 * MIB), "4.2 MB"),
        (5 * GIB, "5.0 GB"),
        (-2048, "-2.0 KB"),
    ],
)
def test_format_size(n, text):
    assert format_size(n) == text


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.from_regex(r"\A\s*[0-9.]{0,8}\s*[a-zA-Z]{0,4}\s*\Z"),
    )
)
def test_parse_size_raises_only_size_error(value):
    try:
        result = parse_size(value)
    except SizeError as exc:
        assert str(exc)
    else:
        assert isinstance(result, int) and result >= 1


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=1 << 50))
def test_format_then_parse_round_trips_within_rounding(n):
    back = parse_size(format_size(n))
    if n < KIB:
        assert back == n
    else:
        # one decimal of the unit: at most 0.05 units off, i.e. under 5% of the value
        assert math.isclose(back, n, rel_tol=0.05, abs_tol=1)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=4096), st.sampled_from(["B", "KB", "MB", "GB", "k", "KiB", "MiB"]))
def test_parse_then_format_round_trips(number, unit):
    n = parse_size(f"{number}{unit}")
    assert math.isclose(parse_size(format_size(n)), n, rel_tol=0.05, abs_tol=1)


def test_sized_list_and_heaviest_name_parts_with_their_sizes():
    assert sized_list([("system prompt", 1126), ("memory", 0), ("tools", 6144)]) == (
        "system prompt 1.1 KB, tools 6.0 KB"
    )
    servers = [("docs", 9000), ("big", 40000), ("wiki", 1500), ("a", 10), ("b", 20)]
    assert heaviest(servers, 3) == "big 39.1 KB, docs 8.8 KB, wiki 1.5 KB and 2 more"
    assert heaviest(servers[:2], 3) == "big 39.1 KB, docs 8.8 KB"
    assert heaviest([], 3) == "" and sized_list([]) == ""
