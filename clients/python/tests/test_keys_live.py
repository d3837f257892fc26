"""API keys and tenants against the live server that has an admin key (``admin_server`` in
conftest.py): there every ``/v1`` request needs a key, and a tenant's key reaches only its
tenant's data.

Tests other than the acme/globex ones make keys for tenants of their own, so what one test
stores never shows up in another's ``users()``.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Callable, Iterator, List, NamedTuple, Optional

import pytest

import mnemos_client as mc
from mnemos_client import Client, Turn

from conftest import Server, server_env

ACME_TEXT = "Lena at Acme ships the rocket skates on Fridays."
GLOBEX_TEXT = "Lena at Globex waters the office plants on Mondays."
UNKNOWN_KEY = "mnk_" + "0" * 64

KeyFor = Callable[..., Client]


def fresh_tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:12]}"


@pytest.fixture()
def key_for(admin: Client) -> Iterator[KeyFor]:
    """``key_for(tenant, name=None)``: a new key for ``tenant``, made with the admin key, as
    an open client (closed after the test)."""
    opened: List[Client] = []

    def make(tenant: str, name: Optional[str] = None) -> Client:
        created = admin.create_key(tenant, name)
        client = Client(admin.base_url, api_key=created.secret, timeout=10.0)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


class Lenas(NamedTuple):
    acme: Client
    globex: Client
    acme_id: str
    globex_id: str


@pytest.fixture()
def lenas(key_for: KeyFor) -> Iterator[Lenas]:
    """The user ``lena`` in tenants ``acme`` and ``globex``, one memory each with different
    text; both are purged afterwards so each test starts from the same two memories."""
    acme, globex = key_for("acme", "acme-bot"), key_for("globex", "globex-bot")
    acme_id = acme.add_turns("lena", Turn("user", ACME_TEXT)).memory_ids[0]
    globex_id = globex.add_turns("lena", Turn("user", GLOBEX_TEXT)).memory_ids[0]
    yield Lenas(acme, globex, acme_id, globex_id)
    for client in (acme, globex):
        try:
            client.purge_user("lena")
        except mc.NotFound:
            pass


# ---- tenants -------------------------------------------------------------------------------


def test_each_tenant_sees_only_its_own_lena(lenas: Lenas) -> None:
    for client, mine, theirs in ((lenas.acme, ACME_TEXT, GLOBEX_TEXT),
                                 (lenas.globex, GLOBEX_TEXT, ACME_TEXT)):
        assert client.users() == ["lena"]
        assert [m.text for m in client.list_memories("lena")] == [mine]
        assert [h.memory.text for h in client.search("lena", "Lena on Fridays Mondays")] == [mine]
        recalled = client.recall("lena", "What does Lena do at work?").text
        assert mine in recalled and theirs not in recalled


def test_another_tenants_memory_id_is_not_found(lenas: Lenas) -> None:
    # Answered like an unknown id, so a caller cannot learn that it exists.
    with pytest.raises(mc.NotFound):
        lenas.globex.get_memory("lena", lenas.acme_id)
    with pytest.raises(mc.NotFound):
        lenas.globex.update_memory("lena", lenas.acme_id, text="overwritten from globex")
    with pytest.raises(mc.NotFound):
        lenas.globex.forget("lena", lenas.acme_id)
    memory = lenas.acme.get_memory("lena", lenas.acme_id)
    assert (memory.text, memory.version, memory.state) == (ACME_TEXT, 1, "active")


def test_purging_lena_in_one_tenant_leaves_the_other_intact(lenas: Lenas) -> None:
    purged = lenas.acme.purge_user("lena")
    assert (purged.turns, purged.memories) == (1, 1)
    assert lenas.acme.users() == []
    with pytest.raises(mc.NotFound):
        lenas.acme.list_memories("lena")

    assert lenas.globex.users() == ["lena"]
    assert lenas.globex.get_memory("lena", lenas.globex_id).text == GLOBEX_TEXT
    assert lenas.globex.list_memories("lena").total == 1


# ---- who may call what ---------------------------------------------------------------------


def test_no_key_is_unauthorized_and_writes_nothing(admin_server: Server, key_for: KeyFor) -> None:
    user = f"user-{uuid.uuid4().hex[:12]}"
    with Client(admin_server.url, timeout=10.0) as nobody:
        with pytest.raises(mc.Unauthorized) as caught:
            nobody.users()
        with pytest.raises(mc.Unauthorized):
            nobody.add_turns(user, Turn("user", "let me in"))
        assert nobody.health().status == "ok"  # health checks need no key
    assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    assert "API key is required" in caught.value.message
    # The refused add wrote nothing, not even in the tenant an open server would have used.
    assert user not in key_for("default").users()


def test_an_unknown_key_is_unauthorized(admin_server: Server) -> None:
    with Client(admin_server.url, api_key=UNKNOWN_KEY, timeout=10.0) as stranger:
        with pytest.raises(mc.Unauthorized) as caught:
            stranger.users()
    assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    assert "unknown or revoked" in caught.value.message


def test_the_admin_key_reads_no_tenant_data(admin: Client) -> None:
    with pytest.raises(mc.Forbidden) as caught:
        admin.users()
    assert (caught.value.status, caught.value.code) == (403, "forbidden")
    with pytest.raises(mc.Forbidden):
        admin.add_turns("lena", Turn("user", "written by the admin"))
    with pytest.raises(mc.Forbidden):
        admin.recall("lena", "anything")


def test_a_tenant_key_cannot_manage_keys(admin: Client, key_for: KeyFor) -> None:
    tenant_client = key_for(fresh_tenant())
    someone = admin.create_key(fresh_tenant())
    with pytest.raises(mc.Forbidden) as caught:
        tenant_client.list_keys()
    assert (caught.value.status, caught.value.code) == (403, "forbidden")
    with pytest.raises(mc.Forbidden):
        tenant_client.create_key("acme")
    with pytest.raises(mc.Forbidden):
        tenant_client.revoke_key(someone.id)
    assert admin.list_keys(someone.tenant)[0].is_active


# ---- key management ------------------------------------------------------------------------


def test_created_key_is_listed_without_its_secret(admin: Client) -> None:
    tenant = fresh_tenant()
    created = admin.create_key(tenant, name="support bot")
    assert (created.tenant, created.name, created.revoked) == (tenant, "support bot", None)
    assert created.secret.startswith("mnk_") and created.secret.startswith(created.prefix)
    assert created.secret not in repr(created)
    unnamed = admin.create_key(tenant)
    assert unnamed.name == "key"  # the server's default label

    listed = admin.list_keys(tenant)
    assert [k.id for k in listed] == [created.id, unnamed.id]  # oldest first
    assert listed[0] == created.key
    assert listed[0].is_active and listed[0].created_at.tzinfo is not None

    everything = admin.list_keys()
    assert {created.id, unnamed.id} <= {k.id for k in everything}
    wire = json.dumps([k.raw for k in everything])
    assert "secret" not in wire
    assert created.secret not in wire and unnamed.secret not in wire


def test_a_key_made_with_the_cli_works_at_once(admin_server: Server, admin: Client) -> None:
    tenant = fresh_tenant()
    made = subprocess.run(
        [str(admin_server.binary), "--db", str(admin_server.db), "--tenant", tenant,
         "keys", "create", "--name", "bot"],
        cwd=admin_server.db.parent, env=server_env(), capture_output=True, text=True,
        timeout=30, check=True,
    )
    secret = made.stdout.strip()
    assert secret.startswith("mnk_") and "\n" not in secret
    with Client(admin_server.url, api_key=secret, timeout=10.0) as bot:
        assert bot.users() == []
    assert [k.name for k in admin.list_keys(tenant)] == ["bot"]


def test_the_key_can_come_from_the_environment(
    admin_server: Server, admin: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMOS_API_KEY", admin.create_key(fresh_tenant()).secret)
    with Client(admin_server.url, timeout=10.0) as from_env:
        assert from_env.users() == []


def test_a_revoked_key_is_refused(admin: Client, key_for: KeyFor) -> None:
    tenant = fresh_tenant()
    client = key_for(tenant)
    client.add_turns("lena", Turn("user", "still here after the key is gone"))
    key_id = admin.list_keys(tenant)[0].id

    revoked = admin.revoke_key(key_id)
    assert revoked.id == key_id and not revoked.is_active
    assert revoked.revoked is not None and revoked.revoked_at is not None
    with pytest.raises(mc.Unauthorized) as caught:
        client.users()
    assert "unknown or revoked" in caught.value.message

    assert admin.list_keys(tenant)[0].revoked == revoked.revoked  # revoked keys stay listed
    assert admin.revoke_key(key_id).revoked == revoked.revoked  # the first time stands
    # The tenant's data outlives the key: a new key reads it.
    assert key_for(tenant).list_memories("lena").total == 1


def test_revoking_an_unknown_key_is_not_found(admin: Client) -> None:
    with pytest.raises(mc.NotFound):
        admin.revoke_key("01a2135c-0000-7000-8000-000000000000")
    with pytest.raises(mc.NotFound):
        admin.revoke_key("not-a-key-id")


def test_key_rules_are_the_servers(admin: Client) -> None:
    with pytest.raises(mc.InvalidInput, match="tenant must not be empty"):
        admin.create_key("")
    with pytest.raises(mc.InvalidInput, match="name must not be empty"):
        admin.create_key(fresh_tenant(), name="")
