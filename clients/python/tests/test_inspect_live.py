"""The inspector's reads (overview, retention, access log, derived memories, a turn in
context, list filters, score breakdowns, view data, memory scores and forget causes) with
the blocking client against live servers (see conftest.py). Each test works on a user of
its own."""

from __future__ import annotations

import time
from typing import Iterator, List

import pytest

import mnemos_client as mc
from mnemos_client import Client, Turn

from conftest import Server

FACT = "My sister Mia is allergic to peanuts."
TEA = "I drink oolong tea every morning."
COFFEE_ZH = "我每天下午喝一杯咖啡。"
NURSE = "I work as a nurse in Porto."
JOB_SECONDS = 30.0


@pytest.fixture()
def presets(preset_server: Server) -> Iterator[Client]:
    with Client(preset_server.url, timeout=10.0) as c:
        yield c


def wait_for_jobs(client: Client, user: str) -> mc.Overview:
    """The overview once the background worker ran every derived job."""
    deadline = time.monotonic() + JOB_SECONDS
    while True:
        overview = client.overview(user)
        if overview.jobs.pending == 0 and overview.jobs.failed == 0:
            return overview
        if time.monotonic() > deadline:
            pytest.fail(f"derived jobs still unfinished after {JOB_SECONDS:.0f} s: "
                        f"{client.jobs(user)}")
        time.sleep(0.1)


def seed_session(client: Client, user: str, agent: str) -> mc.AddResult:
    """One closed session of four turns under ``agent``, its derived work done."""
    added = client.add_turns(user, [
        Turn("user", FACT, speaker="Ann"),
        Turn("assistant", "Noted, no peanuts for Mia."),
        Turn("user", TEA, metadata={"topic": "tea"}),
        Turn("user", NURSE),
    ], agent=agent, session="s1")
    client.end_session(user, "s1", agent=agent)
    wait_for_jobs(client, user)
    return added


# ---- memory fields and forget causes -----------------------------------------------------


def test_new_memory_fields_and_the_cause_of_a_requested_forget(client: Client, user: str) -> None:
    added = client.add_turns(user, Turn("user", FACT, time="2024-05-01T09:30:00Z"))
    memory = client.get_memory(user, added.memory_ids[0])
    assert memory.valid_from == "2024-05-01T09:30:00.000Z"
    assert memory.valid_from_at is not None and memory.valid_from_at.year == 2024
    assert (memory.valid_to, memory.valid_to_at) == (None, None)
    assert memory.scores == mc.Scores()  # the retrieval preset attaches no numbers
    assert (memory.access_count, memory.last_access) == (0, None)
    assert memory.forgotten is None

    result = client.forget(user, memory.id, reason="user asked")
    cause = result.memory.forgotten
    assert cause is not None
    assert (cause.reason, cause.by, cause.preset, cause.source) == (
        "user asked", "request", None, None)
    assert client.get_memory(user, memory.id).forgotten == cause


def test_forgetting_a_turn_takes_its_derived_memories_along(presets: Client, user: str) -> None:
    added = seed_session(presets, user, "bank")
    fact_id = added.memory_ids[0]
    derived = presets.derived(user, fact_id)
    assert derived and {m.kind for m in derived} >= {"summary"}
    assert all(added.turns[0].turn_id in m.provenance for m in derived)
    assert all(m.is_active for m in derived)
    summary = next(m for m in derived if m.kind == "summary")
    assert summary.scores.strength is not None  # memorybank's Ebbinghaus strength
    assert presets.derived(user, summary.id) == []  # only a turn's memory has derived ones

    result = presets.forget(user, fact_id, reason="wrong person")
    assert result.derived_forgotten == len(derived)
    for memory in presets.derived(user, fact_id):
        assert memory.state == "forgotten" and memory.forgotten is not None
        assert (memory.forgotten.by, memory.forgotten.source) == ("derived", fact_id)
    retention = presets.retention(user, agent="bank")
    assert retention.forgotten_by == {"request": 1, "derived": len(derived)}
    with pytest.raises(mc.NotFound):
        presets.derived(user, "01a2135c-0000-7000-8000-000000000000")


def test_a_preset_policy_forgets_with_its_name(presets: Client, user: str) -> None:
    seed_session(presets, user, "lufy")
    gone = [m for m in presets.iter_memories(user, state="forgotten", agent="lufy")]
    assert gone, "lufy keeps only the top share of each session"
    for memory in gone:
        assert memory.forgotten is not None
        assert (memory.forgotten.by, memory.forgotten.preset) == ("preset", "lufy")
        assert memory.forgotten.source is None
    assert presets.retention(user).forgotten_by == {"lufy": len(gone)}

    ranked = presets.list_memories(user, state="all", kind="exchange", sort="importance")
    importances = [m.scores.importance for m in ranked]
    assert importances and all(i is not None for i in importances)
    assert importances == sorted(importances, reverse=True)
    assert all(isinstance(v, float) for m in ranked for v in m.scores.extra.values())


# ---- listing filters -----------------------------------------------------------------------


