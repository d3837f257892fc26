"""The asyncio client against the live server. Each test drives its coroutine with
``asyncio.run``, so no pytest plugin is needed."""

from __future__ import annotations

import asyncio
import uuid
from typing import List

import pytest

import mnemos_client as mc
from mnemos_client import AsyncClient, Turn

from conftest import Server

FACT = "My sister Mia is allergic to peanuts."


async def core_flow(url: str, user: str) -> None:
    async with AsyncClient(url, timeout=10.0) as client:
        assert (await client.health()).status == "ok"
        added = await client.add_turns(user, [Turn("user", FACT), Turn("user", "I like tea.")],
                                       idempotency_key="a-1")
        fact_id = added.memory_ids[0]
        retry = await client.add_turns(user, [Turn("user", FACT), Turn("user", "I like tea.")],
                                       idempotency_key="a-1")
        assert [t.status for t in retry.turns] == ["duplicate", "duplicate"]

        assert (await client.get_memory(user, fact_id)).text == FACT
        hits = await client.search(user, "peanut")
        assert hits.hits[0].memory.id == fact_id and hits.hits[0].explanation
        assert FACT in (await client.recall(user, "What is Mia allergic to?")).text

        updated = await client.update_memory(user, fact_id, text=FACT + " And cats.")
        assert updated.version == 2
        assert [e.change for e in await client.history(user, fact_id)] == ["created", "updated"]
        assert (await client.forget(user, fact_id)).already_forgotten is False
        assert (await client.forget(user, fact_id)).already_forgotten is True

        with pytest.raises(mc.NotFound):
            await client.get_memory(user, "01a2135c-0000-7000-8000-000000000000")
        with pytest.raises(mc.InvalidInput):
            await client.add_turns(user, Turn("user", ""))

        assert (await client.purge_user(user)).turns == 2
        with pytest.raises(mc.NotFound):
            await client.list_memories(user)


async def paging(url: str, user: str) -> List[str]:
    async with AsyncClient(url) as client:
        await client.add_turns(user, [Turn("user", f"line {i}") for i in range(120)])
        return [m.id async for m in client.iter_memories(user, limit=50)]


def test_async_core_flow(server_url: str, user: str) -> None:
    asyncio.run(core_flow(server_url, user))


def test_async_iter_memories(server_url: str, user: str) -> None:
    ids = asyncio.run(paging(server_url, user))
    assert len(ids) == 120 and len(set(ids)) == 120


def test_async_requests_run_concurrently(server_url: str) -> None:
    async def many() -> List[str]:
        async with AsyncClient(server_url) as client:
            users = [f"async-{i}" for i in range(5)]
            await asyncio.gather(*(client.add_turns(u, Turn("user", f"I am {u}")) for u in users))
            pages = await asyncio.gather(*(client.list_memories(u) for u in users))
            for u in users:
                await client.purge_user(u)
            return [p.memories[0].text for p in pages]

    assert asyncio.run(many()) == [f"I am async-{i}" for i in range(5)]


def test_async_key_management(admin_server: Server, admin_key: str, user: str) -> None:
    url = admin_server.url
    tenant = f"tenant-{uuid.uuid4().hex[:12]}"

    async def run() -> None:
        async with AsyncClient(url, admin_key, timeout=10.0) as admin:
            created = await admin.create_key(tenant, name="async bot")
            async with AsyncClient(url, created.secret, timeout=10.0) as bot:
                added = await bot.add_turns(user, Turn("user", FACT))
                assert await bot.users() == [user]
                assert (await bot.get_memory(user, added.memory_ids[0])).text == FACT
                assert [k.id for k in await admin.list_keys(tenant)] == [created.id]
                assert (await admin.revoke_key(created.id)).revoked is not None
                with pytest.raises(mc.Unauthorized):
                    await bot.users()

    asyncio.run(run())


async def inspector_flow(url: str, preset_url: str, user: str) -> None:
    async with AsyncClient(url, timeout=10.0) as client:
        added = await client.add_turns(user, [
            Turn("user", FACT, metadata={"topic": "family"}),
            Turn("user", "我每天下午喝一杯咖啡。", metadata={"topic": "drinks"}),
            Turn("user", "I like tea.", metadata={"topic": "drinks"}),
        ])
        ids = list(added.memory_ids)
        assert [m.id for m in await client.list_memories(user, meta={"topic": "drinks"})] \
            == ids[1:]
        assert [m.id for m in await client.list_memories(user, q="咖啡")] == [ids[1]]
        # Turns only: "I like tea." is also kept as a fact of its own.
        newest = await client.list_memories(user, kind="turn", sort="newest")
        assert [m.id for m in newest] == ids[::-1]
        paged = [m.id async for m in client.iter_memories(user, limit=1, sort="newest",
                                                          meta={"topic": "drinks"})]
        assert paged == [ids[2], ids[1]]
        with pytest.raises(mc.BadRequest):
            await client.list_memories(user, sort="random")  # type: ignore[arg-type]

        hit = (await client.search(user, "peanuts")).hits[0]
        assert hit.breakdown is not None
        assert hit.breakdown.final == pytest.approx(hit.score, abs=1e-4)

        context = await client.get_turn(user, added.turns[1].turn_id, around=1)
        assert [t.id for t in context.turns] == [t.turn_id for t in added.turns]
        assert (await client.access_log(user, ids[0])).total == 0
        assert await client.derived(user, ids[0]) == []

        forgotten = (await client.forget(user, ids[0], reason="asked")).memory.forgotten
        assert forgotten is not None and forgotten.by == "request"
        overview = await client.overview(user)
        assert overview.turns == 3 and overview.memories["turn"] == mc.StateCounts(2, 1)
        assert (await client.retention(user, points=2)).forgotten_by == {"request": 1}

    async with AsyncClient(preset_url, timeout=10.0) as presets:
        said = await presets.add_turns(user, [Turn("user", FACT, speaker="Ann"),
                                              Turn("user", "I work as a nurse in Porto.")],
                                       agent="moom", session="s1")
        await presets.end_session(user, "s1", agent="moom")
        for _ in range(300):
            if (await presets.overview(user)).jobs.pending == 0:
                break
            await asyncio.sleep(0.1)
        persona = await presets.view(user, "persona", agent="moom")
        assert persona.data and all(isinstance(k, mc.PersonaKey) for k in persona.data)
        derived = await presets.derived(user, said.memory_ids[0])
        assert derived and all(said.turns[0].turn_id in m.provenance for m in derived)


def test_async_inspector_reads(server_url: str, preset_server: Server, user: str) -> None:
    asyncio.run(inspector_flow(server_url, preset_server.url, user))
