"""The live hookd the tests talk to, from the environment clients/test.sh sets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hookd_client import HookdClient


@dataclass(frozen=True)
class Live:
    """Where the running hookd and the test sink listen."""

    grpc_addr: str
    http_url: str
    token: str
    sink_url: str


@pytest.fixture(scope="session")
def live() -> Live:
    """The hookd started by clients/test.sh; skips without one."""
    addr = os.environ.get("HOOKD_GRPC_ADDR")
    if not addr:
        pytest.skip("no live hookd: run clients/test.sh")
    return Live(addr, os.environ["HOOKD_HTTP_URL"], os.environ["HOOKD_ADMIN_TOKEN"], os.environ["HOOKD_SINK_URL"])


@pytest.fixture
def client(live: Live) -> Iterator[HookdClient]:
    """An admin client of the live hookd."""
    with HookdClient(live.grpc_addr, live.token) as c:
        yield c
