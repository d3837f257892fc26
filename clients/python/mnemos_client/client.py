"""The blocking client, over ``httpx.Client``."""

from __future__ import annotations

from types import TracebackType
from typing import Iterable, Iterator, List, Mapping, Optional, Type, TypeVar, Union

import httpx

from . import _calls as calls
from ._calls import AsOf, Call, Kinds, MemorySort, TurnLike
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
    TurnContext,
    View,
)

__all__ = ["Client"]

T = TypeVar("T")


class Client:
    """A connection to a mnemos server.

    ``base_url`` defaults to ``$MNEMOS_URL``, else ``http://127.0.0.1:8080``; ``api_key`` to
    ``$MNEMOS_API_KEY`` (sent as ``Authorization: Bearer …``). ``timeout`` is in seconds.
    ``transport`` or ``http_client`` replace the network (tests, proxies, retries); a given
    ``http_client`` is not closed by :meth:`close`.

    Every method raises a :class:`~mnemos_client.MnemosError` subclass on failure. Use the
    client as a context manager, or call :meth:`close`, to release its connections.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: Optional[float] = 30.0,
        *,
        transport: Optional[httpx.BaseTransport] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        if transport is not None and http_client is not None:
            raise ValueError("give a transport or an http_client, not both")
        self.base_url = calls.resolve_base_url(base_url)
        self._headers = calls.default_headers(calls.resolve_api_key(api_key))
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout, transport=transport)

    # ---- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the connection pool (not a caller-supplied ``http_client``)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r})"

    # ---- sending ---------------------------------------------------------------------------

    def _send(self, call: Call[T]) -> T:
        """Send one call and read its answer; httpx failures become ConnectionError."""
        try:
            response = self._http.request(
                call.method,
                self.base_url + call.path,
                params=call.params or None,
                content=call.body,
                headers={**self._headers, **call.headers},
            )
        except httpx.TimeoutException as exc:
            raise calls.transport_error(call, self.base_url, exc, timed_out=True) from exc
        except httpx.TransportError as exc:
            raise calls.transport_error(call, self.base_url, exc, timed_out=False) from exc
        return calls.read_response(call, response.status_code, response.headers, response.content)

    # ---- turns and sessions --------------------------------------------------------------

    def add_turns(
        self,
        user: str,
        turns: Union[TurnLike, Iterable[TurnLike]],
        agent: Optional[str] = None,
        session: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> AddResult:
        """Store turns (``Turn`` objects or dicts; at most 1,000 per call). With an
        ``idempotency_key`` a retried call stores nothing twice and reports duplicates; the
        same key with other text raises Conflict (a new request needs a new key)."""
        return self._send(calls.add_turns(user, turns, agent, session, idempotency_key))

    def end_session(self, user: str, session: str, agent: Optional[str] = None) -> JobReport:
        """Close a session, running the derived work that waits for its end (summaries)."""
        return self._send(calls.end_session(user, session, agent))

    # ---- retrieval -----------------------------------------------------------------------

    def recall(
        self,
        user: str,
        query: str,
        agent: Optional[str] = None,
        budget: Optional[int] = None,
        session: Optional[str] = None,
        *,
        as_of: Optional[AsOf] = None,
        min_relevance: Optional[float] = None,
    ) -> RecallResult:
        """The agent preset's context for ``query`` within ``budget`` tokens (server
        default 1024); put ``.text`` into the prompt. ``as_of`` asks about the past: what was
        valid then (a ``date``, a ``datetime`` or ``"2024-03-02"``); ``min_relevance`` (0 to 1)
        drops memories less relevant than that (default: the server's floor)."""
        return self._send(calls.recall(user, query, agent, budget, session, as_of, min_relevance))

    def search(
        self,
        user: str,
        query: str,
        top_k: Optional[int] = None,
        budget: Optional[int] = None,
        kinds: Optional[Kinds] = None,
        agent: Optional[str] = None,
        session: Optional[str] = None,
        *,
        include_superseded: Optional[bool] = None,
        as_of: Optional[AsOf] = None,
        min_relevance: Optional[float] = None,
    ) -> SearchResult:
        """Ranked memories with the reasons for each rank (``hit.explanation``). What is true
        now by default: ``include_superseded=True`` also returns memories a later statement
        replaced (after the current ones, ``hit.superseded``); ``as_of`` returns what was valid
        then; ``min_relevance`` (0 to 1) drops hits less relevant than that (default: the
        server's floor, under which an unrelated query gets nothing)."""
        return self._send(calls.search(user, query, top_k, budget, kinds, agent, session,
                         include_superseded, as_of, min_relevance))

    # ---- memories --------------------------------------------------------------------------

    def list_memories(
        self,
        user: str,
        kind: Optional[Kinds] = None,
        state: Optional[str] = None,
        agent: Optional[str] = None,
        session: Optional[str] = None,
        since: Optional[TimeLike] = None,
        until: Optional[TimeLike] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        *,
        meta: Optional[Mapping[str, str]] = None,
        q: Optional[str] = None,
        sort: Optional[MemorySort] = None,
        current: Optional[bool] = None,
        as_of: Optional[AsOf] = None,
    ) -> MemoryPage:
        """One page of memories, oldest first. Pass ``page.next_cursor`` as ``cursor`` for
        the next page, or use :meth:`iter_memories`. Raises NotFound for an unknown user.

        ``meta`` keeps memories whose metadata holds every given key with its value (sent
        as repeated ``meta=key=value``); ``q`` those whose text contains it, ignoring case
        (``q="咖啡"`` works); ``sort`` orders them ``"oldest"`` (default), ``"newest"`` or
        ``"importance"`` (highest first, memories without one last). A blank ``q`` or an
        unknown ``sort`` raises BadRequest; a meta key that is empty or holds ``=`` raises
        ValueError before anything is sent. ``current=True`` keeps memories no later
        statement superseded; ``as_of`` those valid at that moment."""
        return self._send(
            calls.list_memories(user, kind, state, agent, session, since, until, limit, cursor,
                                meta, q, sort, current, as_of)
        )

    def iter_memories(
        self,
        user: str,
        kind: Optional[Kinds] = None,
        state: Optional[str] = None,
        agent: Optional[str] = None,
        session: Optional[str] = None,
        since: Optional[TimeLike] = None,
        until: Optional[TimeLike] = None,
        limit: Optional[int] = None,
        *,
        meta: Optional[Mapping[str, str]] = None,
        q: Optional[str] = None,
        sort: Optional[MemorySort] = None,
    ) -> Iterator[Memory]:
        """Every matching memory, fetching pages of ``limit`` as the iteration goes."""
        cursor: Optional[str] = None
        while True:
            page = self.list_memories(
                user, kind, state, agent, session, since, until, limit, cursor,
                meta=meta, q=q, sort=sort,
            )
            yield from page.memories
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def get_memory(self, user: str, id: str) -> Memory:
        """One memory (active or forgotten); NotFound for an unknown or foreign id."""
        return self._send(calls.get_memory(user, id))

    def update_memory(
        self,
        user: str,
        id: str,
        text: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Memory:
        """Change a memory's text and/or metadata; returns the new version."""
        return self._send(calls.update_memory(user, id, text, metadata))

    def forget(self, user: str, id: str, reason: Optional[str] = None) -> ForgetResult:
        """Take a memory (and what was derived from it) out of retrieval; its history keeps
        the reason. Forgetting again reports ``already_forgotten``."""
        return self._send(calls.forget(user, id, reason))

    def forget_matching(
        self,
        user: str,
        query: str,
        confirm: bool = False,
        *,
        reason: Optional[str] = None,
        limit: Optional[int] = None,
        agent: Optional[str] = None,
        ids: Optional[Iterable[str]] = None,
        min_relevance: Optional[float] = None,
    ) -> ForgetMatchResult:
        """Forget what a description names ("my old address"), in two steps. Without
        ``confirm`` it is a dry run: the result lists what would be forgotten and nothing is
        written. With ``confirm=True`` the same selection is forgotten, each memory with what
        was derived from it and ``reason`` in its history; pass the dry run's ``ids``
        (``result.ids``) to forget exactly those, whatever changed since: one no longer
        selected comes back in ``skipped``. ``limit`` (1 to 100, server default 10) bounds the
        selection, ``agent`` narrows it, ``min_relevance`` (server default 0.025) is the
        relevance that selects a memory by itself. An empty ``query`` raises InvalidInput."""
        return self._send(calls.forget_matching(
            user, query, confirm, reason, limit, agent, ids, min_relevance))

    def history(self, user: str, id: str) -> List[HistoryEntry]:
        """Every version of a memory, oldest first."""
        return self._send(calls.history(user, id))

    def access_log(self, user: str, id: str) -> AccessLog:
        """Every recorded retrieval of a memory, newest first, with its rank each time.
        Searches over HTTP record none; recalls by presets that track access, and
        searches made with access recording (as ``mnemos demo`` does), do."""
        return self._send(calls.access_log(user, id))

    def derived(self, user: str, id: str) -> List[Memory]:
        """For a turn's memory, the memories of other kinds built from that turn
        (summaries, profiles…), active and forgotten, oldest first: what forgetting the
        turn takes along. Empty for other kinds."""
        return self._send(calls.derived(user, id))

    # ---- turns -----------------------------------------------------------------------------

    def get_turn(self, user: str, id: str, around: Optional[int] = None) -> TurnContext:
        """A stored turn (by turn id, e.g. from ``memory.provenance``) with up to
        ``around`` turns of its agent and session on each side (0 to 50; server default
        3; out of range raises BadRequest)."""
        return self._send(calls.get_turn(user, id, around))

    # ---- users -----------------------------------------------------------------------------

    def purge_user(self, user: str) -> PurgeResult:
        """Erase every turn, memory, history entry, vector and job of a user."""
        return self._send(calls.purge_user(user))

    def users(self) -> List[str]:
        """The users with data in the key's tenant (names are per tenant)."""
        return self._send(calls.users())

    def stats(self, user: str, agent: Optional[str] = None) -> Stats:
        """The agent's preset and the user's active memories by kind."""
        return self._send(calls.stats(user, agent))

    def overview(self, user: str) -> Overview:
        """The user at a glance: turns, sessions, agents, memories by kind and state, the
        last activity and unfinished jobs by state."""
        return self._send(calls.overview(user))

    def retention(
        self, user: str, agent: Optional[str] = None, points: Optional[int] = None
    ) -> Retention:
        """Memories created, forgotten and active over the rounds (at most ``points``
        points, 2 to 2000, server default 200) and forgotten memories by cause; ``agent``
        names whose preset's forgetting to count."""
        return self._send(calls.retention(user, agent, points))

    def view(self, user: str, name: str, agent: Optional[str] = None) -> View:
        """A preset's view, ``persona``, ``timeline`` or ``chains``, as ``text`` and as
        typed ``data``."""
        return self._send(calls.view(user, name, agent))

    # ---- derived jobs ----------------------------------------------------------------------

    def jobs(self, user: str) -> List[Job]:
        """The user's pending, failed and stuck derived jobs."""
        return self._send(calls.jobs(user))

    def retry_job(self, user: str, job_id: str) -> JobReport:
        """Run a stuck job again now."""
        return self._send(calls.retry_job(user, job_id))

    # ---- server ----------------------------------------------------------------------------

    def presets(self) -> List[Preset]:
        """Every memory preset with its parameters and defaults."""
        return self._send(calls.presets())

    def health(self) -> Health:
        """``status == "ok"`` while the server process runs."""
        return self._send(calls.health())

    def ready(self) -> Health:
        """``status == "ready"`` when the store answers; raises Unavailable otherwise."""
        return self._send(calls.ready())

    # ---- API keys (admin key) --------------------------------------------------------------

    def create_key(self, tenant: str, name: Optional[str] = None) -> CreatedKey:
        """Make a key for ``tenant`` (admin key). The answer's ``secret`` is shown
        this once (the server keeps only its hash); ``name`` is a label for people."""
        return self._send(calls.create_key(tenant, name))

    def list_keys(self, tenant: Optional[str] = None) -> List[ApiKey]:
        """Every key, or ``tenant``'s, oldest first (admin key); revoked ones too,
        with their ``revoked`` time. Secrets are never listed."""
        return self._send(calls.list_keys(tenant))

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke a key (admin key): this server refuses it at once, other servers on
        the same database within 2 s. Revoking again keeps the first ``revoked`` time."""
        return self._send(calls.revoke_key(key_id))
