"""What both clients share: each API operation as a :class:`Call` (method, path, query,
body, headers and the parser for its answer), and turning an HTTP answer into a result or
an exception. The sync and async clients only differ in how they send a Call, so the wire
format lives in exactly one place.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)
from urllib.parse import quote

from ._version import __version__
from .errors import ConnectionError, MnemosError, UnexpectedResponse, error_from_response
from .models import (
    AccessLog,
    AddResult,
    ApiKey,
    CreatedKey,
    ForgetMatchResult,
    ForgetResult,
    Health,
    HistoryEntry,
    Job,
    JobReport,
    Memory,
    MemoryPage,
    Overview,
    Preset,
    PurgeResult,
    RecallResult,
    Retention,
    SearchResult,
    Stats,
    TimeLike,
    Turn,
    TurnContext,
    View,
    format_time,
    list_of,
)

T = TypeVar("T")
TurnLike = Union[Turn, Mapping[str, Any]]
Kinds = Union[str, Sequence[str]]
MemorySort = Literal["oldest", "newest", "importance"]
"""The orders :meth:`Client.list_memories` offers: ``oldest`` first (the server's default),
``newest`` first, or ``importance`` (highest first, memories without one last, ties newest
first)."""
Params = Dict[str, Union[str, List[str]]]

DEFAULT_URL = "http://127.0.0.1:8080"
URL_ENV = "MNEMOS_URL"
API_KEY_ENV = "MNEMOS_API_KEY"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, ready to send, and how to read its successful answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: Params = field(default_factory=dict)
    body: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)


# ---- configuration -------------------------------------------------------------------------


def resolve_base_url(base_url: Optional[str]) -> str:
    """The explicit URL, else ``$MNEMOS_URL``, else the server's default address. A trailing
    slash is dropped so paths join cleanly (a path prefix behind a proxy is kept)."""
    url = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
    return url.rstrip("/")


def resolve_api_key(api_key: Optional[str]) -> Optional[str]:
    """The explicit key, else ``$MNEMOS_API_KEY``; an empty value means no key."""
    key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
    return key or None


def default_headers(api_key: Optional[str]) -> Dict[str, str]:
    """Headers on every request; the key goes as ``Authorization: Bearer``."""
    headers = {"accept": "application/json", "user-agent": f"mnemos-client-python/{__version__}"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


# ---- building blocks -----------------------------------------------------------------------


def segment(value: str, what: str) -> str:
    """One path segment, percent-encoded whole: ``/``, spaces and non-ASCII (``李鱼``) stay
    inside the segment. ``.`` and ``..`` are encoded too, or URL normalisation would treat
    them as directory steps."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def user_path(user: str, *rest: str) -> str:
    """``/v1/users/{user}/…`` with every part encoded."""
    return "/".join(["/v1/users", segment(user, "user"), *rest])


def json_body(fields: Mapping[str, Any]) -> bytes:
    """A JSON object without the unset (None) fields: the server rejects nulls for some
    fields and applies its own defaults for absent ones. UTF-8, not ASCII escapes."""
    body = {k: v for k, v in fields.items() if v is not None}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def query(**params: Any) -> Params:
    """Query parameters without the unset ones, as strings; a list value becomes the
    parameter repeated once per item (``meta=a=1&meta=b=2``)."""
    return {
        k: [str(item) for item in v] if isinstance(v, list) else str(v)
        for k, v in params.items()
        if v is not None and v != []
    }


def json_headers(extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    headers = {"content-type": "application/json"}
    headers.update(extra or {})
    return headers


def turn_json(turn: TurnLike) -> Dict[str, Any]:
    """A turn's wire form: a :class:`Turn`, or a mapping sent as given (the server checks
    it), with a ``datetime`` time converted."""
    if isinstance(turn, Turn):
        return turn.to_json()
    if isinstance(turn, Mapping):
        data = dict(turn)
        if data.get("time") is not None:
            data["time"] = format_time(data["time"])
        return data
    raise TypeError(f"a turn is a Turn or a mapping, got {type(turn).__name__}")


def turns_json(turns: Union[TurnLike, Iterable[TurnLike]]) -> List[Dict[str, Any]]:
    """Every turn's wire form; one turn alone is accepted as a batch of one."""
    if isinstance(turns, (Turn, Mapping)):
        return [turn_json(turns)]
    if isinstance(turns, (str, bytes)):
        raise TypeError("turns must be Turn objects or mappings, not a string")
    return [turn_json(t) for t in turns]


def kinds_list(kinds: Optional[Kinds]) -> Optional[List[str]]:
    """Kinds as a list; a single string may hold several, comma-separated."""
    if kinds is None:
        return None
    if isinstance(kinds, str):
        return [k.strip() for k in kinds.split(",") if k.strip()]
    return list(kinds)


def meta_pairs(meta: Optional[Mapping[str, str]]) -> Optional[List[str]]:
    """A metadata filter as the server's repeated ``key=value`` strings. The server splits
    each at its first ``=``, so a key holding ``=`` could not be sent as meant and is
    refused here, as is an empty key (values may hold ``=`` and may be empty)."""
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a mapping of key to value, got {type(meta).__name__}")
    pairs = []
    for key, value in meta.items():
        if not isinstance(key, str) or not key or "=" in key:
            raise ValueError(f"a meta key must be a non-empty string without '=', got {key!r}")
        if not isinstance(value, str):
            raise TypeError(f"meta value for {key!r} must be a string, got {type(value).__name__}")
        pairs.append(f"{key}={value}")
    return pairs


def _time(value: Optional[TimeLike]) -> Optional[str]:
    return None if value is None else format_time(value)


#: A moment for ``as_of``: a ``date`` (the end of that day, UTC), a ``datetime``, or a string
#: the server reads (``"2024-03-02"`` or RFC 3339).
AsOf = Union[str, _dt.date, _dt.datetime]


def _as_of(value: Optional[AsOf]) -> Optional[str]:
    """An ``as_of`` as the server reads it: a ``date`` as ``YYYY-MM-DD`` (the end of that day,
    UTC), a ``datetime`` as RFC 3339, a string as given."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return value.isoformat()
    return format_time(value)


# ---- operations ----------------------------------------------------------------------------


def add_turns(
    user: str,
    turns: Union[TurnLike, Iterable[TurnLike]],
    agent: Optional[str],
    session: Optional[str],
    idempotency_key: Optional[str],
) -> Call[AddResult]:
    headers = {"idempotency-key": idempotency_key} if idempotency_key is not None else {}
    body = json_body({"agent": agent, "session": session, "turns": turns_json(turns)})
    return Call("POST", user_path(user, "turns"), AddResult.from_json,
                body=body, headers=json_headers(headers))


def end_session(user: str, session: str, agent: Optional[str]) -> Call[JobReport]:
    path = user_path(user, "sessions", segment(session, "session"), "end")
    return Call("POST", path, JobReport.from_json, params=query(agent=agent))


def recall(
    user: str,
    query_text: str,
    agent: Optional[str],
    budget: Optional[int],
    session: Optional[str],
    as_of: Optional[AsOf] = None,
    min_relevance: Optional[float] = None,
) -> Call[RecallResult]:
    body = json_body({
        "query": query_text,
        "agent": agent,
        "budget": budget,
        "session": session,
        "as_of": _as_of(as_of),
        "min_relevance": min_relevance,
    })
    return Call("POST", user_path(user, "recall"), RecallResult.from_json,
                body=body, headers=json_headers())


def search(
    user: str,
    query_text: str,
    top_k: Optional[int],
    budget: Optional[int],
    kinds: Optional[Kinds],
    agent: Optional[str],
    session: Optional[str],
    include_superseded: Optional[bool] = None,
    as_of: Optional[AsOf] = None,
    min_relevance: Optional[float] = None,
) -> Call[SearchResult]:
    body = json_body({
        "query": query_text,
        "top_k": top_k,
        "budget": budget,
        "kinds": kinds_list(kinds),
        "agent": agent,
        "session": session,
        "include_superseded": include_superseded,
        "as_of": _as_of(as_of),
        "min_relevance": min_relevance,
    })
    return Call("POST", user_path(user, "search"), SearchResult.from_json,
                body=body, headers=json_headers())


def list_memories(
    user: str,
    kind: Optional[Kinds],
    state: Optional[str],
    agent: Optional[str],
    session: Optional[str],
    since: Optional[TimeLike],
    until: Optional[TimeLike],
    limit: Optional[int],
    cursor: Optional[str],
    meta: Optional[Mapping[str, str]] = None,
    q: Optional[str] = None,
    sort: Optional[MemorySort] = None,
    current: Optional[bool] = None,
    as_of: Optional[AsOf] = None,
) -> Call[MemoryPage]:
    """``sort`` is sent as given: the server owns the list of orders and answers
    BadRequest for one it does not have."""
    kinds = kinds_list(kind)
    params = query(
        kind=",".join(kinds) if kinds else None,
        state=state,
        agent=agent,
        session=session,
        since=_time(since),
        until=_time(until),
        limit=limit,
        cursor=cursor,
        meta=meta_pairs(meta),
        q=q,
        sort=sort,
        current=None if current is None else ("true" if current else "false"),
        as_of=_as_of(as_of),
    )
    return Call("GET", user_path(user, "memories"), MemoryPage.from_json, params=params)


def get_memory(user: str, memory_id: str) -> Call[Memory]:
    path = user_path(user, "memories", segment(memory_id, "memory id"))
    return Call("GET", path, Memory.from_json)


def update_memory(
    user: str,
    memory_id: str,
    text: Optional[str],
    metadata: Optional[Mapping[str, str]],
) -> Call[Memory]:
    path = user_path(user, "memories", segment(memory_id, "memory id"))
    body = json_body({"text": text, "metadata": None if metadata is None else dict(metadata)})
    return Call("PATCH", path, Memory.from_json, body=body, headers=json_headers())


def forget(user: str, memory_id: str, reason: Optional[str]) -> Call[ForgetResult]:
    path = user_path(user, "memories", segment(memory_id, "memory id"))
    return Call("DELETE", path, ForgetResult.from_json, params=query(reason=reason))


def forget_matching(
    user: str,
    query_text: str,
    confirm: bool,
    reason: Optional[str],
    limit: Optional[int],
    agent: Optional[str],
    ids: Optional[Iterable[str]],
    min_relevance: Optional[float],
) -> Call[ForgetMatchResult]:
    """``ids`` go as a list; a lone string is refused (it would be sent as one id per
    character by a careless ``list()``)."""
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids must be an iterable of memory ids, not a string")
    body = json_body({
        "query": query_text,
        "reason": reason,
        "confirm": bool(confirm),
        "limit": limit,
        "agent": agent,
        "ids": None if ids is None else list(ids),
        "min_relevance": min_relevance,
    })
    return Call("POST", user_path(user, "forget"), ForgetMatchResult.from_json,
                body=body, headers=json_headers())


def history(user: str, memory_id: str) -> Call[List[HistoryEntry]]:
    path = user_path(user, "memories", segment(memory_id, "memory id"), "history")
    return Call("GET", path, list_of(HistoryEntry.from_json, "history"))


def access_log(user: str, memory_id: str) -> Call[AccessLog]:
    path = user_path(user, "memories", segment(memory_id, "memory id"), "access")
    return Call("GET", path, AccessLog.from_json)


def derived(user: str, memory_id: str) -> Call[List[Memory]]:
    path = user_path(user, "memories", segment(memory_id, "memory id"), "derived")
    return Call("GET", path, _derived_memories)


def get_turn(user: str, turn_id: str, around: Optional[int]) -> Call[TurnContext]:
    path = user_path(user, "turns", segment(turn_id, "turn id"))
    return Call("GET", path, TurnContext.from_json, params=query(around=around))


def overview(user: str) -> Call[Overview]:
    return Call("GET", user_path(user, "overview"), Overview.from_json)


def retention(user: str, agent: Optional[str], points: Optional[int]) -> Call[Retention]:
    params = query(agent=agent, points=points)
    return Call("GET", user_path(user, "retention"), Retention.from_json, params=params)


def purge_user(user: str) -> Call[PurgeResult]:
    return Call("DELETE", user_path(user), PurgeResult.from_json)


def users() -> Call[List[str]]:
    return Call("GET", "/v1/users", _user_names)


def stats(user: str, agent: Optional[str]) -> Call[Stats]:
    return Call("GET", user_path(user, "stats"), Stats.from_json, params=query(agent=agent))


def jobs(user: str) -> Call[List[Job]]:
    return Call("GET", user_path(user, "jobs"), list_of(Job.from_json, "jobs"))


def retry_job(user: str, job_id: str) -> Call[JobReport]:
    path = user_path(user, "jobs", segment(job_id, "job id"), "retry")
    return Call("POST", path, JobReport.from_json)


def view(user: str, name: str, agent: Optional[str]) -> Call[View]:
    """A view by name. Names other than persona/timeline/chains are sent anyway: the server owns
    the list and answers 404 for one it does not have."""
    path = user_path(user, "views", segment(name, "view name"))
    return Call("GET", path, View.from_json, params=query(agent=agent))


def presets() -> Call[List[Preset]]:
    return Call("GET", "/v1/presets", list_of(Preset.from_json, "presets"))


def health() -> Call[Health]:
    return Call("GET", "/healthz", Health.from_json)


def ready() -> Call[Health]:
    return Call("GET", "/readyz", Health.from_json)


# API keys: these routes take the admin key (the server's MNEMOS_ADMIN_KEY) and answer
# 403 to a tenant's key. The tenant and name go as given: the server owns their rules.


def create_key(tenant: str, name: Optional[str]) -> Call[CreatedKey]:
    body = json_body({"tenant": tenant, "name": name})
    return Call("POST", "/v1/keys", CreatedKey.from_json, body=body, headers=json_headers())


def list_keys(tenant: Optional[str]) -> Call[List[ApiKey]]:
    return Call("GET", "/v1/keys", list_of(ApiKey.from_json, "keys"), params=query(tenant=tenant))


def revoke_key(key_id: str) -> Call[ApiKey]:
    return Call("DELETE", "/v1/keys/" + segment(key_id, "key id"), ApiKey.from_json)


def _user_names(data: Any) -> List[str]:
    if not isinstance(data, dict) or not isinstance(data.get("users"), list):
        raise UnexpectedResponse(0, "unexpected_response", "users: expected {\"users\": [...]}")
    names = data["users"]
    if not all(isinstance(n, str) for n in names):
        raise UnexpectedResponse(0, "unexpected_response", "users: expected a list of strings")
    return list(names)


def _derived_memories(data: Any) -> List[Memory]:
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise UnexpectedResponse(
            0, "unexpected_response", "derived: expected {\"memories\": [...]}"
        )
    return [Memory.from_json(item) for item in data["memories"]]


# ---- answers -------------------------------------------------------------------------------


def read_response(call: Call[T], status: int, headers: Mapping[str, str], body: bytes) -> T:
    """The parsed result of a 2xx answer, else the matching :class:`MnemosError`. A 2xx
    whose body does not fit raises :class:`UnexpectedResponse` with the real status."""
    if not 200 <= status < 300:
        raise error_from_response(status, headers, body)
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        text = body.decode("utf-8", errors="replace")
        raise UnexpectedResponse(
            status, "unexpected_response", f"{call.method} {call.path}: answer is not JSON",
            body=text,
        ) from exc
    try:
        return call.parse(data)
    except UnexpectedResponse as exc:
        raise UnexpectedResponse(status, exc.code, exc.message, body=body.decode("utf-8")) from exc


def transport_error(
    call: Call[Any], base_url: str, exc: Exception, timed_out: bool
) -> MnemosError:
    """A :class:`ConnectionError` for an httpx failure before any answer arrived; the
    message names the full URL, since a wrong base URL is the usual cause."""
    code = "client_timeout" if timed_out else "connection_error"
    what = "timed out" if timed_out else "failed"
    detail = str(exc) or type(exc).__name__
    return ConnectionError(0, code, f"{call.method} {base_url}{call.path} {what}: {detail}")
