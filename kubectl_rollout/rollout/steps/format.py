"""The steps of a canary, as written in the workload's annotation ``rollout-plus.io/steps`` (or ``--steps``).

One step per line; on one line, steps may also be separated by ``;``::

    setWeight 10; pause
    setWeight 50
    pause 5s
    gate command on-failure=pause: ./smoke-test.sh --quick
    setWeight 100

* ``setWeight N`` (or ``N%``): the new ReplicaSet at N % of the replicas, the
  stable one at the rest;
* ``pause``: until ``promote``; ``pause DURATION`` (``30s``, ``5m``, ``1h``);
* ``gate manual``: until ``promote`` (a pause that says it waits for a person);
* ``gate command: CMD``: runs CMD (``sh -c``) on the driver's machine; exit 0
  goes on, anything else aborts the canary (``on-failure=abort``, the default)
  or pauses it until ``promote`` (``on-failure=pause``). A command takes the
  rest of its line, ``;`` included.
* ``gate job [timeout=DURATION] [on-failure=...]: CONFIGMAP[/KEY]``: creates
  the Job of a template kept in a ConfigMap (``job_gate`` says why there), and
  goes on when it completes;
* ``gate prometheus OPTIONS: QUERY``: a Prometheus query, measured through
  the API server's service proxy and compared with a threshold
  (``prometheus_gate`` has the options); it takes the rest of its line too.

Pure: text in, a tuple of frozen steps (or an error naming the workload, the
step and what to write instead) out. Each step kind is its own class, so that
later kinds (a Prometheus query, a Job) are one class more, not a flag more.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from kubectl_rollout.kube.durations import go_duration, parse_duration
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.rollout.steps.job_gate import (
    DEFAULT_TIMEOUT_SECONDS,
    JobTemplateRef,
    parse_template_ref,
    parse_timeout,
)
from kubectl_rollout.rollout.steps.prometheus_gate import (
    PrometheusGateOptions,
    check_query,
    gate_options,
    option_values,
    split_options,
)

#: the annotation of the workload's manifest that holds its steps
STEPS_ANNOTATION = "rollout-plus.io/steps"
#: a timed pause may last at most this long: a longer wait is a pause until promoted
LONGEST_PAUSE_SECONDS = 24 * 3600.0
#: a timed pause shorter than this is refused: the driver's clock ticks once a second
SHORTEST_PAUSE_SECONDS = 1.0
#: a command gate's command, at most this many characters (it is stored on the record and in events)
LONGEST_COMMAND = 1024
#: at most this many steps (each one is shown, planned and recorded)
MOST_STEPS = 64


class InvalidSteps(UserFacingError):
    """Exit code 2, as an invalid manifest: nothing was sent to the cluster."""

    exit_code = 2


class OnFailure(enum.StrEnum):
    ABORT = "abort"
    PAUSE = "pause"


@dataclass(frozen=True, kw_only=True)
class SetWeight:
    percent: int

    def __str__(self) -> str:
        return f"setWeight {self.percent}%"


@dataclass(frozen=True, kw_only=True)
class Pause:
    #: None: until promoted
    seconds: float | None = None

    def __str__(self) -> str:
        return "pause" if self.seconds is None else f"pause {go_duration(self.seconds)}"


@dataclass(frozen=True, kw_only=True)
class ManualGate:
    def __str__(self) -> str:
        return "gate manual"


@dataclass(frozen=True, kw_only=True)
class CommandGate:
    command: str
    on_failure: OnFailure = OnFailure.ABORT

    def __str__(self) -> str:
        option = "" if self.on_failure is OnFailure.ABORT else f" on-failure={self.on_failure.value}"
        return f"gate command{option}: {self.command}"


@dataclass(frozen=True, kw_only=True)
class JobGate:
    template: JobTemplateRef
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    on_failure: OnFailure = OnFailure.ABORT

    def __str__(self) -> str:
        options = "" if self.timeout == DEFAULT_TIMEOUT_SECONDS else f" timeout={go_duration(self.timeout)}"
        options += "" if self.on_failure is OnFailure.ABORT else f" on-failure={self.on_failure.value}"
        return f"gate job{options}: {self.template}"


@dataclass(frozen=True, kw_only=True)
class PrometheusGate:
    query: str
    options: PrometheusGateOptions
    on_failure: OnFailure = OnFailure.ABORT

    def __str__(self) -> str:
        return f"gate prometheus {self.options} on-failure={self.on_failure.value}: {self.query}"


Gate = ManualGate | CommandGate | JobGate | PrometheusGate
Step = SetWeight | Pause | Gate

_SET_WEIGHT = re.compile(r"^setWeight:?\s+(\S+)$", re.IGNORECASE)
_PAUSE = re.compile(r"^pause(?::?\s+(\S+))?$", re.IGNORECASE)
_GATE_MANUAL = re.compile(r"^gate:?\s+manual$", re.IGNORECASE)
_GATE_COMMAND = re.compile(r"^gate:?\s+command((?:\s+[a-z-]+=\S+)*)\s*:(.*)$", re.IGNORECASE | re.DOTALL)
_GATE_JOB = re.compile(r"^gate:?\s+job((?:\s+[a-z-]+=\S+)*)\s*:(.*)$", re.IGNORECASE | re.DOTALL)
_GATE_PROMETHEUS = re.compile(r"^gate:?\s+prometheus\b(.*)$", re.IGNORECASE | re.DOTALL)
#: the gates whose payload (a command, a query) takes the rest of its line, ";" included
_TAKES_THE_LINE = re.compile(r"^gate:?\s+(command|prometheus)", re.IGNORECASE)
_WEIGHT = re.compile(r"^(\d{1,4})%?$")


def split_steps(text: str) -> list[str]:
    """The steps' texts: one per line, or separated by ``;`` on a line; a command gate takes the rest of its line."""
    pieces: list[str] = []
    for line in text.splitlines():
        rest = line.strip()
        while rest:
            if _TAKES_THE_LINE.match(rest):
                pieces.append(rest)
                break
            head, _, rest = rest.partition(";")
            rest = rest.strip()
            if head.strip():
                pieces.append(head.strip())
    return pieces


