"""The canary step format: what parses, what is refused and how the refusal reads."""

from __future__ import annotations

import pytest

from kubectl_rollout.rollout.steps.format import (
    CommandGate,
    InvalidSteps,
    ManualGate,
    OnFailure,
    Pause,
    SetWeight,
    parse_steps,
    split_steps,
    steps_text,
    weight_at,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("setWeight 10", (SetWeight(percent=10),)),
        ("setWeight 10%", (SetWeight(percent=10),)),
        ("setWeight: 25", (SetWeight(percent=25),)),
        ("setweight 0; setWeight 100", (SetWeight(percent=0), SetWeight(percent=100))),
        ("pause", (Pause(),)),
        ("pause 5s", (Pause(seconds=5.0),)),
        ("pause 1m30s", (Pause(seconds=90.0),)),
        ("pause: 2h", (Pause(seconds=7200.0),)),
        ("gate manual", (ManualGate(),)),
        ("gate command: ./check.sh --quick", (CommandGate(command="./check.sh --quick"),)),
        (
            "gate command on-failure=pause: test -f /tmp/ok; echo done",
            (CommandGate(command="test -f /tmp/ok; echo done", on_failure=OnFailure.PAUSE),),
        ),
        (
            "setWeight 10; pause\nsetWeight 50\n\n  pause 5s  \nsetWeight 100",
            (SetWeight(percent=10), Pause(), SetWeight(percent=50), Pause(seconds=5.0), SetWeight(percent=100)),
        ),
    ],
)
def test_steps_parse(text: str, expected: tuple[object, ...]) -> None:
    assert parse_steps(text, workload="web") == expected


def test_a_command_takes_the_rest_of_its_line_but_not_the_next_line() -> None:
    assert split_steps("setWeight 20; gate command: a; b\npause") == ["setWeight 20", "gate command: a; b", "pause"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("setWeight 120", "step 1 ('setWeight 120'): weight 120% is above 100%"),
        ("setWeight 50; setWeight 20", "step 2 (setWeight 20%): weights must not decrease (the step before is 50%)"),
        ("setWeight -5", "a weight is a whole percentage from 0 to 100"),
        ("setWeight 12.5", "a weight is a whole percentage from 0 to 100"),
        ("gate command:", "the command gate names no command: write gate command: CMD"),
        ("gate command:    ", "the command gate names no command"),
        ("gate command ./x.sh", "a command gate names its command after a colon"),
        ("gate command on-failure=retry: ./x.sh", "unknown gate option 'on-failure=retry'"),
        ("pause 0s", "a timed pause lasts from 1s to 24h0m0s"),
        ("pause 25h", "a timed pause lasts from 1s to 24h0m0s"),
        ("pause soon", "invalid duration 'soon'"),
        ("setWeight 10; wait 5s", "step 2 ('wait 5s'): not a step"),
        ("gate prometheus: up", "step 1 ('gate prometheus: up'): the Prometheus gate names no service"),
    ],
)
def test_bad_steps_name_the_workload_the_step_and_the_problem(text: str, words: str) -> None:
    with pytest.raises(InvalidSteps) as raised:
        parse_steps(text, workload="web")
    message = raised.value.message
    assert message.startswith('workload "web" has invalid canary steps (rollout-plus.io/steps): ')
    assert words in message
    assert message.endswith("nothing was changed")
    assert raised.value.exit_code == 2


def test_every_bad_step_is_listed_at_once() -> None:
    with pytest.raises(InvalidSteps) as raised:
        parse_steps("setWeight 200\ngate command:\npause", workload="web")
    assert "step 1" in raised.value.message
    assert "step 2" in raised.value.message


def test_too_many_steps() -> None:
    with pytest.raises(InvalidSteps, match="65 canary steps; at most 64"):
        parse_steps("pause\n" * 65, workload="web")


def test_steps_written_back_parse_to_the_same_steps() -> None:
    steps = parse_steps("setWeight 10; pause; pause 90s; gate manual\ngate command on-failure=pause: ok", workload="w")
    assert parse_steps(steps_text(steps), workload="w") == steps
    assert steps_text(steps).splitlines()[2] == "pause 1m30s"


@pytest.mark.parametrize(("index", "weight"), [(0, 0), (1, 10), (2, 10), (3, 50), (4, 50)])
def test_the_weight_in_force_is_the_last_set_weight(index: int, weight: int) -> None:
    steps = parse_steps("pause; setWeight 10; pause; setWeight 50; gate manual", workload="w")
    assert weight_at(steps, index) == weight
