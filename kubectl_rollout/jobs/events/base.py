"""The one event language of every job: typed, frozen events in one envelope.

An engine emits bare events (what happened); the job's stream stamps each one
with the job's id, a sequence number (monotonic per job), the time and the
schema version (``Envelope``). Every consumer reads the same envelope: the text
printers, ``-o jsonl`` (one ``Envelope.as_dict()`` per line), the agent's
journal and the TUI.

The JSON form is flat, so that ``jq 'select(.type == "PodEvicted")'`` works::

    {"schema": 1, "job": "...", "seq": 7, "at": "2026-11-23T10:30:00.123456Z",
     "type": "PodEvicted", ...the event's fields}

Rules for changing it: within a schema version fields are added, never removed
or renamed, and a type name never changes meaning. A new field needs a default,
so that older journals still decode. Type names are stable strings (``TYPE``),
not whatever the Python class happens to be called.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

SCHEMA_VERSION = 1

#: the fields of the envelope; an event may not use these names
ENVELOPE_FIELDS = frozenset({"schema", "job", "seq", "at", "type"})

E = TypeVar("E", bound="Event")


class UnknownEvent(ValueError):
    """A type name no event class carries: written by a newer version, or not an event at all."""


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event. Subclasses set ``TYPE``, a stable name unique among all events."""

    TYPE: ClassVar[str] = ""
    _registry: ClassVar[dict[str, type[Event]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.TYPE:
            return  # an abstract intermediate class
        taken = Event._registry.get(cls.TYPE)
        if taken is not None and taken.__qualname__ != cls.__qualname__:
            raise TypeError(f"event type {cls.TYPE!r} is taken by {taken.__qualname__}")
        Event._registry[cls.TYPE] = cls

    def coalesce_key(self) -> str | None:
        """Events with the same key update the same object: a consumer that falls behind may keep the last.

        None (the default) means every event counts on its own and none may be dropped.
        """
        return None

    def fields_dict(self) -> dict[str, Any]:
        return {f.name: encode_value(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def as_dict(self) -> dict[str, Any]:
        """The event alone: ``{"type": TYPE, ...fields}``."""
        return {"type": self.TYPE, **self.fields_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """Decode an event from ``as_dict()`` (or an envelope's dict: envelope keys are ignored)."""
        type_name = data.get("type")
        event_class = Event._registry.get(str(type_name))
        if event_class is None:
            raise UnknownEvent(f"unknown event type {type_name!r}")
        if cls is not Event and not issubclass(event_class, cls):
            raise UnknownEvent(f"event type {type_name!r} is not a {cls.__name__}")
        event: Event = decode_dataclass(event_class, data)
        return event

    @staticmethod
    def types() -> dict[str, type[Event]]:
        """Every registered event type by name (import the event modules first)."""
        return dict(Event._registry)


@dataclass(frozen=True, kw_only=True)
class PodRef:
    namespace: str
    name: str
    node: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """One event of one job, as every consumer sees it."""

    job: str
    seq: int
    #: seconds since the epoch, microsecond precision
    at: float
    event: Event
    schema: int = SCHEMA_VERSION

    @property
    def type(self) -> str:
        return self.event.TYPE

    def as_dict(self) -> dict[str, Any]:
        stamp = datetime.fromtimestamp(self.at, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        return {
            "schema": self.schema,
            "job": self.job,
            "seq": self.seq,
            "at": stamp,
            "type": self.event.TYPE,
            **self.event.fields_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Envelope:
        schema = int(data.get("schema", SCHEMA_VERSION))
        if schema > SCHEMA_VERSION:
            raise UnknownEvent(f"event schema {schema} is newer than this version understands ({SCHEMA_VERSION})")
        at = datetime.fromisoformat(str(data["at"]).replace("Z", "+00:00")).timestamp()
        return cls(job=str(data["job"]), seq=int(data["seq"]), at=at, event=Event.from_dict(data), schema=schema)


def stamp_time(epoch: float) -> float:
    """``epoch`` rounded to the microsecond, as the JSON form keeps it (so that a round trip is exact)."""
    return datetime.fromtimestamp(epoch, UTC).timestamp()


#: what an engine calls with each event
Emit = Callable[[Event], None]


# --- encoding ---------------------------------------------------------------------------


def encode_value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode_value(v) for k, v in value.items()}
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


#: a function from a JSON value to the Python value a hint asks for
Converter = Callable[[Any], Any]

#: per dataclass, its fields and, for each, the converter its JSON value needs (None: taken as is)
_FIELDS: dict[type, tuple[tuple[str, Converter | None], ...]] = {}


def _as_is(hint: Any) -> bool:
    """Whether a JSON value for ``hint`` is already the Python value (str, int, bool, Any, and those or None)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return all(_as_is(a) for a in typing.get_args(hint))
    return hint in (str, int, bool, Any, type(None))


def _fields(cls: type) -> tuple[tuple[str, Converter | None], ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        hints = _hints(cls)
        fields = _FIELDS[cls] = tuple(
            (f.name, None if _as_is(hints[f.name]) else _converter(hints[f.name])) for f in dataclasses.fields(cls)
        )
    return fields


def decode_dataclass(cls: type[Any], data: Mapping[str, Any]) -> Any:
    # A TUI attaching to a 5000-pod drain decodes some 15000 events: each field's converter is built once
    # per class from its hint, so decoding a value no longer inspects the hint (typing.get_origin and
    # isinstance on every field of every event were half of the time).
    values = {}
    for name, convert in _fields(cls):
        if name in data:
            values[name] = data[name] if convert is None else convert(data[name])
    return cls(**values)


def _converter(hint: Any) -> Converter:
    """The function that turns a JSON value into the value ``hint`` asks for, worked out once."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) != 1:
            return _identity
        inner = _converter(options[0])
        return lambda value: None if value is None else inner(value)
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0])
            return lambda value: tuple(item(v) for v in value)
        items = tuple(_converter(a) for a in args)
        return lambda value: tuple(convert(v) for convert, v in zip(items, value, strict=True))
    if origin is dict:
        _key, item_hint = typing.get_args(hint)
        item = _converter(item_hint)
        return lambda value: {k: item(v) for k, v in value.items()}
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            # The value map first: calling the enum class costs ten times as much, per field of every event.
            members = hint._value2member_map_
            enum_class = hint

            def member(value: Any) -> Any:
                found = members.get(value)
                return found if found is not None else enum_class(value)

            return member
        if dataclasses.is_dataclass(hint):
            dataclass_type = hint
            return lambda value: decode_dataclass(dataclass_type, value)
        if hint is float:
            return lambda value: float(value) if isinstance(value, int) else value
    return _identity


def _identity(value: Any) -> Any:
    return value
