"""The blocking client against a live ``mnemos serve`` (see conftest.py). Each test works
on a user of its own."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

import mnemos_client as mc
from mnemos_client import Client, Turn

FACT = "My sister Mia is allergic to peanuts."


def test_health_and_ready(client: Client) -> None:
    assert client.health().status == "ok"
    assert client.ready().status == "ready"


def test_memory_lifecycle(client: Client, user: str) -> None:
    added = client.add_turns(user, [
        Turn("user", FACT),
        Turn("assistant", "Noted: no peanuts in anything for Mia."),
        Turn("user", "I drink oolong tea every morning."),
    ])
    assert [t.status for t in added.turns] == ["added"] * 3
    fact_id = added.turns[0].memory_id
    assert fact_id is not None

    page = client.list_memories(user)
    assert page.total == 3 and page.next_cursor is None
    assert [m.text for m in page.memories][0] == FACT

    memory = client.get_memory(user, fact_id)
    assert (memory.text, memory.kind, memory.state, memory.version) == (FACT, "turn", "active", 1)
    assert memory.provenance == (added.turns[0].turn_id,)

    hits = client.search(user, "peanut allergy", top_k=2)
    assert FACT in [hit.memory.text for hit in hits]
    assert all(hit.explanation for hit in hits)
    assert any("bm25" in line for line in hits.hits[0].explanation)
    assert "peanut" in hits.query_terms

    context = client.recall(user, "Is Mia allergic to anything?", budget=300)
    assert FACT in context.text
    assert context.preset == "default"
    assert any(item.memory_id == fact_id for item in context.items)

    updated = client.update_memory(user, fact_id, text=FACT + " And to shellfish.")
    assert updated.version == 2 and updated.text.endswith("shellfish.")
    changes = [(e.version, e.change, e.text) for e in client.history(user, fact_id)]
    assert changes == [(1, "created", FACT), (2, "updated", FACT + " And to shellfish.")]

    forgotten = client.forget(user, fact_id, reason="user asked")
    assert forgotten.already_forgotten is False
    assert forgotten.memory.state == "forgotten"
    assert forgotten.memory.forgotten is not None
    assert forgotten.memory.forgotten.reason == "user asked"
    again = client.forget(user, fact_id, reason="second time")
    assert again.already_forgotten is True
    assert again.memory.forgotten is not None
    assert again.memory.forgotten.reason == "user asked"  # the first reason stands
    assert client.history(user, fact_id)[-1].change == "forgotten"
    assert fact_id not in [m.id for m in client.list_memories(user).memories]
    assert fact_id in [m.id for m in client.list_memories(user, state="forgotten").memories]

    purged = client.purge_user(user)
    assert purged.turns == 3 and purged.memories == 3
    with pytest.raises(mc.NotFound):
        client.list_memories(user)
    assert user not in client.users()


def test_metadata_and_time_round_trip(client: Client, user: str) -> None:
    said = datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)
    added = client.add_turns(user, Turn("user", "Moved to Lisbon.", speaker="Lena", time=said,
                                        metadata={"source": "chat"}))
    memory_id = added.turns[0].memory_id
    assert memory_id is not None
    memory = client.get_memory(user, memory_id)
    # the server copies the speaker into the memory's metadata
    assert memory.metadata == {"source": "chat", "speaker": "Lena"}
    assert memory.created.time == "2024-05-01T09:30:00.000Z"
    assert memory.created.datetime == said

    updated = client.update_memory(user, memory_id, metadata={"source": "import"})
    assert updated.text == "Moved to Lisbon."
    # New metadata replaces the map, but the turn's speaker stays (it is part of the search text).
    assert updated.metadata == {"source": "import", "speaker": "Lena"}


def test_idempotency_key_retry_creates_nothing_new(client: Client, user: str) -> None:
    turns = [Turn("user", "Book a table for Friday."), Turn("assistant", "Booked for 7 pm.")]
    first = client.add_turns(user, turns, idempotency_key="msg-0001")
    retry = client.add_turns(user, turns, idempotency_key="msg-0001")
    assert [t.status for t in first.turns] == ["added", "added"]
    assert [t.status for t in retry.turns] == ["duplicate", "duplicate"]
    assert retry.memory_ids == ()
    assert [t.turn_id for t in retry.turns] == [t.turn_id for t in first.turns]
    # A duplicate names the memory its turn got the first time.
    assert [t.memory_id for t in retry.turns] == [t.memory_id for t in first.turns]
    assert client.list_memories(user).total == 2


def test_a_reused_idempotency_key_with_other_text_is_a_conflict(
    client: Client, user: str
) -> None:
    client.add_turns(user, Turn("user", "Book a table for Friday."), idempotency_key="msg-0002")
    # Another request under the same key is a mistake, not a retry: refused, nothing written.
    with pytest.raises(mc.Conflict) as caught:
        client.add_turns(user, Turn("user", "Cancel the table."), idempotency_key="msg-0002")
    assert (caught.value.status, caught.value.code) == (409, "conflict")
    assert "idem:msg-0002#0" in caught.value.message
    assert [m.text for m in client.list_memories(user)] == ["Book a table for Friday."]


def test_a_reused_turn_key_with_other_text_refuses_the_whole_batch(
    client: Client, user: str
) -> None:
    client.add_turns(user, {"role": "user", "text": "Hello", "key": "k-1"})
    with pytest.raises(mc.Conflict, match="k-1"):
        client.add_turns(user, [{"role": "user", "text": "Bye", "key": "k-2"},
                                {"role": "user", "text": "Hello again", "key": "k-1"}])
    assert [m.text for m in client.list_memories(user)] == ["Hello"]


def test_turn_keys_deduplicate_per_user(client: Client, user: str) -> None:
    client.add_turns(user, {"role": "user", "text": "Hello", "key": "k-1"})
    again = client.add_turns(user, [{"role": "user", "text": "Hello", "key": "k-1"},
                                    {"role": "user", "text": "Bye", "key": "k-2"}])
    assert [t.status for t in again.turns] == ["duplicate", "added"]
    assert client.list_memories(user).total == 2


def test_iter_memories_pages_through_everything_once(client: Client, user: str) -> None:
    texts = [f"note number {i}" for i in range(120)]
    client.add_turns(user, [Turn("user", t) for t in texts])

    first = client.list_memories(user, limit=50)
    assert (len(first), first.total) == (50, 120)
    assert first.next_cursor is not None

    memories = list(client.iter_memories(user, limit=50))
    ids = [m.id for m in memories]
    assert len(ids) == 120 and len(set(ids)) == 120
    assert sorted(m.text for m in memories) == sorted(texts)


@pytest.mark.parametrize("name", ["李鱼", "ann smith / work", ".."])
def test_unusual_user_names_work_in_the_path(client: Client, name: str) -> None:
    text = "我妹妹对花生过敏。" if name == "李鱼" else "plain text"
    added = client.add_turns(name, Turn("user", text))
    try:
        memory_id = added.turns[0].memory_id
        assert memory_id is not None
        assert client.get_memory(name, memory_id).text == text
        assert name in client.users()
        assert [m.text for m in client.list_memories(name)] == [text]
    finally:
        client.purge_user(name)


def test_chinese_text_round_trips_and_is_found(client: Client, user: str) -> None:
    fact = "我妹妹对花生过敏，她叫米娅。"
    client.add_turns(user, [Turn("user", fact), Turn("user", "今天天气很好。")])
    assert fact in [m.text for m in client.list_memories(user)]
    hits = client.search(user, "花生")
    assert hits.hits[0].memory.text == fact
    assert "花生" in hits.hits[0].matched_terms
    assert fact in client.recall(user, "米娅对什么过敏？").text


def test_unknown_memory_id_is_not_found(client: Client, user: str) -> None:
    client.add_turns(user, Turn("user", "something"))
    with pytest.raises(mc.NotFound) as caught:
        client.get_memory(user, "01a2135c-0000-7000-8000-000000000000")
    assert (caught.value.status, caught.value.code) == (404, "not_found")
    assert "01a2135c-0000-7000-8000-000000000000" in caught.value.message
    with pytest.raises(mc.NotFound):
        client.history(user, "not-an-id")


def test_a_user_with_no_data_is_not_found(client: Client, user: str) -> None:
    for read in (client.list_memories, client.stats, client.jobs, client.purge_user):
        with pytest.raises(mc.NotFound) as caught:
            read(user)
        assert caught.value.message == f"no user '{user}'"
    with pytest.raises(mc.NotFound):
        client.view(user, "persona")
    # search and recall answer nothing instead
    assert len(client.search(user, "anything")) == 0
    assert client.recall(user, "anything").text == ""


def test_empty_text_is_invalid_input(client: Client, user: str) -> None:
    with pytest.raises(mc.InvalidInput) as caught:
        client.add_turns(user, Turn("user", ""))
    error = caught.value
    assert (error.status, error.code) == (422, "invalid_input")
    assert "empty" in error.message
    assert isinstance(error, mc.MnemosError)


def test_a_batch_with_one_bad_turn_writes_nothing(client: Client, user: str) -> None:
    with pytest.raises(mc.InvalidInput, match="turn 2"):
        client.add_turns(user, [Turn("user", "fine"), Turn("user", "   ")])
    with pytest.raises(mc.NotFound):
        client.list_memories(user)


def test_request_shape_errors_are_bad_requests(client: Client, user: str) -> None:
    with pytest.raises(mc.BadRequest) as caught:
        client.add_turns(user, {"role": "user", "text": "x", "colour": "red"})
    assert caught.value.code == "invalid_request"
    assert "colour" in caught.value.message
    with pytest.raises(mc.BadRequest, match="role"):
        client.add_turns(user, Turn("robot", "x"))


def test_rule_errors_are_invalid_input(client: Client, user: str) -> None:
    added = client.add_turns(user, Turn("user", "keep me"))
    memory_id = added.memory_ids[0]
    with pytest.raises(mc.InvalidInput, match="nothing to change"):
        client.update_memory(user, memory_id)
    with pytest.raises(mc.InvalidInput, match="bogus"):
        client.search(user, "x", kinds=["bogus"])
    with pytest.raises(mc.InvalidInput, match="query is empty"):
        client.recall(user, "")


def test_bad_query_parameters_are_bad_requests(client: Client, user: str) -> None:
    client.add_turns(user, Turn("user", "keep me"))
    with pytest.raises(mc.BadRequest, match="state") as caught:
        client.list_memories(user, state="sleeping")
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    with pytest.raises(mc.BadRequest, match="limit"):
        client.list_memories(user, limit=0)
    with pytest.raises(mc.BadRequest, match="kind"):
        client.list_memories(user, kind="bogus")


def test_empty_agent_or_session_names_are_invalid_input(client: Client, user: str) -> None:
    # An empty name would be a filter that silently matches nothing; the server refuses it.
    client.add_turns(user, Turn("user", "I keep bees."))
    with pytest.raises(mc.InvalidInput, match="agent must not be empty") as caught:
        client.recall(user, "bees", agent="")
    assert (caught.value.status, caught.value.code) == (422, "invalid_input")
    with pytest.raises(mc.InvalidInput, match="agent must not be empty"):
        client.search(user, "bees", agent="")
    with pytest.raises(mc.InvalidInput, match="session must not be empty"):
        client.search(user, "bees", session="")
    with pytest.raises(mc.InvalidInput, match="session must not be empty"):
        client.recall(user, "bees", session="")
    # In a query string the same name is a bad query parameter: 400.
    with pytest.raises(mc.BadRequest, match="agent must not be empty"):
        client.list_memories(user, agent="")
    with pytest.raises(mc.BadRequest, match="agent must not be empty"):
        client.stats(user, agent="")
    with pytest.raises(mc.BadRequest, match="agent must not be empty"):
        client.view(user, "timeline", agent="")


def test_presets_list_parameters(client: Client) -> None:
    presets = {p.name: p for p in client.presets()}
    assert "retrieval" in presets
    assert any(p.params for p in presets.values())
    top_k = {q.name: q for q in presets["retrieval"].params}["top_k"]
    assert top_k.default == "10" and top_k.doc


def test_views_under_the_default_preset(client: Client, user: str) -> None:
    client.add_turns(user, Turn("user", "I am a nurse in Porto."))
    # The default preset (retrieval) builds no persona: the view answers 200 and says so.
    persona = client.view(user, "persona")
    assert persona.view == "persona"
    assert persona.text.startswith(f"no persona for default/{user}")
    timeline = client.view(user, "timeline")
    assert timeline.view == "timeline" and timeline.text
    with pytest.raises(mc.NotFound, match="no view 'mood'"):
        client.view(user, "mood")


def test_stats_jobs_and_sessions(client: Client, user: str) -> None:
    client.add_turns(user, [Turn("user", "a"), Turn("user", "b")], agent="coach", session="s1")
    stats = client.stats(user, agent="coach")
    assert stats.preset == "default" and stats.memories == {"turn": 2}
    # Without an agent: every agent's memories, and each agent's own.
    client.add_turns(user, Turn("user", "c"), agent="tutor")
    every = client.stats(user)
    assert every.preset is None and every.memories == {"turn": 3}
    assert {a: s.memories for a, s in every.agents.items()} == {"coach": {"turn": 2},
                                                                 "tutor": {"turn": 1}}
    assert client.jobs(user) == []
    report = client.end_session(user, "s1", agent="coach")
    assert report.failed == 0 and report.errors == ()
    assert [m.session for m in client.list_memories(user, agent="coach")] == ["s1", "s1"]
    with pytest.raises(mc.NotFound):
        client.retry_job(user, "no-such-job")


def test_no_server_is_a_connection_error(nowhere_url: str) -> None:
    with Client(nowhere_url, timeout=2.0) as nowhere:
        with pytest.raises(mc.ConnectionError) as caught:
            nowhere.health()
    assert caught.value.code == "connection_error"
    assert caught.value.__cause__ is not None


def test_what_is_true_now(client: Client, user: str) -> None:
    tallinn = datetime(2024, 1, 10, 9, tzinfo=timezone.utc)
    porto = datetime(2024, 6, 1, 9, tzinfo=timezone.utc)
    client.add_turns(user, Turn("user", "I live in Tallinn.", time=tallinn))
    moved = client.add_turns(user, Turn("user", "Big news: I just moved, and I live in Porto now.",
                                        time=porto))
    assert {c.kind for c in moved.changes} >= {"superseded", "turn_superseded"}

    now = [h.memory.text for h in client.search(user, "Where do I live?")]
    assert any("Porto" in t for t in now) and not any("Tallinn" in t for t in now)
    everything = client.search(user, "Where do I live?", include_superseded=True)
    stale = [h for h in everything if h.superseded]
    assert stale and all(h.memory.superseded_by and not h.memory.is_current for h in stale)
    assert everything.hits[-1].superseded
    then = [h.memory.text for h in client.search(user, "Where do I live?", as_of="2024-03-01")]
    assert any("Tallinn" in t for t in then) and not any("Porto" in t for t in then)
    context = client.recall(user, "Where do I live?")
    assert "Porto" in context.text and "previously: Tallinn" in context.text
    assert [m.text for m in client.list_memories(user, kind="turn", current=True)] \
        == ["Big news: I just moved, and I live in Porto now."]
    with pytest.raises(mc.BadRequest, match="as_of"):
        client.search(user, "Where do I live?", as_of="last spring")


def test_relevance_and_forget_requests(client: Client, user: str) -> None:
    client.add_turns(user, [Turn("user", "User prefers dark mode."),
                            Turn("user", "My passport number is X4417902.")])
    found = client.search(user, "Does the user like dark mode?")
    assert found.hits[0].relevance is not None and 0.003 <= found.hits[0].relevance <= 1
    assert client.search(user, "quantum chromodynamics research papers").hits == ()
    assert client.recall(user, "quantum chromodynamics research papers").items == ()
    assert client.search(user, "quantum chromodynamics research papers", min_relevance=0).hits
    for floor in (-0.1, 1.5):
        with pytest.raises(mc.BadRequest, match="min_relevance"):
            client.search(user, "dark mode", min_relevance=floor)

    client.add_turns(user, Turn("user", "Please forget my passport number."))
    for query in ("passport number", "X4417902"):
        texts = [h.memory.text for h in client.search(user, query, min_relevance=0)]
        assert not any("X4417902" in t for t in texts)
        assert "X4417902" not in client.recall(user, query).text
    assert "asked to forget" in client.recall(user, "What is my passport number?").text
    listed = [m.text for m in client.list_memories(user, state="all")]
    assert not any("X4417902" in t for t in listed)


def test_forget_by_description_lists_first_then_forgets_what_it_listed(
    client: Client, user: str
) -> None:
    client.add_turns(user, [Turn("user", "I live in Tallinn."),
                            Turn("user", "I just moved, I live in Porto now."),
                            Turn("user", FACT)])
    shown = client.forget_matching(user, "my old address")
    assert not shown.confirmed and len(shown) == 2
    assert {c.selected_by for c in shown} <= {"relevance", "topic", "replaced"}
    assert any(c.superseded for c in shown) and shown.derived >= 2
    assert all(c.memory.state == "active" for c in shown)
    assert client.list_memories(user, state="forgotten").total == 0  # a dry run writes nothing

    done = client.forget_matching(user, "my old address", confirm=True, ids=shown.ids,
                                  reason="moved away")
    assert done.confirmed and done.ids == shown.ids and done.skipped == ()
    assert all(c.memory.forgotten is not None and c.memory.forgotten.reason == "moved away"
               for c in done)
    left = [m.text for m in client.list_memories(user)]
    assert left == [FACT]
    again = client.forget_matching(user, "my old address", confirm=True, ids=shown.ids)
    assert not again.confirmed and set(again.skipped) == set(shown.ids)
    with pytest.raises(mc.InvalidInput, match="query"):
        client.forget_matching(user, "  ")
