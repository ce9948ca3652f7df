from __future__ import annotations

import pytest

from kubectl_rollout.kube.durations import go_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("30", 30.0),  # a bare number is seconds, as client-go reads --request-timeout
        ("0s", 0.0),
        ("1.5s", 1.5),
        ("250ms", 0.25),
        ("2m30s", 150.0),
        ("1h", 3600.0),
        ("1h0m5s", 3605.0),
        ("500us", 0.0005),
        (" 5s ", 5.0),
    ],
)
def test_parses_what_kubectl_accepts(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "empty duration"),
        ("-5s", "negative duration"),
        ("-1", "negative duration"),
        ("5x", "invalid duration '5x'"),
        ("s", "invalid duration"),
        ("1.5", "invalid duration"),
        ("5s3", "invalid duration"),
        ("ten seconds", "invalid duration"),
        ("1e400", "invalid duration"),
        ("Infinity", "invalid duration"),
        # Go's longest duration is 2562047h47m16.854775807s (int64 nanoseconds); kubectl refuses longer.
        (str(2**63), "too long; the longest is 2562047h47m16s"),
        ("2562048h", "too long"),
    ],
)
def test_refuses_with_a_message_naming_the_input(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_duration(text)


# Cases from Go's time package (time_test.go, durationTests), the form kubectl prints its timeouts in.
@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1e-9, "1ns"),
        (1.1e-6, "1.1µs"),
        (2.2e-3, "2.2ms"),
        (3.3, "3.3s"),
        (4 * 60 + 5, "4m5s"),
        (4 * 60 + 5.001, "4m5.001s"),
        (5 * 3600 + 6 * 60 + 7.001, "5h6m7.001s"),
        (8 * 60 + 1e-9, "8m0.000000001s"),
        (60, "1m0s"),
        (3600, "1h0m0s"),
        (3, "3s"),
        (0.25, "250ms"),
        (-1, "-1s"),
    ],
)
def test_go_duration_is_written_as_go_writes_it(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