def seed_labelled(client: Client, user: str) -> List[str]:
    added = client.add_turns(user, [
        Turn("user", TEA, metadata={"topic": "drinks", "lang": "en"}),
        Turn("user", COFFEE_ZH, metadata={"topic": "drinks", "lang": "zh"}),
        Turn("user", NURSE, metadata={"topic": "work", "lang": "en"}),
        Turn("user", "Coffee makes me jittery.", metadata={"topic": "drinks", "lang": "en"}),
    ])
    return list(added.memory_ids)


def test_list_by_metadata_text_and_order(client: Client, user: str) -> None:
    ids = seed_labelled(client, user)
    drinks = client.list_memories(user, meta={"topic": "drinks"})
    assert [m.id for m in drinks] == [ids[0], ids[1], ids[3]] and drinks.total == 3
    both = client.list_memories(user, meta={"topic": "drinks", "lang": "en"})
    assert [m.id for m in both] == [ids[0], ids[3]]
    assert client.list_memories(user, meta={"topic": "sports"}).total == 0

    chinese = client.list_memories(user, q="咖啡")
    assert [m.text for m in chinese] == [COFFEE_ZH]
    assert [m.id for m in client.list_memories(user, q="COFFEE")] == [ids[3]]  # any case
    assert client.list_memories(user, q="tea", meta={"lang": "zh"}).total == 0

    # Turns only: a preference stated in a turn is also kept as a fact of its own.
    newest = client.list_memories(user, kind="turn", sort="newest")
    assert [m.id for m in newest] == ids[::-1]
    assert [m.id for m in client.list_memories(user, kind="turn", sort="oldest")] == ids
    # The default preset scores nothing: by importance, ties come newest first.
    by_importance = client.list_memories(user, kind="turn", sort="importance")
    assert [m.id for m in by_importance] == ids[::-1]

    # Paging keeps the filter and the order.
    paged = [m.id for m in client.iter_memories(user, limit=1, meta={"topic": "drinks"},
                                                sort="newest")]
    assert paged == [ids[3], ids[1], ids[0]]


def test_bad_list_filters(client: Client, user: str) -> None:
    seed_labelled(client, user)
    with pytest.raises(mc.BadRequest, match="sort") as caught:
        client.list_memories(user, sort="random")  # type: ignore[arg-type]
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    with pytest.raises(mc.BadRequest):
        client.list_memories(user, q="   ")
    # Keys the server could not split back apart never leave the client.
    with pytest.raises(ValueError, match="meta key"):
        client.list_memories(user, meta={"a=b": "c"})
    with pytest.raises(ValueError, match="meta key"):
        client.list_memories(user, meta={"": "c"})
    # A value may hold "=": the server splits at the first one.
    assert client.list_memories(user, meta={"topic": "a=b"}).total == 0


# ---- turns, overview, retention, access ------------------------------------------------------


def test_a_turn_in_its_context(client: Client, user: str) -> None:
    texts = [f"turn number {i}" for i in range(6)]
    added = client.add_turns(user, [Turn("user" if i % 2 == 0 else "assistant", t)
                                     for i, t in enumerate(texts)], session="s1")
    client.add_turns(user, Turn("user", "elsewhere", speaker="Ann", metadata={"k": "v"}),
                     session="s2")
    turn_ids = [t.turn_id for t in added.turns]

    context = client.get_turn(user, turn_ids[2], around=1)
    assert context.turn.id == turn_ids[2]
    assert (context.turn.text, context.turn.role, context.turn.session) == (
        texts[2], "user", "s1")
    assert context.turn.memory_id == added.turns[2].memory_id
    assert context.turn.agent == "default" and context.turn.speaker is None
    assert context.turn.at.round >= 0
    assert [t.text for t in context.before] == [texts[1]]
    assert [t.text for t in context.after] == [texts[3]]
    assert [t.id for t in context.turns] == turn_ids[1:4]

    first = client.get_turn(user, turn_ids[0])  # server default: 3 on each side
    assert first.before == () and [t.text for t in first.after] == texts[1:4]
    assert client.get_turn(user, turn_ids[5], around=0).after == ()

    other = client.get_turn(user, client.list_memories(user, session="s2").memories[0]
                            .provenance[0])
    assert (other.turn.speaker, other.turn.metadata) == ("Ann", {"k": "v"})
    assert other.before == () and other.after == ()  # another session's turns stay out

    with pytest.raises(mc.BadRequest, match="around"):
        client.get_turn(user, turn_ids[0], around=51)
    with pytest.raises(mc.NotFound):
        client.get_turn(user, "01a2135c-0000-7000-8000-000000000000")


