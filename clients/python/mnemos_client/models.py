"""Typed results and the :class:`Turn` input.

Each result is a frozen dataclass mirroring one of the server's wire types, built by a
``from_json`` classmethod. Unknown fields are ignored, so a newer server does not break an
older client; a missing or mistyped required field raises :class:`UnexpectedResponse`
naming the type and field, so a mismatch is loud instead of a ``KeyError`` deep in user
code. The JSON object a result was built from stays available as ``.raw``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import datetime as _dt
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
    Union,
)

from .errors import UnexpectedResponse

__all__ = [
    "Turn",
    "Moment",
    "Forgotten",
    "Memory",
    "AddedTurn",
    "JobError",
    "JobReport",
    "AddResult",
    "SearchHit",
    "SearchResult",
    "RecallItem",
    "RecallResult",
    "MemoryPage",
    "ForgetResult",
    "HistoryEntry",
    "PurgeResult",
    "Stats",
    "PresetParam",
    "Preset",
    "Job",
    "View",
    "Health",
    "ApiKey",
    "CreatedKey",
    "format_time",
]

T = TypeVar("T")
Json = Dict[str, Any]
TimeLike = Union[str, _dt.datetime]


def format_time(value: TimeLike) -> str:
    """An RFC 3339 string for the server. Strings pass through unchanged (the server checks
    them); a naive ``datetime`` is taken as UTC, since RFC 3339 needs an offset."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.isoformat()


