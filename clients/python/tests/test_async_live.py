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
