from __future__ import annotations

import pytest

from kubectl_rollout.kube.durations import parse_duration


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
    ],
)
def test_refuses_with_a_message_naming_the_input(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_duration(text)