def parse_steps(text: str, *, workload: str) -> tuple[Step, ...]:
    """The steps of ``workload`` from ``text``; InvalidSteps naming the workload and every bad step."""
    pieces = split_steps(text)
    if len(pieces) > MOST_STEPS:
        raise InvalidSteps(f'workload "{workload}": {len(pieces)} canary steps; at most {MOST_STEPS}')
    errors: list[str] = []
    steps: list[Step] = []
    for index, piece in enumerate(pieces, start=1):
        try:
            steps.append(_parse_step(piece))
        except ValueError as err:
            errors.append(f"step {index} ({piece!r}): {err}")
    errors += _order_errors(steps)
    if errors:
        raise InvalidSteps(
            f'workload "{workload}" has invalid canary steps ({STEPS_ANNOTATION}): '
            + "; ".join(errors)
            + "; nothing was changed"
        )
    return tuple(steps)


def _parse_step(text: str) -> Step:
    if found := _SET_WEIGHT.match(text):
        weight = _WEIGHT.match(found.group(1))
        if weight is None:
            raise ValueError("a weight is a whole percentage from 0 to 100, e.g. setWeight 20")
        percent = int(weight.group(1))
        if percent > 100:
            raise ValueError(f"weight {percent}% is above 100%")
        return SetWeight(percent=percent)
    if found := _PAUSE.match(text):
        if found.group(1) is None:
            return Pause()
        seconds = parse_duration(found.group(1))
        if not SHORTEST_PAUSE_SECONDS <= seconds <= LONGEST_PAUSE_SECONDS:
            raise ValueError(
                f"a timed pause lasts from {go_duration(SHORTEST_PAUSE_SECONDS)} to "
                f"{go_duration(LONGEST_PAUSE_SECONDS)}; for longer, pause until promoted (pause)"
            )
        return Pause(seconds=seconds)
    if _GATE_MANUAL.match(text):
        return ManualGate()
    if found := _GATE_COMMAND.match(text):
        return _command_gate(found.group(1), found.group(2).strip())
    if re.match(r"^gate:?\s+command\b", text, re.IGNORECASE):
        raise ValueError("a command gate names its command after a colon: gate command: ./check.sh")
    if found := _GATE_JOB.match(text):
        return _job_gate(found.group(1), found.group(2).strip())
    if re.match(r"^gate:?\s+job\b", text, re.IGNORECASE):
        raise ValueError("a Job gate names its template after a colon: gate job: CONFIGMAP")
    if found := _GATE_PROMETHEUS.match(text):
        return _prometheus_gate(found.group(1))
    raise ValueError(
        "not a step; the steps are setWeight N, pause, pause DURATION, gate manual, gate command: CMD, "
        "gate job: CONFIGMAP, gate prometheus OPTIONS: QUERY"
    )


