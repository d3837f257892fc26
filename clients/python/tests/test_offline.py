"""Client behaviour that needs no server: what goes on the wire and how answers are read.
Requests go to an ``httpx.MockTransport`` that records them."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Dict, List, Optional, Type

import httpx
import pytest

import mnemos_client as mc
from mnemos_client import AsyncClient, Client, Turn

Handler = Callable[[httpx.Request], httpx.Response]

JOBS: Dict[str, Any] = {
    "ran": 0,
    "failed": 0,
    "memories_created": 0,
    "memories_updated": 0,
    "memories_forgotten": 0,
    "errors": [],
}
MEMORY: Dict[str, Any] = {
    "id": "m1",
    "kind": "turn",
    "text": "hello",
    "agent": "default",
    "session": "default",
    "created": {"time": "2024-05-01T09:30:00.000Z", "round": 1},
    "state": "active",
    "version": 1,
    "provenance": [],
    "metadata": {},
}


class Recorder:
    """A mock transport that answers with ``reply`` and keeps every request."""

    def __init__(self, reply: Callable[[httpx.Request], httpx.Response]) -> None:
        self.requests: List[httpx.Request] = []
        self.reply = reply

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.reply(request)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def json_reply(status: int, body: Any) -> Handler:
    return lambda request: httpx.Response(status, json=body)


def client_for(handler: Handler, **kwargs: Any) -> Client:
    return Client("http://mnemos.test", transport=httpx.MockTransport(handler), **kwargs)


def body_of(request: httpx.Request) -> Any:
    return json.loads(request.content.decode("utf-8"))


# ---- authentication ------------------------------------------------------------------------


def test_api_key_is_sent_as_bearer_header_on_every_request() -> None:
    rec = Recorder(json_reply(200, {"status": "ok"}))
    with client_for(rec, api_key="sk-test-123") as client:
        client.health()
        client.health()
    assert [r.headers["authorization"] for r in rec.requests] == ["Bearer sk-test-123"] * 2


def test_no_api_key_means_no_authorization_header() -> None:
    rec = Recorder(json_reply(200, {"status": "ok"}))
    with client_for(rec) as client:
        client.health()
    assert "authorization" not in rec.last.headers


def test_environment_gives_url_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOS_URL", "http://env.test:9999/prefix/")
    monkeypatch.setenv("MNEMOS_API_KEY", "from-env")
    rec = Recorder(json_reply(200, {"users": []}))
    with Client(transport=httpx.MockTransport(rec)) as client:
        assert client.users() == []
    assert str(rec.last.url) == "http://env.test:9999/prefix/v1/users"
    assert rec.last.headers["authorization"] == "Bearer from-env"


def test_401_maps_to_unauthorized() -> None:
    error = {"error": {"code": "unauthorized", "message": "missing or invalid API key"}}
    with client_for(json_reply(401, error), api_key="wrong") as client:
        with pytest.raises(mc.Unauthorized) as caught:
            client.users()
    assert caught.value.status == 401
    assert caught.value.code == "unauthorized"
    assert caught.value.message == "missing or invalid API key"
    assert isinstance(caught.value, mc.MnemosError)


def test_async_client_sends_the_key_too() -> None:
    rec = Recorder(json_reply(200, {"status": "ready"}))

    async def run() -> str:
        transport = httpx.MockTransport(rec)
        async with AsyncClient("http://mnemos.test", "k2", transport=transport) as client:
            return (await client.ready()).status

    assert asyncio.run(run()) == "ready"
    assert rec.last.headers["authorization"] == "Bearer k2"


# ---- requests --------------------------------------------------------------------------------


ADD_REPLY = {
    "turns": [{"turn_id": "t1", "round": 1, "status": "added", "memory_id": "m1"}],
    "jobs_enqueued": 0,
    "jobs": JOBS,
}


@pytest.mark.parametrize(
    "user, encoded",
    [
        ("李鱼", "%E6%9D%8E%E9%B1%BC"),
        ("ann smith", "ann%20smith"),
        ("a/b?c#d", "a%2Fb%3Fc%23d"),
        ("..", "%2E%2E"),
    ],
)
def test_user_is_one_encoded_path_segment(user: str, encoded: str) -> None:
    rec = Recorder(json_reply(201, ADD_REPLY))
    with client_for(rec) as client:
        client.add_turns(user, [{"role": "user", "text": "hi"}])
    assert rec.last.url.raw_path.decode("ascii") == f"/v1/users/{encoded}/turns"


def test_an_empty_api_key_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOS_API_KEY", "from-env")
    rec = Recorder(json_reply(200, {"status": "ok"}))
    with client_for(rec, api_key="") as client:
        client.health()
    assert "authorization" not in rec.last.headers


def test_empty_user_is_refused_before_sending() -> None:
    rec = Recorder(json_reply(200, {}))
    with client_for(rec) as client, pytest.raises(ValueError):
        client.stats("")
    assert rec.requests == []


def test_add_turns_body_leaves_out_unset_fields_and_sends_the_idempotency_key() -> None:
    rec = Recorder(json_reply(201, ADD_REPLY))
    with client_for(rec) as client:
        result = client.add_turns(
            "u",
            [
                Turn("user", "我喜欢喝茶", key="k1", metadata={"lang": "zh"}),
                {"role": "assistant", "text": "noted"},
            ],
            agent="companion",
            idempotency_key="msg-1",
        )
    assert body_of(rec.last) == {
        "agent": "companion",
        "turns": [
            {"role": "user", "text": "我喜欢喝茶", "key": "k1", "metadata": {"lang": "zh"}},
            {"role": "assistant", "text": "noted"},
        ],
    }
    assert rec.last.headers["idempotency-key"] == "msg-1"
    assert rec.last.headers["content-type"] == "application/json"
    assert result.memory_ids == ("m1",)


def test_a_single_turn_is_a_batch_of_one_and_a_string_is_refused() -> None:
    rec = Recorder(json_reply(201, ADD_REPLY))
    with client_for(rec) as client:
        client.add_turns("u", Turn("user", "one"))
        assert body_of(rec.last)["turns"] == [{"role": "user", "text": "one"}]
        with pytest.raises(TypeError):
            client.add_turns("u", "not a turn")  # type: ignore[arg-type]


def test_datetimes_become_rfc3339() -> None:
    from datetime import datetime, timezone

    rec = Recorder(json_reply(200, {"memories": [], "total": 0}))
    with client_for(rec) as client:
        client.list_memories("u", kind=["turn", "summary"], since=datetime(2024, 5, 1, 9, 30),
                             until=datetime(2024, 6, 1, tzinfo=timezone.utc), limit=10)
    params = dict(rec.last.url.params)
    assert params == {
        "kind": "turn,summary",
        "since": "2024-05-01T09:30:00+00:00",
        "until": "2024-06-01T00:00:00+00:00",
        "limit": "10",
    }


def test_search_sends_kinds_as_a_list() -> None:
    rec = Recorder(json_reply(200, {"hits": [], "query_terms": [], "candidates": 0}))
    with client_for(rec) as client:
        client.search("u", "tea", top_k=3, kinds="turn, summary")
    assert body_of(rec.last) == {"query": "tea", "top_k": 3, "kinds": ["turn", "summary"]}


def test_forget_and_view_use_query_parameters() -> None:
    rec = Recorder(json_reply(200, {"memory": MEMORY, "already_forgotten": False,
                                    "derived_forgotten": 0}))
    with client_for(rec) as client:
        client.forget("u", "m1", reason="user asked")
    assert rec.last.method == "DELETE"
    assert rec.last.url.params["reason"] == "user asked"


def test_forget_matching_posts_the_description_and_reads_the_candidates() -> None:
    answer = {"confirmed": False, "derived": 1, "skipped": [], "truncated": False,
              "candidates": [{"memory": MEMORY, "relevance": 0.3, "selected_by": "topic",
                              "superseded": False},
                             {"memory": {**MEMORY, "id": "m0"}, "selected_by": "replaced",
                              "superseded": True}]}
    rec = Recorder(json_reply(200, answer))
    with client_for(rec) as client:
        shown = client.forget_matching("u", "my old address")
        client.forget_matching("u", "my old address", confirm=True, ids=shown.ids,
                               reason="asked", limit=5, agent="bot")
        with pytest.raises(TypeError, match="ids"):
            client.forget_matching("u", "x", ids="m1")
    assert (rec.requests[0].method, rec.requests[0].url.path) == ("POST", "/v1/users/u/forget")
    assert body_of(rec.requests[0]) == {"query": "my old address", "confirm": False}
    assert body_of(rec.requests[1]) == {"query": "my old address", "confirm": True,
                                        "ids": ["m1", "m0"], "reason": "asked", "limit": 5,
                                        "agent": "bot"}
    assert len(rec.requests) == 2
    assert (shown.confirmed, shown.derived, len(shown)) == (False, 1, 2)
    first, old = shown
    assert (first.selected_by, first.relevance, first.memory.id) == ("topic", 0.3, "m1")
    assert (old.selected_by, old.relevance, old.superseded) == ("replaced", None, True)


def test_list_filters_go_on_the_wire_with_meta_repeated() -> None:
    rec = Recorder(json_reply(200, {"memories": [], "total": 0}))
    with client_for(rec) as client:
        client.list_memories("u", meta={"topic": "tea", "lang": "zh"}, q="咖啡", sort="newest")
        client.list_memories("u", meta={})
    params = rec.requests[0].url.params
    assert params.get_list("meta") == ["topic=tea", "lang=zh"]
    assert (params["q"], params["sort"]) == ("咖啡", "newest")
    assert dict(rec.requests[1].url.params) == {}


@pytest.mark.parametrize("meta, error", [({"a=b": "c"}, ValueError), ({"": "c"}, ValueError),
                                         ({"a": 1}, TypeError), (["a=b"], TypeError)])
def test_bad_meta_is_refused_before_sending(meta: Any, error: Type[Exception]) -> None:
    rec = Recorder(json_reply(200, {"memories": [], "total": 0}))
    with client_for(rec) as client:
        with pytest.raises(error):
            client.list_memories("u", meta=meta)
    assert rec.requests == []


def test_new_reads_use_their_routes() -> None:
    replies = {
        "/v1/users/u/overview": {"user": "u", "turns": 0, "sessions": 0, "agents": [],
                                 "memories": {}, "jobs": {"pending": 0, "failed": 0, "stuck": 0}},
        "/v1/users/u/retention": {"last_round": 0, "series": [], "forgotten_by": {}},
        "/v1/users/u/memories/m%2F1/access": {"accesses": [], "total": 0},
        "/v1/users/u/memories/m1/derived": {"memories": [MEMORY]},
        "/v1/users/u/turns/t1": {"turn": {"id": "t1", "agent": "a", "session": "s",
                                          "role": "user", "text": "hi", "metadata": {},
                                          "at": MEMORY["created"]},
                                 "before": [], "after": []},
    }
    rec = Recorder(lambda request: httpx.Response(200, json=replies[request.url.raw_path
                                                                      .decode().split("?")[0]]))
    with client_for(rec) as client:
        assert client.overview("u").last_activity is None
        assert client.retention("u", agent="coach", points=50).series == ()
        assert client.access_log("u", "m/1").total == 0
        assert [m.id for m in client.derived("u", "m1")] == ["m1"]
        turn = client.get_turn("u", "t1", around=2).turn
        assert (turn.speaker, turn.memory_id) == (None, None)
    assert dict(rec.requests[1].url.params) == {"agent": "coach", "points": "50"}
    assert dict(rec.requests[4].url.params) == {"around": "2"}
    assert all(r.method == "GET" for r in rec.requests)


# ---- answers ---------------------------------------------------------------------------------


def test_unknown_fields_are_ignored_and_raw_is_kept() -> None:
    extra = {**MEMORY, "importance": 0.7, "created": {**MEMORY["created"], "tz": "UTC"}}
    with client_for(json_reply(200, extra)) as client:
        memory = client.get_memory("u", "m1")
    assert memory.text == "hello"
    assert memory.raw["importance"] == 0.7
    assert memory.created.datetime.year == 2024


def test_a_memory_without_the_newer_fields_still_reads() -> None:
    memory = mc.Memory.from_json(MEMORY)
    assert (memory.valid_from, memory.scores, memory.access_count) == (None, mc.Scores(), 0)
    forgotten = mc.Forgotten.from_json({"reason": "x", "at": MEMORY["created"]})
    assert forgotten.by is None
    hit = mc.SearchHit.from_json({"memory": MEMORY, "score": 1.0, "tokens": 1,
                                  "explanation": [], "matched_terms": []})
    assert hit.breakdown is None
    assert mc.View.from_json({"view": "persona", "text": "t"}).data is None


def test_breakdown_and_view_data_are_typed() -> None:
    breakdown = mc.Breakdown.from_json({
        "lexical": {"score": 1.5, "rank": 1}, "second_hop": {"via": "m2", "added": 0.1},
        "speaker": 0.2, "fused": 1.0, "final": 0.9,
        "ranker": {"probability": 0.7, "features": [1, 0.5],
                   "strongest": [{"name": "bm25", "contribution": 0.4}]},
        "adjustments": [{"name": "importance", "value": 0.8, "delta": -0.1}],
    })
    assert breakdown.lexical == mc.Signal(1.5, 1) and breakdown.dense is None
    assert breakdown.second_hop == mc.Hop("m2", 0.1) and breakdown.date is None
    assert breakdown.ranker is not None and breakdown.ranker.features == (1.0, 0.5)
    assert breakdown.adjustments == (mc.Adjustment("importance", 0.8, -0.1),)
    node = {"id": "n", "level": 2, "from_round": 0, "to_round": 3, "active": True, "turns": 4,
            "text": "t", "children": [{"id": "c", "level": 1, "from_round": 0, "to_round": 3,
                                       "active": False, "reason": "r", "turns": 4,
                                       "text": "c", "children": []}]}
    timeline = mc.View.from_json({"view": "timeline", "text": "", "data": [node]})
    assert isinstance(timeline.data, tuple) and timeline.data[0].children[0].reason == "r"
    future = mc.View.from_json({"view": "mood", "text": "", "data": {"x": 1}})
    assert future.data == {"x": 1}  # a view this client does not know keeps its JSON
    with pytest.raises(mc.UnexpectedResponse, match="View.data"):
        mc.View.from_json({"view": "persona", "text": "", "data": {}})


def test_a_missing_required_field_fails_clearly() -> None:
    broken = {k: v for k, v in MEMORY.items() if k != "text"}
    with client_for(json_reply(200, broken)) as client:
        with pytest.raises(mc.UnexpectedResponse) as caught:
            client.get_memory("u", "m1")
    assert "Memory.text" in caught.value.message
    assert caught.value.status == 200


def test_a_mistyped_field_fails_clearly() -> None:
    with pytest.raises(mc.UnexpectedResponse, match="Memory.version: expected an integer"):
        mc.Memory.from_json({**MEMORY, "version": "1"})


@pytest.mark.parametrize(
    "status, code, cls",
    [
        (400, "malformed_json", mc.BadRequest),
        (400, "invalid_request", mc.BadRequest),
        (403, "forbidden", mc.Forbidden),
        (404, "not_found", mc.NotFound),
        (405, "method_not_allowed", mc.MethodNotAllowed),
        (409, "conflict", mc.Conflict),
        (413, "payload_too_large", mc.PayloadTooLarge),
        (422, "invalid_input", mc.InvalidInput),
        (429, "rate_limited", mc.RateLimited),
        (503, "unavailable", mc.Unavailable),
        (504, "timeout", mc.Timeout),
        (500, "internal", mc.ServerError),
        (418, "something_new", mc.ServerError),
    ],
)
def test_error_codes_map_to_exception_classes(
    status: int, code: str, cls: Type[mc.MnemosError]
) -> None:
    body = {"error": {"code": code, "message": "why"}}
    with client_for(json_reply(status, body)) as client:
        with pytest.raises(cls) as caught:
            client.users()
    assert (caught.value.status, caught.value.code, caught.value.message) == (status, code, "why")


def test_a_non_json_error_still_raises_with_status_and_text() -> None:
    def html(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>Bad Gateway</html>",
                              headers={"retry-after": "5"})

    with client_for(html) as client:
        with pytest.raises(mc.ServerError) as caught:
            client.health()
    assert caught.value.status == 502
    assert caught.value.code == "http_502"
    assert "Bad Gateway" in caught.value.message
    assert caught.value.retry_after == 5.0


def test_an_unknown_code_falls_back_to_the_status() -> None:
    body = {"error": {"code": "quota_exceeded", "message": "slow down"}}
    with client_for(json_reply(429, body)) as client:
        with pytest.raises(mc.RateLimited) as caught:
            client.users()
    assert caught.value.code == "quota_exceeded"


def test_connection_failures_are_wrapped_with_their_cause() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with client_for(refuse) as client:
        with pytest.raises(mc.ConnectionError) as caught:
            client.health()
    assert isinstance(caught.value, mc.MnemosError)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert (caught.value.status, caught.value.code) == (0, "connection_error")


def test_client_side_timeouts_are_connection_errors_too() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    async def run() -> None:
        transport = httpx.MockTransport(slow)
        async with AsyncClient("http://mnemos.test", transport=transport) as client:
            await client.health()

    with pytest.raises(mc.ConnectionError) as caught:
        asyncio.run(run())
    assert caught.value.code == "client_timeout"
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)


def test_iter_memories_follows_the_cursor() -> None:
    pages = {
        None: {"memories": [{**MEMORY, "id": "a"}], "total": 2, "next_cursor": "o1"},
        "o1": {"memories": [{**MEMORY, "id": "b"}], "total": 2},
    }

    def page(request: httpx.Request) -> httpx.Response:
        cursor: Optional[str] = request.url.params.get("cursor")
        return httpx.Response(200, json=pages[cursor])

    with client_for(page) as client:
        assert [m.id for m in client.iter_memories("u", limit=1)] == ["a", "b"]


# ---- API keys --------------------------------------------------------------------------------


KEY: Dict[str, Any] = {
    "id": "01a21368-31bb-72c8-8de9-e0a112e50982",
    "tenant": "acme",
    "name": "bot",
    "prefix": "mnk_506462de",
    "created": "2024-05-01T09:30:00.000Z",
}
SECRET = "mnk_506462de" + "ab" * 30


def test_create_key_posts_the_tenant_and_keeps_the_secret_out_of_repr() -> None:
    rec = Recorder(json_reply(201, {**KEY, "secret": SECRET}))
    with client_for(rec, api_key="admin") as client:
        created = client.create_key("acme", name="bot")
        client.create_key("acme")
    assert (rec.requests[0].method, rec.requests[0].url.path) == ("POST", "/v1/keys")
    assert body_of(rec.requests[0]) == {"tenant": "acme", "name": "bot"}
    assert body_of(rec.requests[1]) == {"tenant": "acme"}  # the server names it
    assert created.secret == SECRET
    assert SECRET not in repr(created) and "secret" not in created.raw
    assert created.key == mc.ApiKey.from_json(KEY)


def test_list_keys_filters_by_tenant_and_reads_revocations() -> None:
    revoked = {**KEY, "revoked": "2024-05-02T10:00:00.000Z"}
    rec = Recorder(json_reply(200, [KEY, revoked]))
    with client_for(rec) as client:
        keys = client.list_keys(tenant="acme")
        client.list_keys()
    assert dict(rec.requests[0].url.params) == {"tenant": "acme"}
    assert dict(rec.requests[1].url.params) == {}
    assert [k.is_active for k in keys] == [True, False]
    assert keys[0].revoked_at is None
    assert keys[1].revoked_at is not None and keys[1].revoked_at.day == 2


def test_revoke_key_deletes_by_encoded_id() -> None:
    rec = Recorder(json_reply(200, {**KEY, "revoked": "2024-05-02T10:00:00.000Z"}))
    with client_for(rec) as client:
        client.revoke_key("a/b")
        with pytest.raises(ValueError):
            client.revoke_key("")
    assert rec.last.method == "DELETE"
    assert rec.last.url.raw_path.decode("ascii") == "/v1/keys/a%2Fb"
    assert len(rec.requests) == 1


# ---- what is true now ------------------------------------------------------------------------


def test_validity_and_relevance_go_on_the_wire() -> None:
    from datetime import date, datetime, timezone

    rec = Recorder(lambda request: httpx.Response(
        200, json={"hits": [], "query_terms": [], "candidates": 0}
        if request.url.path.endswith("/search") else
        {"memories": [], "total": 0} if request.url.path.endswith("/memories") else
        {"preset": "default", "text": "", "tokens": 0, "items": [], "notes": []}))
    with client_for(rec) as client:
        client.search("u", "home", include_superseded=True, min_relevance=0.0)
        client.search("u", "home", as_of=date(2024, 3, 2))
        client.recall("u", "home", as_of=datetime(2024, 3, 2, 12, tzinfo=timezone.utc),
                      min_relevance=0.2)
        client.list_memories("u", current=True)
        client.list_memories("u", as_of="2024-03-02")
    assert body_of(rec.requests[0]) == {"query": "home", "include_superseded": True,
                                        "min_relevance": 0.0}
    assert body_of(rec.requests[1]) == {"query": "home", "as_of": "2024-03-02"}
    recall = body_of(rec.requests[2])
    assert recall["as_of"].startswith("2024-03-02T12:00:00") and recall["min_relevance"] == 0.2
    assert dict(rec.requests[3].url.params) == {"current": "true"}
    assert dict(rec.requests[4].url.params) == {"as_of": "2024-03-02"}


def test_superseded_memories_changes_and_relevance_are_read() -> None:
    stale = {**MEMORY, "valid_to": "2024-06-01T09:00:00Z", "superseded_by": "m2",
             "times_said": 2, "last_said": "2024-05-01T09:00:00Z"}
    hit = mc.SearchHit.from_json({
        "memory": stale, "score": 0.4, "tokens": 3, "explanation": [], "matched_terms": [],
        "relevance": 0.12, "superseded": True,
        "breakdown": {"fused": 0.4, "adjustments": [], "final": 0.4,
                      "relevance": {"probability": 0.12, "features": [0.5, 1.0],
                                    "strongest": [{"name": "cosine", "contribution": 3.0}]}},
    })
    assert (hit.superseded, hit.relevance) == (True, 0.12)
    assert hit.memory.superseded_by == "m2" and not hit.memory.is_current
    assert hit.breakdown is not None and hit.breakdown.relevance is not None
    assert hit.breakdown.relevance.strongest[0].name == "cosine"
    added = mc.AddResult.from_json({
        "turns": [{"turn_id": "t2", "round": 1, "status": "added", "memory_id": "m2"}],
        "jobs_enqueued": 0, "jobs": JOBS,
        "changes": [{"kind": "superseded", "memory_id": "m1", "by": "m2"}],
    })
    assert added.changes == (mc.FactChange("superseded", "m1", "m2"),)
    older = mc.AddResult.from_json({"turns": [], "jobs_enqueued": 0, "jobs": JOBS})
    assert older.changes == ()
