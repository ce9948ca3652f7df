"""Every event type round-trips exactly through its JSON form, inside and outside its envelope.

The types are enumerated from the registry, so a new event type that does not
round-trip (or forgot its TYPE) fails here without anyone adding a case.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any

import pytest

import kubectl_rollout.jobs.events  # noqa: F401  (registers every event type)
from kubectl_rollout.jobs.events.base import ENVELOPE_FIELDS, Envelope, Event, UnknownEvent, stamp_time
from kubectl_rollout.jobs.events.stream import EventStream


def sample(hint: Any, seed: int) -> Any:
    """A value of type ``hint`` that differs from every field default."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return sample(next(a for a in typing.get_args(hint) if a is not type(None)), seed)
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return (sample(args[0], seed), sample(args[0], seed + 1))
        return tuple(sample(a, seed + i) for i, a in enumerate(args))
    if origin is dict:
        return {f"k{seed}": sample(typing.get_args(hint)[1], seed)}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = list(hint)
        return members[(seed + 1) % len(members)]
    if dataclasses.is_dataclass(hint):
        return build(hint, seed)
    if hint is bool:
        return True
    if hint is int:
        return 40 + seed
    if hint is float:
        return 1.25 + seed
    if hint is str:
        return f"value-{seed}"
    raise TypeError(f"no sample for {hint!r}")


def build(cls: Any, seed: int = 0) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: sample(hints[f.name], seed + i) for i, f in enumerate(dataclasses.fields(cls))})


EVENT_TYPES = sorted(Event.types().items())


def test_every_event_module_registers_its_types() -> None:
    assert {"DrainFinished", "EvictionBlocked", "RestartFinished", "JobStarted", "JobFinished"} <= dict(
        EVENT_TYPES
    ).keys()


def _concrete_subclasses(cls: type[Event]) -> list[type[Event]]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_concrete_subclasses(sub))
    return found


def test_every_event_class_has_a_unique_stable_type_name() -> None:
    classes = _concrete_subclasses(Event)
    assert all(c.TYPE for c in classes), [c.__name__ for c in classes if not c.TYPE]
    assert len({c.TYPE for c in classes}) == len(classes)
    assert all(Event.types()[c.TYPE] is c for c in classes)


@pytest.mark.parametrize(("name", "cls"), EVENT_TYPES, ids=[name for name, _ in EVENT_TYPES])
def test_round_trip(name: str, cls: type[Event]) -> None:
    event = build(cls)
    assert not ENVELOPE_FIELDS & {f.name for f in dataclasses.fields(event)}, "an event field shadows the envelope"
    as_json = json.loads(json.dumps(event.as_dict()))
    assert as_json["type"] == name
    assert Event.from_dict(as_json) == event

    envelope = Envelope(job="j1", seq=7, at=stamp_time(1_700_000_000.123456), event=event)
    assert Envelope.from_dict(json.loads(json.dumps(envelope.as_dict()))) == envelope


def test_an_unknown_type_is_refused_by_name() -> None:
    with pytest.raises(UnknownEvent, match="SomethingNew"):
        Event.from_dict({"type": "SomethingNew"})


def test_a_newer_schema_is_refused_with_both_versions() -> None:
    envelope = Envelope(job="j", seq=1, at=0.0, event=build(Event.types()["JobFinished"])).as_dict()
    envelope["schema"] = 99
    with pytest.raises(UnknownEvent, match="schema 99 is newer"):
        Envelope.from_dict(envelope)


def test_fields_an_older_writer_did_not_know_take_their_defaults() -> None:
    event = Event.from_dict({"type": "PodGone", "pod": {"namespace": "a", "name": "b"}, "after": 1})
    assert event.as_dict() == {
        "type": "PodGone",
        "pod": {"namespace": "a", "name": "b", "node": ""},
        "after": 1.0,
        "method": "evict",
    }


def test_the_stream_numbers_events_from_one_in_order() -> None:
    seen: list[Envelope] = []
    stream = EventStream("job-x", seen.append, clock=lambda: 12.5)
    for _ in range(3):
        stream.emit(build(Event.types()["PodGone"]))
    assert [e.seq for e in seen] == [1, 2, 3]
    assert {e.job for e in seen} == {"job-x"}
    assert stream.next_seq == 4


def test_the_events_page_documents_every_event_type() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "events.md").read_text()
    missing = [name for name, _ in EVENT_TYPES if f"`{name}`" not in page]
    assert missing == [], f"docs/events.md lacks {missing}: add each to its table, with its fields"
