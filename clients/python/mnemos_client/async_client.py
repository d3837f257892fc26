"""The asyncio client, over ``httpx.AsyncClient``. Same methods and results as
:class:`~mnemos_client.Client`; each one is awaited, and :meth:`AsyncClient.iter_memories`
is an async iterator."""

from __future__ import annotations

from types import TracebackType
from typing import AsyncIterator, Iterable, List, Mapping, Optional, Type, TypeVar, Union

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

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient:
    """An asyncio connection to a mnemos server; see :class:`~mnemos_client.Client` for
    the arguments. Use ``async with``, or await :meth:`aclose`, to release connections."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: Optional[float] = 30.0,
        *,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        if transport is not None and http_client is not None:
            raise ValueError("give a transport or an http_client, not both")
        self.base_url = calls.resolve_base_url(base_url)
        self._headers = calls.default_headers(calls.resolve_api_key(api_key))
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout, transport=transport)

    # ---- lifecycle -----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release the connection pool (not a caller-supplied ``http_client``)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient(base_url={self.base_url!r})"

    # ---- sending ---------------------------------------------------------------------------

    async def _send(self, call: Call[T]) -> T:
        """Send one call and read its answer; httpx failures become ConnectionError."""
        try:
            response = await self._http.request(
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

    async def add_turns(
        self,
        user: str,
        turns: Union[TurnLike, Iterable[TurnLike]],
        agent: Optional[str] = None,
        session: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> AddResult:
        """See :meth:`Client.add_turns`."""
        return await self._send(calls.add_turns(user, turns, agent, session, idempotency_key))

    async def end_session(
        self, user: str, session: str, agent: Optional[str] = None
    ) -> JobReport:
        """See :meth:`Client.end_session`."""
        return await self._send(calls.end_session(user, session, agent))

    # ---- retrieval -----------------------------------------------------------------------

    async def recall(
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
        """See :meth:`Client.recall`."""
        return await self._send(calls.recall(user, query, agent, budget, session, as_of, min_relevance))

    async def search(
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
        """See :meth:`Client.search`."""
        return await self._send(calls.search(user, query, top_k, budget, kinds, agent, session,
                         include_superseded, as_of, min_relevance))

    # ---- memories --------------------------------------------------------------------------

    async def list_memories(
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
        """See :meth:`Client.list_memories`."""
        return await self._send(
            calls.list_memories(user, kind, state, agent, session, since, until, limit, cursor,
                                meta, q, sort, current, as_of)
        )

    async def iter_memories(
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
    ) -> AsyncIterator[Memory]:
        """Every matching memory (``async for``), fetching pages as the iteration goes."""
        cursor: Optional[str] = None
        while True:
            page = await self.list_memories(
                user, kind, state, agent, session, since, until, limit, cursor,
                meta=meta, q=q, sort=sort,
            )
            for memory in page.memories:
                yield memory
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def get_memory(self, user: str, id: str) -> Memory:
        """See :meth:`Client.get_memory`."""
        return await self._send(calls.get_memory(user, id))

    async def update_memory(
        self,
        user: str,
        id: str,
        text: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Memory:
        """See :meth:`Client.update_memory`."""
        return await self._send(calls.update_memory(user, id, text, metadata))

    async def forget(self, user: str, id: str, reason: Optional[str] = None) -> ForgetResult:
        """See :meth:`Client.forget`."""
        return await self._send(calls.forget(user, id, reason))

    async def forget_matching(
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
        """See :meth:`Client.forget_matching`."""
        return await self._send(calls.forget_matching(
            user, query, confirm, reason, limit, agent, ids, min_relevance))

    async def history(self, user: str, id: str) -> List[HistoryEntry]:
        """See :meth:`Client.history`."""
        return await self._send(calls.history(user, id))

    async def access_log(self, user: str, id: str) -> AccessLog:
        """See :meth:`Client.access_log`."""
        return await self._send(calls.access_log(user, id))

    async def derived(self, user: str, id: str) -> List[Memory]:
        """See :meth:`Client.derived`."""
        return await self._send(calls.derived(user, id))

    # ---- turns -----------------------------------------------------------------------------

    async def get_turn(self, user: str, id: str, around: Optional[int] = None) -> TurnContext:
        """See :meth:`Client.get_turn`."""
        return await self._send(calls.get_turn(user, id, around))

    # ---- users -----------------------------------------------------------------------------

    async def purge_user(self, user: str) -> PurgeResult:
        """See :meth:`Client.purge_user`."""
        return await self._send(calls.purge_user(user))

    async def users(self) -> List[str]:
        """See :meth:`Client.users`."""
        return await self._send(calls.users())

    async def stats(self, user: str, agent: Optional[str] = None) -> Stats:
        """See :meth:`Client.stats`."""
        return await self._send(calls.stats(user, agent))

    async def overview(self, user: str) -> Overview:
        """See :meth:`Client.overview`."""
        return await self._send(calls.overview(user))

    async def retention(
        self, user: str, agent: Optional[str] = None, points: Optional[int] = None
    ) -> Retention:
        """See :meth:`Client.retention`."""
        return await self._send(calls.retention(user, agent, points))

    async def view(self, user: str, name: str, agent: Optional[str] = None) -> View:
        """See :meth:`Client.view`."""
        return await self._send(calls.view(user, name, agent))

    # ---- derived jobs ----------------------------------------------------------------------

    async def jobs(self, user: str) -> List[Job]:
        """See :meth:`Client.jobs`."""
        return await self._send(calls.jobs(user))

    async def retry_job(self, user: str, job_id: str) -> JobReport:
        """See :meth:`Client.retry_job`."""
        return await self._send(calls.retry_job(user, job_id))

    # ---- server ----------------------------------------------------------------------------

    async def presets(self) -> List[Preset]:
        """See :meth:`Client.presets`."""
        return await self._send(calls.presets())

    async def health(self) -> Health:
        """See :meth:`Client.health`."""
        return await self._send(calls.health())

    async def ready(self) -> Health:
        """See :meth:`Client.ready`."""
        return await self._send(calls.ready())

    # ---- API keys (admin key) --------------------------------------------------------------

    async def create_key(self, tenant: str, name: Optional[str] = None) -> CreatedKey:
        """See :meth:`Client.create_key`."""
        return await self._send(calls.create_key(tenant, name))

    async def list_keys(self, tenant: Optional[str] = None) -> List[ApiKey]:
        """See :meth:`Client.list_keys`."""
        return await self._send(calls.list_keys(tenant))

    async def revoke_key(self, key_id: str) -> ApiKey:
        """See :meth:`Client.revoke_key`."""
        return await self._send(calls.revoke_key(key_id))
