"""hookd-client over TLS, trusting hookd's CA from a file."""

from __future__ import annotations

import os

import grpc
import pytest

from hookd_client import HookdClient, HookdError


@pytest.fixture
def tls() -> tuple[str, str, str]:
    """The TLS hookd clients/test.sh starts: its address, token and CA file."""
    addr = os.environ.get("HOOKD_TLS_GRPC_ADDR")
    if not addr:
        pytest.skip("no live hookd over TLS: run clients/test.sh")
    return addr, os.environ["HOOKD_ADMIN_TOKEN"], os.environ["HOOKD_TLS_CA_FILE"]


def test_tls_with_a_ca_file(tls: tuple[str, str, str]) -> None:
    addr, token, ca_file = tls
    with HookdClient(addr, token, root_certificates=ca_file) as client:
        created = client.create_tenant("py-tls")
        assert client.get_tenant("py-tls").tenant_id == created.tenant.tenant_id


def test_tls_refuses_an_untrusted_server(tls: tuple[str, str, str]) -> None:
    addr, token, _ = tls
    with HookdClient(addr, token, tls=True, timeout=10) as client:
        with pytest.raises(HookdError) as refused:
            client.get_tenant("py-tls")
    assert refused.value.code == grpc.StatusCode.UNAVAILABLE
