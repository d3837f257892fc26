"""Live ``mnemos serve`` processes for the tests, each started once per session on a free
loopback port, over a fresh database in a temporary directory, with the hash embedder (no
model download):

- ``server_url``: an open server (no key stored, no admin key), as after a fresh install.
- ``admin_server``: one with ``MNEMOS_ADMIN_KEY`` set, so every ``/v1`` request needs a key
  and keys can be made over HTTP. It is a server of its own because an admin key (or the
  first stored key) switches a server to "keys required" for good.
- ``preset_server``: one whose ``mnemos.toml`` gives agents presets that derive and forget
  memories without a language model (``PRESET_AGENTS``), for derived memories, forget causes,
  importance scores and the persona, timeline and chains views.
- ``demo_server``: one over the database ``mnemos demo`` leaves, whose searches recorded
  accesses (searches over HTTP record none), for the access log.

Servers run with their working directory in their temporary directory and without the
caller's ``MNEMOS_*`` variables, so neither a ``mnemos.toml`` nor the caller's settings leak in.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, Mapping, Optional

import httpx
import pytest

from mnemos_client import Client

REPO = Path(__file__).resolve().parents[3]
DEFAULT_BIN = REPO / "target" / "release" / "mnemos"
STARTUP_SECONDS = 30.0
STOP_SECONDS = 10.0
# Agents of ``preset_server`` and their presets.
PRESET_AGENTS = {"bank": "memorybank", "lufy": "lufy", "moom": "moom", "chains": "m4"}


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env() -> Dict[str, str]:
    """The environment without mnemos settings that would change which config, database,
    tenant or embedder the server uses."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MNEMOS_")}


def wait_until_healthy(url: str, process: "subprocess.Popen[bytes]", log: Path) -> None:
    """Poll ``/healthz`` until it answers; fail with the server's log if it never does."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"mnemos serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    stop(process)
    pytest.fail(f"mnemos serve did not answer /healthz in {STARTUP_SECONDS:.0f} s:\n"
                f"{log.read_text()}")


def stop(process: "subprocess.Popen[bytes]") -> None:
    """SIGTERM (the server finishes requests in flight), then SIGKILL if it hangs."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def mnemos_binary() -> Path:
    """The server under test: ``$MNEMOS_BIN``, else the release build."""
    binary = Path(os.environ.get("MNEMOS_BIN", str(DEFAULT_BIN)))
    if not binary.exists():
        pytest.fail(f"no mnemos binary at {binary}: run `cargo build --release --bin mnemos` "
                    "or set MNEMOS_BIN")
    return binary


@dataclass(frozen=True)
class Server:
    """A running test server; ``db`` and ``binary`` let a test use the CLI on its database
    (``mnemos --db … keys create``) while it runs."""

    url: str
    db: Path
    binary: Path


@contextmanager
def running_server(
    extra_env: Optional[Mapping[str, str]] = None,
    config: Optional[str] = None,
    prepare: Optional[Callable[[Path, Path], None]] = None,
) -> Iterator[Server]:
    """Start ``mnemos serve`` with ``extra_env`` added to the cleaned environment, wait until
    it answers, and stop it (and remove its directory) on exit. ``config`` becomes the
    ``mnemos.toml`` of its working directory; ``prepare(binary, db)`` runs first."""
    binary = mnemos_binary()
    with tempfile.TemporaryDirectory(prefix="mnemos-client-test-") as tmp:
        port = free_port()
        db = Path(tmp) / "m.db"
        log = Path(tmp) / "server.log"
        if config is not None:
            (Path(tmp) / "mnemos.toml").write_text(config, encoding="utf-8")
        if prepare is not None:
            prepare(binary, db)
        command = [
            str(binary), "serve",
            "--listen", f"127.0.0.1:{port}",
            "--db", str(db),
            "--embedder", "hash",
        ]
        env = {**server_env(), **(extra_env or {})}
        with log.open("wb") as log_file:
            process = subprocess.Popen(command, cwd=tmp, env=env,
                                       stdout=log_file, stderr=subprocess.STDOUT)
            url = f"http://127.0.0.1:{port}"
            try:
                wait_until_healthy(url, process, log)
                yield Server(url=url, db=db, binary=binary)
            finally:
                stop(process)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    with running_server() as server:
        yield server.url


@pytest.fixture(scope="session")
def admin_key() -> str:
    """The admin key of ``admin_server``: 64 hex characters, like ``openssl rand -hex 32``."""
    return secrets.token_hex(32)


@pytest.fixture(scope="session")
def admin_server(admin_key: str) -> Iterator[Server]:
    with running_server({"MNEMOS_ADMIN_KEY": admin_key}) as server:
        yield server


@pytest.fixture(scope="session")
def preset_server() -> Iterator[Server]:
    agents = ", ".join(f'{agent} = "{preset}"' for agent, preset in PRESET_AGENTS.items())
    with running_server(config=f"[engine]\nagents = {{ {agents} }}\n") as server:
        yield server


def run_demo(binary: Path, db: Path) -> None:
    """``mnemos demo`` into ``db``: users lena and wei, and the accesses its searches keep."""
    subprocess.run([str(binary), "demo", "--keep-db", str(db), "--embedder", "hash"],
                   cwd=db.parent, env=server_env(), check=True, capture_output=True)


@pytest.fixture(scope="session")
def demo_server() -> Iterator[Server]:
    with running_server(prepare=run_demo) as server:
        yield server


@pytest.fixture()
def admin(admin_server: Server, admin_key: str) -> Iterator[Client]:
    """A client holding the admin key: it manages keys and reads no tenant's data."""
    with Client(admin_server.url, api_key=admin_key, timeout=10.0) as c:
        yield c


@pytest.fixture(autouse=True)
def no_client_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's MNEMOS_URL / MNEMOS_API_KEY must not steer the clients under test."""
    monkeypatch.delenv("MNEMOS_URL", raising=False)
    monkeypatch.delenv("MNEMOS_API_KEY", raising=False)


@pytest.fixture()
def client(server_url: str) -> Iterator[Client]:
    with Client(server_url, timeout=10.0) as c:
        yield c


@pytest.fixture()
def user() -> str:
    """A user of its own for each test, so tests on the shared server stay independent."""
    return f"user-{uuid.uuid4().hex[:12]}"


@pytest.fixture()
def nowhere_url() -> str:
    """A loopback URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"