def parse_time(text: str) -> _dt.datetime:
    """The server's ``2024-05-01T09:30:00.000Z`` as an aware ``datetime`` (Python 3.9's
    ``fromisoformat`` does not accept the ``Z`` suffix)."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return _dt.datetime.fromisoformat(text)


class _Reader:
    """Reads one JSON object's fields with type checks, so errors name ``Type.field``."""

    def __init__(self, data: Any, owner: str) -> None:
        if not isinstance(data, dict):
            raise UnexpectedResponse(
                0, "unexpected_response", f"{owner}: expected a JSON object, got {_kind(data)}"
            )
        self.data: Json = data
        self.owner = owner

    def _fail(self, key: str, problem: str) -> UnexpectedResponse:
        return UnexpectedResponse(0, "unexpected_response", f"{self.owner}.{key}: {problem}")

    def _value(self, key: str) -> Any:
        if key not in self.data:
            raise self._fail(key, "missing required field")
        return self.data[key]

    def _wrong(self, key: str, value: Any, expected: str) -> UnexpectedResponse:
        return self._fail(key, f"expected {expected}, got {_kind(value)}")

    def string(self, key: str) -> str:
        value = self._value(key)
        if not isinstance(value, str):
            raise self._wrong(key, value, "a string")
        return value

    def opt_string(self, key: str) -> Optional[str]:
        if self.data.get(key) is None:
            return None
        return self.string(key)

    def integer(self, key: str) -> int:
        value = self._value(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._wrong(key, value, "an integer")
        return value

    def number(self, key: str) -> float:
        value = self._value(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise self._wrong(key, value, "a number")
        return float(value)

    def boolean(self, key: str) -> bool:
        value = self._value(key)
        if not isinstance(value, bool):
            raise self._wrong(key, value, "a boolean")
        return value

    def obj(self, key: str, parse: Callable[[Any], T]) -> T:
        return parse(self._value(key))

    def opt_obj(self, key: str, parse: Callable[[Any], T]) -> Optional[T]:
        if self.data.get(key) is None:
            return None
        return parse(self.data[key])

    def sequence(self, key: str, parse: Callable[[Any], T]) -> Tuple[T, ...]:
        value = self._value(key)
        if not isinstance(value, list):
            raise self._wrong(key, value, "a list")
        return tuple(parse(item) for item in value)

    def strings(self, key: str) -> Tuple[str, ...]:
        return self.sequence(key, lambda item: _item(self, key, item, str, "strings"))

    def str_map(self, key: str) -> Dict[str, str]:
        return self._map(key, str, "strings")

    def num_map(self, key: str, kind: type) -> Dict[str, Any]:
        return self._map(key, kind, "numbers")

    def _map(self, key: str, kind: type, expected: str) -> Dict[str, Any]:
        value = self._value(key)
        if not isinstance(value, dict):
            raise self._wrong(key, value, "an object")
        return {k: _item(self, key, v, kind, expected) for k, v in value.items()}


def _item(reader: _Reader, key: str, value: Any, kind: type, expected: str) -> Any:
    """One element of a list or map field, checked against ``kind``."""
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok:
        raise reader._fail(key, f"expected {expected}, got an element that is {_kind(value)}")
    return float(value) if kind is float else value


def _kind(value: Any) -> str:
    """A JSON-ish name for a value's type, for error messages."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _raw() -> Any:
    """The ``raw`` field: kept for inspection, left out of equality and repr."""
    return field(default_factory=dict, compare=False, repr=False)


# ---- input ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One conversation turn to store. ``role`` is ``user``, ``assistant`` or ``other``.

    ``key`` makes the turn idempotent per user (sending it again stores nothing);
    ``time`` defaults to when the server receives it.
    """

    role: str
    text: str
    speaker: Optional[str] = None
    time: Optional[TimeLike] = None
    key: Optional[str] = None
    metadata: Optional[Mapping[str, str]] = None

    def to_json(self) -> Json:
        """The wire form, leaving out what is unset so the server's defaults apply."""
        body: Json = {"role": self.role, "text": self.text}
        if self.speaker is not None:
            body["speaker"] = self.speaker
        if self.time is not None:
            body["time"] = format_time(self.time)
        if self.key is not None:
            body["key"] = self.key
        if self.metadata is not None:
            body["metadata"] = dict(self.metadata)
        return body


# ---- results -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Moment:
    """When something happened: the UTC time as the server wrote it, and the round number."""

    time: str
    round: int

    @property
    def datetime(self) -> _dt.datetime:
        """``time`` as an aware ``datetime``."""
        return parse_time(self.time)

    @classmethod
    def from_json(cls, data: Any) -> "Moment":
        r = _Reader(data, cls.__name__)
        return cls(time=r.string("time"), round=r.integer("round"))


@dataclass(frozen=True)
class Forgotten:
    """Why and when a memory was forgotten."""

    reason: str
    at: Moment

    @classmethod
    def from_json(cls, data: Any) -> "Forgotten":
        r = _Reader(data, cls.__name__)
        return cls(reason=r.string("reason"), at=r.obj("at", Moment.from_json))


@dataclass(frozen=True)
class Memory:
    """One memory: a stored turn or something derived (summary, persona…)."""

    id: str
    kind: str
    text: str
    agent: str
    session: str
    created: Moment
    state: str
    version: int
    provenance: Tuple[str, ...]
    metadata: Dict[str, str]
    forgotten: Optional[Forgotten] = None
    raw: Json = _raw()

    @property
    def is_active(self) -> bool:
        return self.state == "active"

    @classmethod
    def from_json(cls, data: Any) -> "Memory":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            kind=r.string("kind"),
            text=r.string("text"),
            agent=r.string("agent"),
            session=r.string("session"),
            created=r.obj("created", Moment.from_json),
            state=r.string("state"),
            version=r.integer("version"),
            provenance=r.strings("provenance"),
            metadata=r.str_map("metadata"),
            forgotten=r.opt_obj("forgotten", Forgotten.from_json),
            raw=r.data,
        )


@dataclass(frozen=True)
class AddedTurn:
    """What happened to one sent turn: ``added`` (with its ``memory_id``) or ``duplicate``."""

    turn_id: str
    round: int
    status: str
    memory_id: Optional[str] = None

    @property
    def is_duplicate(self) -> bool:
        return self.status == "duplicate"

    @classmethod
    def from_json(cls, data: Any) -> "AddedTurn":
        r = _Reader(data, cls.__name__)
        return cls(
            turn_id=r.string("turn_id"),
            round=r.integer("round"),
            status=r.string("status"),
            memory_id=r.opt_string("memory_id"),
        )


@dataclass(frozen=True)
class JobError:
    """A derived job that failed; ``stuck`` once it gave up and needs an explicit retry."""

    job_id: str
    message: str
    stuck: bool

    @classmethod
    def from_json(cls, data: Any) -> "JobError":
        r = _Reader(data, cls.__name__)
        return cls(job_id=r.string("job_id"), message=r.string("message"), stuck=r.boolean("stuck"))


@dataclass(frozen=True)
class JobReport:
    """The derived work a request ran (summaries, persona updates…) and what it changed."""

    ran: int
    failed: int
    memories_created: int
    memories_updated: int
    memories_forgotten: int
    errors: Tuple[JobError, ...]
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Any) -> "JobReport":
        r = _Reader(data, cls.__name__)
        return cls(
            ran=r.integer("ran"),
            failed=r.integer("failed"),
            memories_created=r.integer("memories_created"),
            memories_updated=r.integer("memories_updated"),
            memories_forgotten=r.integer("memories_forgotten"),
            errors=r.sequence("errors", JobError.from_json),
            raw=r.data,
        )


