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
    Literal,
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
    "ForgetCause",
    "Forgotten",
    "Scores",
    "Memory",
    "AddedTurn",
    "JobError",
    "JobReport",
    "AddResult",
    "Signal",
    "Hop",
    "RankerFeature",
    "Ranker",
    "Adjustment",
    "Breakdown",
    "SearchHit",
    "SearchResult",
    "RecallItem",
    "RecallResult",
    "MemoryPage",
    "ForgetResult",
    "SelectedBy",
    "ForgetCandidate",
    "ForgetMatchResult",
    "HistoryEntry",
    "Access",
    "AccessLog",
    "StoredTurn",
    "TurnContext",
    "StateCounts",
    "JobCounts",
    "Overview",
    "RetentionPoint",
    "Retention",
    "PurgeResult",
    "AgentStats",
    "Stats",
    "PresetParam",
    "Preset",
    "Job",
    "PersonaValue",
    "PersonaKey",
    "TimelineNode",
    "ChainNode",
    "Chain",
    "Calibration",
    "Chains",
    "ViewData",
    "View",
    "Health",
    "ApiKey",
    "CreatedKey",
    "format_time",
]

T = TypeVar("T")
Json = Dict[str, Any]
TimeLike = Union[str, _dt.datetime]
ForgetCause = Literal["request", "preset", "derived"]
"""Who forgot a memory: a caller's ``request``, the ``preset``'s policy, or ``derived``
(forgotten along with the memory it was derived from)."""


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

    def opt_number(self, key: str) -> Optional[float]:
        if self.data.get(key) is None:
            return None
        return self.number(key)

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

    def numbers(self, key: str) -> Tuple[float, ...]:
        return self.sequence(key, lambda item: _item(self, key, item, float, "numbers"))

    def obj_map(self, key: str, parse: Callable[[Any], T]) -> Dict[str, T]:
        value = self._value(key)
        if not isinstance(value, dict):
            raise self._wrong(key, value, "an object")
        return {k: parse(v) for k, v in value.items()}

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
    """Why, when and by whom a memory was forgotten. ``by`` is ``request`` (a caller),
    ``preset`` (the policy of the preset named in ``preset``) or ``derived`` (taken along
    when ``source``, the memory it was derived from, was forgotten); None only from a
    server that predates the field."""

    reason: str
    at: Moment
    by: Optional[ForgetCause] = None
    preset: Optional[str] = None
    source: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "Forgotten":
        r = _Reader(data, cls.__name__)
        by: Optional[Any] = r.opt_string("by")
        return cls(
            reason=r.string("reason"),
            at=r.obj("at", Moment.from_json),
            by=by,
            preset=r.opt_string("preset"),
            source=r.opt_string("source"),
        )


@dataclass(frozen=True)
class Scores:
    """Numbers presets attach to a memory; each is None when the preset sets none.
    ``extra`` holds a preset's own numbers by name."""

    importance: Optional[float] = None
    strength: Optional[float] = None
    inhibition: Optional[float] = None
    extra: Dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Scores":
        r = _Reader(data, cls.__name__)
        return cls(
            importance=r.opt_number("importance"),
            strength=r.opt_number("strength"),
            inhibition=r.opt_number("inhibition"),
            extra=r.num_map("extra", float) if r.data.get("extra") is not None else {},
        )


@dataclass(frozen=True)
class Memory:
    """One memory: a stored turn or something derived (summary, persona…).

    ``valid_from`` / ``valid_to`` say when it held (``valid_to`` is None while it does);
    ``superseded_by`` names the memory that replaced it (a later statement of a new value),
    ``times_said`` / ``last_said`` how often and when its fact was stated (a repeat reinforces
    a memory instead of adding an equal one);
    ``access_count`` and ``last_access`` count its retrievals that kept an access record
    (see :meth:`Client.access_log`). These fields are read when the server sends them and
    keep their defaults otherwise, so the client still reads an older server's memories.
    """

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
    valid_from: Optional[str] = None
    valid_to: Optional[str] = None
    superseded_by: Optional[str] = None
    times_said: int = 1
    last_said: Optional[str] = None
    scores: Scores = field(default_factory=Scores)
    access_count: int = 0
    last_access: Optional[Moment] = None
    raw: Json = _raw()

    @property
    def is_active(self) -> bool:
        return self.state == "active"

    @property
    def is_current(self) -> bool:
        """Still true now: no end of validity (a superseded memory has one)."""
        return self.valid_to is None

    @property
    def valid_from_at(self) -> Optional[_dt.datetime]:
        """``valid_from`` as an aware ``datetime``."""
        return None if self.valid_from is None else parse_time(self.valid_from)

    @property
    def valid_to_at(self) -> Optional[_dt.datetime]:
        """``valid_to`` as an aware ``datetime``, or None while the memory holds."""
        return None if self.valid_to is None else parse_time(self.valid_to)

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
            valid_from=r.opt_string("valid_from"),
            valid_to=r.opt_string("valid_to"),
            superseded_by=r.opt_string("superseded_by"),
            times_said=r.integer("times_said") if r.data.get("times_said") is not None else 1,
            last_said=r.opt_string("last_said"),
            scores=r.opt_obj("scores", Scores.from_json) or Scores(),
            access_count=r.integer("access_count") if "access_count" in r.data else 0,
            last_access=r.opt_obj("last_access", Moment.from_json),
            raw=r.data,
        )


