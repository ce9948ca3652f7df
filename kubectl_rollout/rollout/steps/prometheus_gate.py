"""The Prometheus gate's step: ``gate prometheus OPTIONS: QUERY``.

::

    gate prometheus service=monitoring/prometheus:9090 threshold='< 0.05' count=3 interval=30s: QUERY

* ``service=[NAMESPACE/]NAME:PORT`` (required): the Prometheus Service, reached
  through the API server's service proxy; the namespace defaults to the
  workload's, the port is the Service's port number or name;
* ``threshold=OP VALUE`` (required): a measurement passes when ``result OP
  VALUE`` holds; OP is one of ``<`` ``<=`` ``>`` ``>=`` ``==`` ``!=``;
* ``count`` measurements (default 3), ``interval`` apart (default 30s), the first
  at once;
* ``failure-limit`` (default 1): the gate fails at that many failed measurements;
* ``inconclusive-limit`` (default 2): the canary pauses at that many inconclusive
  ones (no answer, an empty answer, NaN, several samples);
* ``on-failure=abort|pause``, as for a command gate.

The options end at the first colon that a blank (or the end) follows, outside
quotes: ``prometheus:9090`` stays one option. The query takes the rest of the
line, ``;`` included.

Pure: text in, a frozen step (or ValueError saying what to write instead) out.
"""

from __future__ import annotations

import math
import operator
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from kubectl_rollout.kube.durations import go_duration, parse_duration

#: a query, at most this many characters (it is stored on the record and in events)
LONGEST_QUERY = 1024
#: at most this many measurements per gate, each on the record
MOST_MEASUREMENTS = 60
SHORTEST_INTERVAL_SECONDS = 1.0
LONGEST_INTERVAL_SECONDS = 3600.0

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
_THRESHOLD = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_SERVICE = re.compile(
    r"^(?:([a-z0-9]([-a-z0-9]*[a-z0-9])?)/)?([a-z]([-a-z0-9]*[a-z0-9])?):([1-9]\d{0,4}|[a-z][-a-z0-9]{0,14})$"
)
_OPTIONS = ("service", "threshold", "interval", "count", "failure-limit", "inconclusive-limit", "on-failure")


@dataclass(frozen=True, kw_only=True)
class Threshold:
    """``result OP value``: when a measurement passes."""

    op: str
    value: float

    def passes(self, result: float) -> bool:
        return _COMPARISONS[self.op](result, self.value)

    def __str__(self) -> str:
        return f"{self.op} {self.value!r}"


@dataclass(frozen=True, kw_only=True)
class PrometheusService:
    #: "" : the workload's namespace
    namespace: str
    name: str
    #: the Service's port, by number or by name
    port: str

    def __str__(self) -> str:
        return f"{self.namespace + '/' if self.namespace else ''}{self.name}:{self.port}"


def parse_threshold(text: str) -> Threshold:
    found = _THRESHOLD.match(text)
    if found is None:
        raise ValueError(
            f"threshold {text!r} is not a comparison; write e.g. threshold='< 0.05' or threshold='>= 99.5'"
        )
    value = float(found.group(2))
    if math.isinf(value):
        raise ValueError(f"threshold {text!r} compares with an infinite number")
    return Threshold(op=found.group(1), value=value)


def parse_service(text: str) -> PrometheusService:
    found = _SERVICE.match(text)
    if found is None or (found.group(5).isdigit() and int(found.group(5)) > 65535):
        raise ValueError(
            f"service {text!r} is not [NAMESPACE/]NAME:PORT; write e.g. service=monitoring/prometheus:9090"
        )
    return PrometheusService(namespace=found.group(1) or "", name=found.group(3), port=found.group(5))


def split_options(text: str) -> tuple[str, str] | None:
    """(options, query) of what follows ``gate prometheus``: the options end at the first colon outside quotes
    that a blank or the end follows; None when there is no such colon."""
    quote = ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == ":" and (index + 1 == len(text) or text[index + 1].isspace()):
            return text[:index], text[index + 1 :].strip()
    return None


def _whole(options: dict[str, str], key: str, default: int, *, least: int, most: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    if not re.fullmatch(r"\d{1,4}", raw) or not least <= int(raw) <= most:
        raise ValueError(f"{key}={raw}: a whole number from {least} to {most}")
    return int(raw)


def option_values(text: str) -> dict[str, str]:
    """``key=value`` pairs (values may be quoted); ValueError naming an unknown, repeated or valueless one."""
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise ValueError(
            f"the gate's options do not parse ({err}); quote a value with blanks: threshold='< 0.05'"
        ) from None
    found: dict[str, str] = {}
    for word in words:
        key, sign, value = word.partition("=")
        key = key.lower()
        if key not in _OPTIONS or not sign:
            raise ValueError(f"unknown gate option {word!r}; the options are {', '.join(_OPTIONS)} (each key=value)")
        if key in found:
            raise ValueError(f"option {key} is given twice")
        found[key] = value
    return found


@dataclass(frozen=True, kw_only=True)
class PrometheusGateOptions:
    service: PrometheusService
    threshold: Threshold
    interval: float = 30.0
    count: int = 3
    failure_limit: int = 1
    inconclusive_limit: int = 2

    def __str__(self) -> str:
        return (
            f"service={self.service} threshold='{self.threshold}' interval={go_duration(self.interval)} "
            f"count={self.count} failure-limit={self.failure_limit} inconclusive-limit={self.inconclusive_limit}"
        )


def gate_options(options: dict[str, str]) -> PrometheusGateOptions:
    """The gate's options from its ``key=value`` pairs (on-failure aside); ValueError saying what to write."""
    if "service" not in options:
        raise ValueError("the Prometheus gate names no service: write service=[NAMESPACE/]NAME:PORT")
    if "threshold" not in options:
        raise ValueError("the Prometheus gate has no threshold: write e.g. threshold='< 0.05'")
    interval = 30.0
    if "interval" in options:
        interval = parse_duration(options["interval"])
        if not SHORTEST_INTERVAL_SECONDS <= interval <= LONGEST_INTERVAL_SECONDS:
            raise ValueError(
                f"interval={options['interval']}: from {go_duration(SHORTEST_INTERVAL_SECONDS)} to "
                f"{go_duration(LONGEST_INTERVAL_SECONDS)}"
            )
    count = _whole(options, "count", 3, least=1, most=MOST_MEASUREMENTS)
    failure_limit = _whole(options, "failure-limit", 1, least=1, most=count)
    inconclusive_limit = _whole(options, "inconclusive-limit", min(2, count), least=1, most=count)
    return PrometheusGateOptions(
        service=parse_service(options["service"]),
        threshold=parse_threshold(options["threshold"]),
        interval=interval,
        count=count,
        failure_limit=failure_limit,
        inconclusive_limit=inconclusive_limit,
    )


def check_query(query: str) -> str:
    if not query:
        raise ValueError("the Prometheus gate has no query: write gate prometheus OPTIONS: QUERY")
    if len(query) > LONGEST_QUERY:
        raise ValueError(f"the query is {len(query)} characters long; at most {LONGEST_QUERY}")
    if any(ord(c) < 0x20 and c != "\t" for c in query):
        raise ValueError("the query holds control characters")
    return query