@dataclass(frozen=True)
class AddResult:
    """The answer to :meth:`Client.add_turns`: one entry per sent turn, in order."""

    turns: Tuple[AddedTurn, ...]
    jobs_enqueued: int
    jobs: JobReport
    raw: Json = _raw()

    @property
    def added(self) -> Tuple[AddedTurn, ...]:
        return tuple(t for t in self.turns if not t.is_duplicate)

    @property
    def duplicates(self) -> Tuple[AddedTurn, ...]:
        return tuple(t for t in self.turns if t.is_duplicate)

    @property
    def memory_ids(self) -> Tuple[str, ...]:
        """The new memories' ids (duplicates have none)."""
        return tuple(t.memory_id for t in self.turns if t.memory_id is not None)

    @classmethod
    def from_json(cls, data: Any) -> "AddResult":
        r = _Reader(data, cls.__name__)
        return cls(
            turns=r.sequence("turns", AddedTurn.from_json),
            jobs_enqueued=r.integer("jobs_enqueued"),
            jobs=r.obj("jobs", JobReport.from_json),
            raw=r.data,
        )


@dataclass(frozen=True)
class SearchHit:
    """One ranked memory with its score, size and why it ranked there."""

    memory: Memory
    score: float
    tokens: int
    explanation: Tuple[str, ...]
    matched_terms: Tuple[str, ...]

    @classmethod
    def from_json(cls, data: Any) -> "SearchHit":
        r = _Reader(data, cls.__name__)
        return cls(
            memory=r.obj("memory", Memory.from_json),
            score=r.number("score"),
            tokens=r.integer("tokens"),
            explanation=r.strings("explanation"),
            matched_terms=r.strings("matched_terms"),
        )


@dataclass(frozen=True)
class SearchResult:
    """The answer to :meth:`Client.search`; iterating it yields the hits."""

    hits: Tuple[SearchHit, ...]
    query_terms: Tuple[str, ...]
    candidates: int
    raw: Json = _raw()

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @classmethod
    def from_json(cls, data: Any) -> "SearchResult":
        r = _Reader(data, cls.__name__)
        return cls(
            hits=r.sequence("hits", SearchHit.from_json),
            query_terms=r.strings("query_terms"),
            candidates=r.integer("candidates"),
            raw=r.data,
        )


@dataclass(frozen=True)
class RecallItem:
    """One piece of recalled context, with the section it went into and its score parts."""

    memory_id: str
    kind: str
    section: str
    text: str
    score: float
    tokens: int
    created: Moment
    provenance: Tuple[str, ...]
    score_parts: Dict[str, float]

    @classmethod
    def from_json(cls, data: Any) -> "RecallItem":
        r = _Reader(data, cls.__name__)
        return cls(
            memory_id=r.string("memory_id"),
            kind=r.string("kind"),
            section=r.string("section"),
            text=r.string("text"),
            score=r.number("score"),
            tokens=r.integer("tokens"),
            created=r.obj("created", Moment.from_json),
            provenance=r.strings("provenance"),
            score_parts=r.num_map("score_parts", float),
        )