@dataclass(frozen=True)
class AddedTurn:
    """What happened to one sent turn: ``added`` (with its new ``memory_id``) or ``duplicate``
    (with the ``memory_id`` its turn got the first time)."""

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
class FactChange:
    """What a new turn did to an earlier memory: ``kind`` is ``"superseded"`` (a new value
    replaced it), ``"ended"`` (a negation), ``"corrected"``, ``"reinforced"`` (said again) or
    ``"turn_superseded"`` (a turn all of whose facts were replaced); ``by`` is the memory that
    did it."""

    kind: str
    memory_id: str
    by: str

    @classmethod
    def from_json(cls, data: Any) -> "FactChange":
        r = _Reader(data, cls.__name__)
        return cls(kind=r.string("kind"), memory_id=r.string("memory_id"), by=r.string("by"))


@dataclass(frozen=True)
class AddResult:
    """The answer to :meth:`Client.add_turns`: one entry per sent turn, in order, and
    ``changes``: the earlier memories the new turns superseded, ended, corrected or
    reinforced (empty from a server without it)."""

    turns: Tuple[AddedTurn, ...]
    jobs_enqueued: int
    jobs: JobReport
    changes: Tuple[FactChange, ...] = ()
    raw: Json = _raw()

    @property
    def added(self) -> Tuple[AddedTurn, ...]:
        return tuple(t for t in self.turns if not t.is_duplicate)

    @property
    def duplicates(self) -> Tuple[AddedTurn, ...]:
        return tuple(t for t in self.turns if t.is_duplicate)

    @property
    def memory_ids(self) -> Tuple[str, ...]:
        """The new memories' ids (a duplicate's memory was made before, so it is not here)."""
        return tuple(t.memory_id for t in self.added if t.memory_id is not None)

    @classmethod
    def from_json(cls, data: Any) -> "AddResult":
        r = _Reader(data, cls.__name__)
        return cls(
            turns=r.sequence("turns", AddedTurn.from_json),
            jobs_enqueued=r.integer("jobs_enqueued"),
            jobs=r.obj("jobs", JobReport.from_json),
            changes=r.sequence("changes", FactChange.from_json) if "changes" in r.data else (),
            raw=r.data,
        )


@dataclass(frozen=True)
class Signal:
    """One generator's view of a hit: its score (BM25, or cosine) and its rank (1 = first)."""

    score: float
    rank: int

    @classmethod
    def from_json(cls, data: Any) -> "Signal":
        r = _Reader(data, cls.__name__)
        return cls(score=r.number("score"), rank=r.integer("rank"))


@dataclass(frozen=True)
class Hop:
    """What another memory (``via``, the one that lent most) added to a hit's score."""

    via: str
    added: float

    @classmethod
    def from_json(cls, data: Any) -> "Hop":
        r = _Reader(data, cls.__name__)
        return cls(via=r.string("via"), added=r.number("added"))


@dataclass(frozen=True)
class RankerFeature:
    """A feature that moved the learned ranker's estimate: ``contribution`` = weight × value."""

    name: str
    contribution: float

    @classmethod
    def from_json(cls, data: Any) -> "RankerFeature":
        r = _Reader(data, cls.__name__)
        return cls(name=r.string("name"), contribution=r.number("contribution"))


@dataclass(frozen=True)
class Ranker:
    """What the learned ranker saw (``features``, in its feature order) and concluded
    (``probability``, the score after this stage); ``strongest`` first."""

    probability: float
    features: Tuple[float, ...]
    strongest: Tuple[RankerFeature, ...]

    @classmethod
    def from_json(cls, data: Any) -> "Ranker":
        r = _Reader(data, cls.__name__)
        return cls(
            probability=r.number("probability"),
            features=r.numbers("features"),
            strongest=r.sequence("strongest", RankerFeature.from_json),
        )


