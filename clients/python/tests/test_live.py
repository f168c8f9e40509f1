"""hookd-client against a live hookd: a tenant, a signed event, its dead
letter and its redelivery, paging and errors."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TypeVar

import grpc
import pytest
from standardwebhooks.webhooks import Webhook

from conftest import Live
from hookd.v1 import delivery_pb2, route_pb2, tenant_pb2
from hookd_client import HookdClient, HookdError

_T = TypeVar("_T")


def eventually(what: str, probe: Callable[[], _T | None], within_secs: float = 30.0) -> _T:
    """Polls ``probe`` until it returns something, at most ``within_secs``."""
    deadline = time.monotonic() + within_secs
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {within_secs} s")


def send_signed(live: Live, tenant_id: str, secret: str, event_id: str, body: str) -> dict[str, str]:
    """POSTs ``body`` to the tenant's ingest URL, signed the Standard Webhooks way."""
    now = datetime.now(tz=timezone.utc)
    signature = Webhook(secret).sign(event_id, now, body)
    request = urllib.request.Request(
        f"{live.http_url}/hooks/{tenant_id}",
        data=body.encode(),
        method="POST",
        headers={
            "content-type": "application/json",
            "webhook-id": event_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signature,
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202, response.status
        answer: dict[str, str] = json.load(response)
    return answer


def sink_count(live: Live, path: str) -> int:
    """How many POSTs the sink got on ``path``."""
    with urllib.request.urlopen(f"{live.sink_url}/seen{path}", timeout=10) as response:
        return int(response.read())


def new_tenant_id() -> str:
    return f"py-{uuid.uuid4().hex[:12]}"


def test_dead_letter_is_redelivered(live: Live, client: HookdClient) -> None:
    tenant_id = new_tenant_id()
    path = f"/{tenant_id}"
    created = client.create_tenant(tenant_id, destination_url=f"{live.sink_url}{path}")
    assert created.tenant.scheme == "standard" and created.secret.startswith("whsec_")

    accepted = send_signed(live, tenant_id, created.secret, "evt_py_1", '{"type":"order.paid","n":1}')
    delivery_id = accepted["delivery_id"]
    assert [d.event_id for d in client.iter_deliveries(tenant_id) if d.delivery_id == delivery_id] == ["evt_py_1"]

    dead = eventually(
        "the delivery answered 410 became a dead letter",
        lambda: next((d for d in client.iter_dead_letters(tenant_id) if d.delivery_id == delivery_id), None),
    )
    assert dead.last_status_code == 410 and dead.reason.startswith("permanent failure"), dead
    assert sink_count(live, path) == 1

    answer = client.redeliver(tenant_id, [delivery_id])
    assert len(answer.delivery_ids) == 1
    redelivery_id = answer.delivery_ids[0]
    original = client.get_delivery(tenant_id, delivery_id)
    assert original.status == delivery_pb2.DELIVERY_STATUS_REDELIVERED
    assert original.redelivered_as == redelivery_id
    listed = {d.delivery_id: d for d in client.iter_deliveries(tenant_id)}
    assert listed[redelivery_id].redelivery_of == delivery_id
    assert listed[redelivery_id].event_id == "evt_py_1"

    again = eventually(
        "the redelivery was sent and dead-lettered too",
        lambda: d if (d := client.get_delivery(tenant_id, redelivery_id)).status
        == delivery_pb2.DELIVERY_STATUS_DEAD else None,
    )
    assert again.attempts[0].status_code == 410
    assert sink_count(live, path) == 2
    assert [d.delivery_id for d in client.iter_dead_letters(tenant_id)] == [redelivery_id]


def test_iterators_walk_every_page(live: Live, client: HookdClient) -> None:
    ids = sorted(new_tenant_id() for _ in range(3))
    for tenant_id in ids:
        client.create_tenant(tenant_id)
    seen = [t.tenant_id for t in client.iter_tenants(page_size=1)]
    assert [t for t in seen if t in ids] == ids
    assert seen == sorted(seen)

    created = client.create_tenant(new_tenant_id())
    tenant_id = created.tenant.tenant_id
    sent = [send_signed(live, tenant_id, created.secret, f"evt_page_{n}", "{}")["delivery_id"] for n in range(3)]
    listed = [d.delivery_id for d in client.iter_deliveries(tenant_id, page_size=2)]
    # Newest first: by delivery id, which starts with the time of receipt.
    assert listed == sorted(sent, reverse=True), "every page, newest first"


def test_stored_events_are_replayed_into_a_new_route(live: Live, client: HookdClient) -> None:
    since_unix_ms = int(time.time() * 1000) - 60_000
    created = client.create_tenant(new_tenant_id(), destination_url=f"{live.sink_url}/replayed")
    tenant_id = created.tenant.tenant_id
    for n in range(5):
        send_signed(live, tenant_id, created.secret, f"evt_replay_{n}", '{"type":"order.paid"}')
    client.routes.CreateRoute(
        route_pb2.CreateRouteRequest(tenant_id=tenant_id, name="audit", destination_url=f"{live.sink_url}/audit")
    )

    counted = client.replay_to_route(tenant_id, "audit", since_unix_ms, event_type="order.paid", dry_run=True)
    assert counted.count == 5 and not counted.HasField("replay"), counted
    # One a second: it is still running while it is steered.
    started = client.replay_to_route(tenant_id, "audit", since_unix_ms, rate_per_second=1)
    replay_id = started.replay.id
    assert replay_id.startswith("rpl_") and started.replay.state == route_pb2.REPLAY_STATE_RUNNING
    assert client.pause_replay(tenant_id, replay_id).state == route_pb2.REPLAY_STATE_PAUSED
    assert client.resume_replay(tenant_id, replay_id).state == route_pb2.REPLAY_STATE_RUNNING
    cancelled = client.cancel_replay(tenant_id, replay_id)
    assert cancelled.state == route_pb2.REPLAY_STATE_CANCELLED and cancelled.finished_at_ms > 0
    assert client.get_replay(tenant_id, replay_id).state == route_pb2.REPLAY_STATE_CANCELLED
    assert [r.id for r in client.list_replays(tenant_id, "audit")] == [replay_id]
    assert client.list_replays(tenant_id, "default") == []

    with pytest.raises(HookdError) as finished:
        client.resume_replay(tenant_id, replay_id)
    assert finished.value.code == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(HookdError) as into_default:
        client.replay_to_route(tenant_id, "default", since_unix_ms)
    assert into_default.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_errors_carry_the_grpc_code(live: Live, client: HookdClient) -> None:
    with pytest.raises(HookdError) as missing:
        client.get_tenant("no-such-tenant")
    assert missing.value.code == grpc.StatusCode.NOT_FOUND

    with pytest.raises(HookdError) as invalid:
        client.tenants.CreateTenant(tenant_pb2.CreateTenantRequest(tenant_id="Not Valid"))
    assert invalid.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "tenant_id" in invalid.value.message

    with HookdClient(live.grpc_addr, "hka_not_the_admin_token_0123456789") as stranger:
        with pytest.raises(HookdError) as refused:
            next(stranger.iter_tenants())
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_watch_streams_what_happens(live: Live, client: HookdClient) -> None:
    created = client.create_tenant(new_tenant_id(), destination_url=f"{live.sink_url}/watched")
    tenant_id = created.tenant.tenant_id
    stream = client.watch_deliveries(tenant_id)
    stop = threading.Timer(30, stream.cancel)
    stop.start()
    try:
        stream.wait_open()
        delivery_id = send_signed(live, tenant_id, created.secret, "evt_watched", "{}")["delivery_id"]
        kinds = []
        for event in stream:
            assert event.delivery_id == delivery_id, event
            kinds.append(event.kind)
            if event.kind == delivery_pb2.DELIVERY_EVENT_KIND_DEAD_LETTERED:
                assert event.status_code == 410
                break
    finally:
        stream.cancel()
        stop.cancel()
    assert kinds == [delivery_pb2.DELIVERY_EVENT_KIND_ACCEPTED, delivery_pb2.DELIVERY_EVENT_KIND_DEAD_LETTERED]
    assert list(stream) == [], "a cancelled stream ends"