@dataclass(frozen=True)
class RecallResult:
    """The agent preset's context within the budget; ``text`` goes into the prompt."""

    preset: str
    text: str
    tokens: int
    items: Tuple[RecallItem, ...]
    notes: Tuple[str, ...]
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Any) -> "RecallResult":
        r = _Reader(data, cls.__name__)
        return cls(
            preset=r.string("preset"),
            text=r.string("text"),
            tokens=r.integer("tokens"),
            items=r.sequence("items", RecallItem.from_json),
            notes=r.strings("notes"),
            raw=r.data,
        )


@dataclass(frozen=True)
class MemoryPage:
    """One page of :meth:`Client.list_memories`; ``next_cursor`` is None on the last page."""

    memories: Tuple[Memory, ...]
    total: int
    next_cursor: Optional[str] = None
    raw: Json = _raw()

    def __iter__(self) -> Iterator[Memory]:
        return iter(self.memories)

    def __len__(self) -> int:
        return len(self.memories)

    @classmethod
    def from_json(cls, data: Any) -> "MemoryPage":
        r = _Reader(data, cls.__name__)
        return cls(
            memories=r.sequence("memories", Memory.from_json),
            total=r.integer("total"),
            next_cursor=r.opt_string("next_cursor"),
            raw=r.data,
        )


@dataclass(frozen=True)
class ForgetResult:
    """The forgotten memory; ``already_forgotten`` when it was before (the first reason
    stands); ``derived_forgotten`` counts what was derived from it and forgotten too."""

    memory: Memory
    already_forgotten: bool
    derived_forgotten: int
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Any) -> "ForgetResult":
        r = _Reader(data, cls.__name__)
        return cls(
            memory=r.obj("memory", Memory.from_json),
            already_forgotten=r.boolean("already_forgotten"),
            derived_forgotten=r.integer("derived_forgotten"),
            raw=r.data,
        )


@dataclass(frozen=True)
class HistoryEntry:
    """One version of a memory: ``change`` is created, updated, forgotten or restored."""

    version: int
    at: Moment
    change: str
    text: str
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "HistoryEntry":
        r = _Reader(data, cls.__name__)
        return cls(
            version=r.integer("version"),
            at=r.obj("at", Moment.from_json),
            change=r.string("change"),
            text=r.string("text"),
            reason=r.opt_string("reason"),
        )


@dataclass(frozen=True)
class PurgeResult:
    """How much of a user was erased."""

    turns: int
    memories: int
    history_entries: int
    vectors: int

    @classmethod
    def from_json(cls, data: Any) -> "PurgeResult":
        r = _Reader(data, cls.__name__)
        return cls(
            turns=r.integer("turns"),
            memories=r.integer("memories"),
            history_entries=r.integer("history_entries"),
            vectors=r.integer("vectors"),
        )


@dataclass(frozen=True)
class Stats:
    """The agent's preset and its active memories by kind."""

    preset: str
    memories: Dict[str, int]

    @classmethod
    def from_json(cls, data: Any) -> "Stats":
        r = _Reader(data, cls.__name__)
        return cls(preset=r.string("preset"), memories=r.num_map("memories", int))


@dataclass(frozen=True)
class PresetParam:
    """One preset parameter with its default (as text) and what it does."""

    name: str
    default: str
    doc: str

    @classmethod
    def from_json(cls, data: Any) -> "PresetParam":
        r = _Reader(data, cls.__name__)
        return cls(name=r.string("name"), default=r.string("default"), doc=r.string("doc"))


@dataclass(frozen=True)
class Preset:
    """A memory preset (mechanism) the server offers."""

    name: str
    summary: str
    params: Tuple[PresetParam, ...]

    @classmethod
    def from_json(cls, data: Any) -> "Preset":
        r = _Reader(data, cls.__name__)
        return cls(
            name=r.string("name"),
            summary=r.string("summary"),
            params=r.sequence("params", PresetParam.from_json),
        )