@dataclass(frozen=True)
class Adjustment:
    """A re-ranker's change: the ``value`` it used (e.g. importance 0.8) and the ``delta``."""

    name: str
    value: float
    delta: float

    @classmethod
    def from_json(cls, data: Any) -> "Adjustment":
        r = _Reader(data, cls.__name__)
        return cls(name=r.string("name"), value=r.number("value"), delta=r.number("delta"))


@dataclass(frozen=True)
class Breakdown:
    """A hit's score as numbers. ``lexical`` / ``dense`` are None when that generator did
    not find it; ``second_hop``, ``context``, ``speaker`` and ``date`` (None when they
    added nothing) are included in ``fused``; ``final`` = ``fused`` + every adjustment's
    ``delta`` = the hit's score."""

    fused: float
    adjustments: Tuple[Adjustment, ...]
    final: float
    lexical: Optional[Signal] = None
    dense: Optional[Signal] = None
    second_hop: Optional[Hop] = None
    context: Optional[Hop] = None
    speaker: Optional[float] = None
    date: Optional[float] = None
    ranker: Optional[Ranker] = None
    #: Why the hit has its relevance: the relevance model's features and the strongest ones.
    relevance: Optional[Ranker] = None

    @classmethod
    def from_json(cls, data: Any) -> "Breakdown":
        r = _Reader(data, cls.__name__)
        return cls(
            fused=r.number("fused"),
            adjustments=r.sequence("adjustments", Adjustment.from_json),
            final=r.number("final"),
            lexical=r.opt_obj("lexical", Signal.from_json),
            dense=r.opt_obj("dense", Signal.from_json),
            second_hop=r.opt_obj("second_hop", Hop.from_json),
            context=r.opt_obj("context", Hop.from_json),
            speaker=r.opt_number("speaker"),
            date=r.opt_number("date"),
            ranker=r.opt_obj("ranker", Ranker.from_json),
            relevance=r.opt_obj("relevance", Ranker.from_json),
        )