def test_overview_counts_a_user(client: Client, user: str) -> None:
    added = client.add_turns(user, [Turn("user", "a"), Turn("user", "b")], agent="coach",
                             session="s1")
    client.add_turns(user, Turn("user", "c"), agent="tutor", session="s2")
    client.forget(user, added.memory_ids[0])
    overview = client.overview(user)
    assert (overview.user, overview.turns, overview.sessions) == (user, 3, 2)
    assert overview.agents == ("coach", "tutor")
    assert overview.memories == {"turn": mc.StateCounts(active=2, forgotten=1)}
    assert overview.memories["turn"].total == 3
    assert overview.jobs == mc.JobCounts(pending=0, failed=0, stuck=0)
    assert overview.last_activity is not None and overview.last_activity.round >= 1
    with pytest.raises(mc.NotFound):
        client.overview("nobody-" + user)


def test_retention_over_rounds(client: Client, user: str) -> None:
    added = client.add_turns(user, [Turn("user", f"line {i}") for i in range(10)])
    for memory_id in added.memory_ids[:3]:
        client.forget(user, memory_id)
    retention = client.retention(user)
    assert retention.forgotten_by == {"request": 3}
    last = retention.series[-1]
    assert (last.created, last.forgotten, last.active) == (10, 3, 7)
    assert retention.last_round >= last.round
    assert all(p.active == p.created - p.forgotten for p in retention.series)
    rounds = [p.round for p in retention.series]
    assert rounds == sorted(rounds)

    thinned = client.retention(user, points=2)
    assert len(thinned.series) == 2
    assert (thinned.series[0], thinned.series[-1]) == (retention.series[0], last)
    with pytest.raises(mc.BadRequest, match="points"):
        client.retention(user, points=1)
    with pytest.raises(mc.NotFound):
        client.retention("nobody-" + user)


def test_access_log_of_retrieved_memories(demo_server: Server) -> None:
    with Client(demo_server.url, timeout=10.0) as demo:
        retrieved = [m for m in demo.iter_memories("lena") if m.access_count > 0]
        assert retrieved, "mnemos demo's searches record what they retrieved"
        for memory in retrieved:
            log = demo.access_log("lena", memory.id)
            assert log.total == memory.access_count == len(log)
            assert log.accesses[0].at == memory.last_access
            assert all(a.rank >= 1 for a in log)
            times = [a.at.datetime for a in log]
            assert times == sorted(times, reverse=True)  # newest first
        never = next(m for m in demo.iter_memories("lena") if m.access_count == 0)
        assert never.last_access is None
        assert demo.access_log("lena", never.id) == mc.AccessLog(accesses=(), total=0)


def test_searches_over_http_record_no_access(client: Client, user: str) -> None:
    added = client.add_turns(user, Turn("user", FACT))
    assert len(client.search(user, "peanuts")) == 1
    assert client.access_log(user, added.memory_ids[0]).total == 0
    with pytest.raises(mc.NotFound):
        client.access_log(user, "01a2135c-0000-7000-8000-000000000000")


# ---- search breakdown and view data ----------------------------------------------------------


def test_search_hits_carry_their_score_breakdown(client: Client, user: str) -> None:
    client.add_turns(user, [Turn("user", FACT), Turn("user", TEA), Turn("user", NURSE)])
    hits = client.search(user, "Mia peanuts allergy")
    assert len(hits) > 0
    for hit in hits:
        b = hit.breakdown
        assert b is not None
        assert b.final == pytest.approx(hit.score, abs=1e-4)
        assert b.fused + sum(a.delta for a in b.adjustments) == pytest.approx(b.final, abs=1e-4)
        assert b.lexical is not None or b.dense is not None
        for signal in (b.lexical, b.dense):
            assert signal is None or signal.rank >= 1
    top = hits.hits[0]
    assert top.memory.text == FACT
    assert top.breakdown is not None and top.breakdown.lexical is not None
    assert top.breakdown.lexical.score > 0


def test_views_carry_typed_data(presets: Client, user: str) -> None:
    seed_session(presets, user, "moom")
    seed_session(presets, user, "chains")

    persona = presets.view(user, "persona", agent="moom")
    assert isinstance(persona.data, tuple) and persona.data
    assert all(isinstance(k, mc.PersonaKey) for k in persona.data)
    keys = {k.key: k for k in persona.data}
    assert "job" in keys and keys["job"].subject == "Ann"
    assert [v.value for v in keys["job"].current] == ["nurse"]
    assert all(v.active and v.turns >= 1 for v in keys["job"].current)

    timeline = presets.view(user, "timeline", agent="moom")
    assert timeline.data and all(isinstance(n, mc.TimelineNode) for n in timeline.data)
    top = timeline.data[0]
    assert top.level >= 1 and top.from_round <= top.to_round and top.turns == 4
    assert all(isinstance(child, mc.TimelineNode) for child in top.children)

    chains = presets.view(user, "chains", agent="chains")
    assert isinstance(chains.data, mc.Chains)
    assert chains.data.chains and chains.data.chains[0].nodes
    node = chains.data.chains[0].nodes[0]
    assert node.session == "s1" and node.turns == 4 and node.categories

    # A preset without that view answers it empty, as data too.
    assert presets.view(user, "persona", agent="bank").data == ()
    assert presets.view(user, "chains", agent="bank").data == mc.Chains((), ())