@dataclass(frozen=True)
class Job:
    """A derived job that is ``pending``, ``failed`` or ``stuck``."""

    id: str
    state: str
    preset: str
    kind: str
    agent: str
    session: str
    created: Moment
    attempts: int
    last_error: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "Job":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            state=r.string("state"),
            preset=r.string("preset"),
            kind=r.string("kind"),
            agent=r.string("agent"),
            session=r.string("session"),
            created=r.obj("created", Moment.from_json),
            attempts=r.integer("attempts"),
            last_error=r.opt_string("last_error"),
        )


@dataclass(frozen=True)
class View:
    """A preset's view of a user's memories (``persona`` or ``timeline``) as text."""

    view: str
    text: str

    @classmethod
    def from_json(cls, data: Any) -> "View":
        r = _Reader(data, cls.__name__)
        return cls(view=r.string("view"), text=r.string("text"))


@dataclass(frozen=True)
class Health:
    """``ok`` from ``/healthz``, ``ready`` from ``/readyz``."""

    status: str

    @classmethod
    def from_json(cls, data: Any) -> "Health":
        r = _Reader(data, cls.__name__)
        return cls(status=r.string("status"))


@dataclass(frozen=True)
class ApiKey:
    """An API key as the admin routes list it: never its secret, only ``prefix`` (the
    secret's first characters), which is enough to tell keys apart in a log or a vault.

    ``created`` and ``revoked`` are the server's ISO 8601 UTC strings; ``revoked`` is None
    while the key works. Revoked keys stay listed, so an audit can see when access ended.
    """

    id: str
    tenant: str
    name: str
    prefix: str
    created: str
    revoked: Optional[str] = None
    raw: Json = _raw()

    @property
    def is_active(self) -> bool:
        return self.revoked is None

    @property
    def created_at(self) -> _dt.datetime:
        """``created`` as an aware ``datetime``."""
        return parse_time(self.created)

    @property
    def revoked_at(self) -> Optional[_dt.datetime]:
        """``revoked`` as an aware ``datetime``, or None while the key works."""
        return None if self.revoked is None else parse_time(self.revoked)

    @classmethod
    def from_json(cls, data: Any) -> "ApiKey":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            tenant=r.string("tenant"),
            name=r.string("name"),
            prefix=r.string("prefix"),
            created=r.string("created"),
            revoked=r.opt_string("revoked"),
            raw=r.data,
        )


@dataclass(frozen=True)
class CreatedKey:
    """A key just made by :meth:`Client.create_key`: the :class:`ApiKey` fields and the
    ``secret`` to send as ``Authorization: Bearer``. The server stores only its hash, so
    this is the one time it can be read: keep it. The secret is left out of ``repr`` (and
    ``raw``) so that logging the result does not leak it."""

    id: str
    tenant: str
    name: str
    prefix: str
    created: str
    secret: str = field(repr=False)
    revoked: Optional[str] = None
    raw: Json = _raw()

    @property
    def key(self) -> ApiKey:
        """The key without its secret, as :meth:`Client.list_keys` shows it."""
        return ApiKey(self.id, self.tenant, self.name, self.prefix, self.created,
                      self.revoked, raw=self.raw)

    @classmethod
    def from_json(cls, data: Any) -> "CreatedKey":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            tenant=r.string("tenant"),
            name=r.string("name"),
            prefix=r.string("prefix"),
            created=r.string("created"),
            secret=r.string("secret"),
            revoked=r.opt_string("revoked"),
            raw={k: v for k, v in r.data.items() if k != "secret"},
        )


def list_of(parse: Callable[[Any], T], owner: str) -> Callable[[Any], List[T]]:
    """A parser for a top-level JSON list (history, jobs, presets)."""

    def parse_list(data: Any) -> List[T]:
        if not isinstance(data, list):
            raise UnexpectedResponse(
                0, "unexpected_response", f"{owner}: expected a JSON list, got {_kind(data)}"
            )
        return [parse(item) for item in data]

    return parse_list