@dataclass(frozen=True)
class SearchHit:
    """One ranked memory with its score, size and why it ranked there: as lines in
    ``explanation`` and as numbers in ``breakdown`` (None from a server without it).
    ``relevance`` (0 to 1) means the same across queries (``score`` orders one query's hits
    only); ``superseded`` marks a memory a later statement replaced (returned only when asked
    for, with ``include_superseded`` or ``as_of``)."""

    memory: Memory
    score: float
    tokens: int
    explanation: Tuple[str, ...]
    matched_terms: Tuple[str, ...]
    breakdown: Optional[Breakdown] = None
    relevance: Optional[float] = None
    superseded: bool = False

    @classmethod
    def from_json(cls, data: Any) -> "SearchHit":
        r = _Reader(data, cls.__name__)
        return cls(
            memory=r.obj("memory", Memory.from_json),
            score=r.number("score"),
            tokens=r.integer("tokens"),
            explanation=r.strings("explanation"),
            matched_terms=r.strings("matched_terms"),
            breakdown=r.opt_obj("breakdown", Breakdown.from_json),
            relevance=r.opt_number("relevance"),
            superseded=bool(r.data.get("superseded", False)),
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


SelectedBy = Literal["relevance", "topic", "replaced"]
"""Why a forget by description selected a memory: its ``relevance`` to the description
reached the floor; the rules of forget requests name it (``topic``: the description's words or
their synonyms, the fact of the slot it names, a value repeated); or a selected memory
``replaced`` it (an earlier value of the same fact)."""


@dataclass(frozen=True)
class ForgetCandidate:
    """A memory a forget by description selected: ``memory`` (in its forgotten state once
    confirmed), ``selected_by`` (see :data:`SelectedBy`), ``superseded`` (a later statement
    replaced it) and ``relevance`` (0 to 1; None when the search did not reach it)."""

    memory: Memory
    selected_by: str
    superseded: bool = False
    relevance: Optional[float] = None

    @classmethod
    def from_json(cls, data: Any) -> "ForgetCandidate":
        r = _Reader(data, cls.__name__)
        return cls(
            memory=r.obj("memory", Memory.from_json),
            selected_by=r.string("selected_by"),
            superseded=r.boolean("superseded"),
            relevance=r.opt_number("relevance"),
        )


@dataclass(frozen=True)
class ForgetMatchResult:
    """The answer to :meth:`Client.forget_matching`; iterating it yields the candidates.

    ``candidates`` are the memories selected, most relevant first: what would be forgotten
    (a dry run, ``confirmed`` False) or what was. ``derived`` counts the memories derived from
    them (summaries, facts…) that go with them; ``skipped`` holds the ``ids`` sent that were
    not selected, so not forgotten; ``truncated`` says more matched than ``limit``."""

    confirmed: bool
    candidates: Tuple[ForgetCandidate, ...]
    derived: int
    skipped: Tuple[str, ...]
    truncated: bool
    raw: Json = _raw()

    @property
    def ids(self) -> Tuple[str, ...]:
        """The candidates' memory ids: pass them as ``ids`` to forget exactly these."""
        return tuple(c.memory.id for c in self.candidates)

    def __iter__(self) -> Iterator[ForgetCandidate]:
        return iter(self.candidates)

    def __len__(self) -> int:
        return len(self.candidates)

    @classmethod
    def from_json(cls, data: Any) -> "ForgetMatchResult":
        r = _Reader(data, cls.__name__)
        return cls(
            confirmed=r.boolean("confirmed"),
            candidates=r.sequence("candidates", ForgetCandidate.from_json),
            derived=r.integer("derived"),
            skipped=r.strings("skipped"),
            truncated=r.boolean("truncated"),
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
class Access:
    """One retrieval of a memory: when, and its ``rank`` in those results (1 = first)."""

    at: Moment
    rank: int

    @classmethod
    def from_json(cls, data: Any) -> "Access":
        r = _Reader(data, cls.__name__)
        return cls(at=r.obj("at", Moment.from_json), rank=r.integer("rank"))


@dataclass(frozen=True)
class AccessLog:
    """The answer to :meth:`Client.access_log`: every recorded retrieval of a memory,
    newest first; iterating it yields the :class:`Access` entries."""

    accesses: Tuple[Access, ...]
    total: int
    raw: Json = _raw()

    def __iter__(self) -> Iterator[Access]:
        return iter(self.accesses)

    def __len__(self) -> int:
        return len(self.accesses)

    @classmethod
    def from_json(cls, data: Any) -> "AccessLog":
        r = _Reader(data, cls.__name__)
        return cls(
            accesses=r.sequence("accesses", Access.from_json),
            total=r.integer("total"),
            raw=r.data,
        )


@dataclass(frozen=True)
class StoredTurn:
    """A turn as the server stored it (:class:`Turn` is what you send). ``memory_id`` is
    the turn's own memory, when it has one; ``speaker`` is None when none was given."""

    id: str
    agent: str
    session: str
    role: str
    text: str
    at: Moment
    metadata: Dict[str, str]
    speaker: Optional[str] = None
    memory_id: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "StoredTurn":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            agent=r.string("agent"),
            session=r.string("session"),
            role=r.string("role"),
            text=r.string("text"),
            at=r.obj("at", Moment.from_json),
            metadata=r.str_map("metadata"),
            speaker=r.opt_string("speaker"),
            memory_id=r.opt_string("memory_id"),
        )


@dataclass(frozen=True)
class TurnContext:
    """The answer to :meth:`Client.get_turn`: the turn and the turns of its agent and
    session said just before and after it (both oldest first)."""

    turn: StoredTurn
    before: Tuple[StoredTurn, ...]
    after: Tuple[StoredTurn, ...]
    raw: Json = _raw()

    @property
    def turns(self) -> Tuple[StoredTurn, ...]:
        """``before``, the turn and ``after`` in the order they were said."""
        return (*self.before, self.turn, *self.after)

    @classmethod
    def from_json(cls, data: Any) -> "TurnContext":
        r = _Reader(data, cls.__name__)
        return cls(
            turn=r.obj("turn", StoredTurn.from_json),
            before=r.sequence("before", StoredTurn.from_json),
            after=r.sequence("after", StoredTurn.from_json),
            raw=r.data,
        )


@dataclass(frozen=True)
class StateCounts:
    """How many memories of a kind are active and forgotten."""

    active: int
    forgotten: int

    @property
    def total(self) -> int:
        return self.active + self.forgotten

    @classmethod
    def from_json(cls, data: Any) -> "StateCounts":
        r = _Reader(data, cls.__name__)
        return cls(active=r.integer("active"), forgotten=r.integer("forgotten"))


@dataclass(frozen=True)
class JobCounts:
    """A user's unfinished derived jobs by state."""

    pending: int
    failed: int
    stuck: int

    @classmethod
    def from_json(cls, data: Any) -> "JobCounts":
        r = _Reader(data, cls.__name__)
        return cls(pending=r.integer("pending"), failed=r.integer("failed"),
                   stuck=r.integer("stuck"))


@dataclass(frozen=True)
class Overview:
    """One user at a glance: ``sessions`` counts distinct (agent, session) pairs;
    ``memories`` maps every kind with a memory to its counts by state;
    ``last_activity`` is None when nothing happened yet."""

    user: str
    turns: int
    sessions: int
    agents: Tuple[str, ...]
    memories: Dict[str, StateCounts]
    jobs: JobCounts
    last_activity: Optional[Moment] = None
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Any) -> "Overview":
        r = _Reader(data, cls.__name__)
        return cls(
            user=r.string("user"),
            turns=r.integer("turns"),
            sessions=r.integer("sessions"),
            agents=r.strings("agents"),
            memories=r.obj_map("memories", StateCounts.from_json),
            jobs=r.obj("jobs", JobCounts.from_json),
            last_activity=r.opt_obj("last_activity", Moment.from_json),
            raw=r.data,
        )