def _job_gate(options: str, reference: str) -> JobGate:
    on_failure, timeout = OnFailure.ABORT, DEFAULT_TIMEOUT_SECONDS
    for option in options.split():
        key, _, value = option.partition("=")
        if key.lower() == "on-failure" and value.lower() in ("abort", "pause"):
            on_failure = OnFailure(value.lower())
        elif key.lower() == "timeout":
            timeout = parse_timeout(value)
        else:
            raise ValueError(
                f"unknown gate option {option!r}; a Job gate's options are timeout=DURATION and on-failure=abort|pause"
            )
    return JobGate(template=parse_template_ref(reference), timeout=timeout, on_failure=on_failure)


def _prometheus_gate(rest: str) -> PrometheusGate:
    parts = split_options(rest)
    if parts is None:
        raise ValueError(
            "a Prometheus gate gives its query after a colon: gate prometheus service=NS/NAME:PORT "
            "threshold='< 0.05': QUERY"
        )
    options = option_values(parts[0])
    on_failure = options.pop("on-failure", OnFailure.ABORT.value).lower()
    if on_failure not in ("abort", "pause"):
        raise ValueError(f"on-failure={on_failure}: abort or pause")
    settings = gate_options(options)
    return PrometheusGate(query=check_query(parts[1]), options=settings, on_failure=OnFailure(on_failure))


def _command_gate(options: str, command: str) -> CommandGate:
    if not command:
        raise ValueError("the command gate names no command: write gate command: CMD")
    if len(command) > LONGEST_COMMAND:
        raise ValueError(f"the command is {len(command)} characters long; at most {LONGEST_COMMAND}")
    if any(ord(c) < 0x20 and c != "\t" for c in command):
        raise ValueError("the command holds control characters")
    on_failure = OnFailure.ABORT
    for option in options.split():
        key, _, value = option.partition("=")
        if key.lower() != "on-failure" or value.lower() not in ("abort", "pause"):
            raise ValueError(f"unknown gate option {option!r}; the one option is on-failure=abort|pause")
        on_failure = OnFailure(value.lower())
    return CommandGate(command=command, on_failure=on_failure)


def _order_errors(steps: list[Step]) -> list[str]:
    """Weights never go down: a lower weight would shrink the canary mid-way, which is what abort is for."""
    errors: list[str] = []
    highest = 0
    for index, step in enumerate(steps, start=1):
        if isinstance(step, SetWeight):
            if step.percent < highest:
                errors.append(f"step {index} ({step}): weights must not decrease (the step before is {highest}%)")
            highest = max(highest, step.percent)
    return errors


def steps_text(steps: tuple[Step, ...]) -> str:
    """The steps written back, one per line (what ``--steps`` stores in the annotation)."""
    return "\n".join(str(step) for step in steps)


def weight_at(steps: tuple[Step, ...], index: int) -> int:
    """The weight in force at step ``index`` (0-based): the last setWeight at or before it; 0 before any."""
    weight = 0
    for step in steps[: index + 1]:
        if isinstance(step, SetWeight):
            weight = step.percent
    return weight