@dataclass(frozen=True)
class RetentionPoint:
    """Memories up to one round, cumulative: ``active`` = ``created`` - ``forgotten``."""

    round: int
    active: int
    created: int
    forgotten: int

    @classmethod
    def from_json(cls, data: Any) -> "RetentionPoint":
        r = _Reader(data, cls.__name__)
        return cls(
            round=r.integer("round"),
            active=r.integer("active"),
            created=r.integer("created"),
            forgotten=r.integer("forgotten"),
        )


@dataclass(frozen=True)
class Retention:
    """The answer to :meth:`Client.retention`: ``series`` has a point per round where
    something changed (thinned to ``points``, first and last kept); ``forgotten_by``
    counts forgotten memories by cause: ``request``, ``derived`` or a preset's name."""

    last_round: int
    series: Tuple[RetentionPoint, ...]
    forgotten_by: Dict[str, int]
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Any) -> "Retention":
        r = _Reader(data, cls.__name__)
        return cls(
            last_round=r.integer("last_round"),
            series=r.sequence("series", RetentionPoint.from_json),
            forgotten_by=r.num_map("forgotten_by", int),
            raw=r.data,
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
class AgentStats:
    """One agent's preset and its active memories by kind."""

    preset: str
    memories: Dict[str, int]

    @classmethod
    def from_json(cls, data: Any) -> "AgentStats":
        r = _Reader(data, cls.__name__)
        return cls(preset=r.string("preset"), memories=r.num_map("memories", int))


@dataclass(frozen=True)
class Stats:
    """Active memories by kind: one agent's with its ``preset``, or, when no agent was named,
    every agent's together, with each agent's own in ``agents``."""

    memories: Dict[str, int]
    preset: Optional[str] = None
    agents: Dict[str, AgentStats] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> "Stats":
        r = _Reader(data, cls.__name__)
        agents = r.obj_map("agents", AgentStats.from_json) if "agents" in r.data else {}
        return cls(memories=r.num_map("memories", int), preset=r.opt_string("preset"),
                   agents=agents)


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
class PersonaValue:
    """One value a persona key holds or held; ``reason`` says why it left the sketch."""

    id: str
    value: str
    said_round: int
    active: bool
    turns: int
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "PersonaValue":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            value=r.string("value"),
            said_round=r.integer("said_round"),
            active=r.boolean("active"),
            turns=r.integer("turns"),
            reason=r.opt_string("reason"),
        )


@dataclass(frozen=True)
class PersonaKey:
    """One key of one subject's persona sketch: its ``current`` values and earlier ones."""

    key: str
    current: Tuple[PersonaValue, ...]
    history: Tuple[PersonaValue, ...]
    subject: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "PersonaKey":
        r = _Reader(data, cls.__name__)
        return cls(
            key=r.string("key"),
            current=r.sequence("current", PersonaValue.from_json),
            history=r.sequence("history", PersonaValue.from_json),
            subject=r.opt_string("subject"),
        )


@dataclass(frozen=True)
class TimelineNode:
    """A node of the plot timeline (``level`` 1 = raw rounds, 2 and 3 = summaries) with
    the nodes it summarizes as ``children``."""

    id: str
    level: int
    from_round: int
    to_round: int
    active: bool
    turns: int
    text: str
    children: Tuple["TimelineNode", ...]
    from_time: Optional[str] = None
    to_time: Optional[str] = None
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "TimelineNode":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            level=r.integer("level"),
            from_round=r.integer("from_round"),
            to_round=r.integer("to_round"),
            active=r.boolean("active"),
            turns=r.integer("turns"),
            text=r.string("text"),
            children=r.sequence("children", TimelineNode.from_json),
            from_time=r.opt_string("from_time"),
            to_time=r.opt_string("to_time"),
            reason=r.opt_string("reason"),
        )


@dataclass(frozen=True)
class ChainNode:
    """One current node of a memory chain (M⁴); ``time`` is when its dialogue ended."""

    id: str
    time: str
    text: str
    categories: Tuple[str, ...]
    tokens: int
    compressions: int
    compression_final: bool
    calibrated_from: Tuple[str, ...]
    turns: int
    session: Optional[str] = None
    original_tokens: Optional[int] = None

    @classmethod
    def from_json(cls, data: Any) -> "ChainNode":
        r = _Reader(data, cls.__name__)
        return cls(
            id=r.string("id"),
            time=r.string("time"),
            text=r.string("text"),
            categories=r.strings("categories"),
            tokens=r.integer("tokens"),
            compressions=r.integer("compressions"),
            compression_final=r.boolean("compression_final"),
            calibrated_from=r.strings("calibrated_from"),
            turns=r.integer("turns"),
            session=r.opt_string("session"),
            original_tokens=r.integer("original_tokens") if r.data.get("original_tokens")
            is not None else None,
        )


@dataclass(frozen=True)
class Chain:
    """One category's chain of nodes."""

    category: str
    nodes: Tuple[ChainNode, ...]

    @classmethod
    def from_json(cls, data: Any) -> "Chain":
        r = _Reader(data, cls.__name__)
        return cls(category=r.string("category"), nodes=r.sequence("nodes", ChainNode.from_json))


@dataclass(frozen=True)
class Calibration:
    """A node (``stale``) superseded by a newer one of its chain."""

    stale: str
    stale_text: str
    categories: Tuple[str, ...]
    valid_to: Optional[str] = None
    superseded_by: Optional[str] = None

    @classmethod
    def from_json(cls, data: Any) -> "Calibration":
        r = _Reader(data, cls.__name__)
        return cls(
            stale=r.string("stale"),
            stale_text=r.string("stale_text"),
            categories=r.strings("categories"),
            valid_to=r.opt_string("valid_to"),
            superseded_by=r.opt_string("superseded_by"),
        )


@dataclass(frozen=True)
class Chains:
    """The ``chains`` view's data: a user's memory chains and the calibrations made."""

    chains: Tuple[Chain, ...]
    calibrations: Tuple[Calibration, ...]

    @classmethod
    def from_json(cls, data: Any) -> "Chains":
        r = _Reader(data, cls.__name__)
        return cls(
            chains=r.sequence("chains", Chain.from_json),
            calibrations=r.sequence("calibrations", Calibration.from_json),
        )


ViewData = Union[Tuple[PersonaKey, ...], Tuple[TimelineNode, ...], Chains, Any]
"""A view's ``data``: persona keys, timeline nodes, or :class:`Chains`; the JSON as sent
for a view this client does not know, None from a server without it."""


def _view_data(view: str, data: Any) -> ViewData:
    if data is None:
        return None
    if view == "persona":
        return tuple(PersonaKey.from_json(item) for item in _json_list(data, "View.data"))
    if view == "timeline":
        return tuple(TimelineNode.from_json(item) for item in _json_list(data, "View.data"))
    if view == "chains":
        return Chains.from_json(data)
    return data


def _json_list(data: Any, owner: str) -> List[Any]:
    if not isinstance(data, list):
        raise UnexpectedResponse(
            0, "unexpected_response", f"{owner}: expected a list, got {_kind(data)}"
        )
    return data


@dataclass(frozen=True)
class View:
    """A preset's view of a user's memories (``persona``, ``timeline`` or ``chains``) as
    ``text`` and as ``data``: a tuple of :class:`PersonaKey` for ``persona``, of
    :class:`TimelineNode` for ``timeline``, :class:`Chains` for ``chains``."""

    view: str
    text: str
    data: ViewData = None
    raw: Json = _raw()

    @classmethod
    def from_json(cls, data: Any) -> "View":
        r = _Reader(data, cls.__name__)
        view = r.string("view")
        return cls(view=view, text=r.string("text"), data=_view_data(view, r.data.get("data")),
                   raw=r.data)


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
