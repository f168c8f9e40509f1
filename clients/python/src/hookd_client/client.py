"""HookdClient: one channel to hookd's control plane with bearer auth, TLS,
every service as a typed attribute and helpers for the common calls."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, cast

import grpc

from hookd.v1 import (
    alert_pb2_grpc,
    consumer_pb2_grpc,
    contract_pb2_grpc,
    delivery_pb2,
    delivery_pb2_grpc,
    rejection_pb2_grpc,
    route_pb2,
    route_pb2_grpc,
    secret_pb2_grpc,
    tenant_pb2,
    tenant_pb2_grpc,
    token_pb2_grpc,
)

from .auth import BearerAuth
from .paging import every_page
from .services import Stream, service

# hookd answers up to 80 MiB per response (a stored body at the largest body
# limit); grpcio's default receive limit is 4 MiB.
MAX_RESPONSE_BYTES = 80 * 1024 * 1024

Pem = bytes | str | os.PathLike[str]
"""PEM given as its bytes, or as the path of a file holding it."""


def _read_pem(pem: Pem | None) -> bytes | None:
    if pem is None or isinstance(pem, bytes):
        return pem
    with open(pem, "rb") as f:
        return f.read()


class HookdClient:
    """A client of hookd's gRPC control plane (``[grpc] addr``).

    ``address`` is ``host:port``; ``token`` the admin token or a tenant token,
    sent as ``authorization: Bearer`` with every call. With ``tls=True`` (or
    ``root_certificates``) the channel is TLS, trusting the system's roots or
    the given CA (PEM bytes or a file path); ``certificate_chain`` and
    ``private_key`` present a client certificate to a hookd that sets
    ``[grpc.tls] client_ca_file``. ``timeout`` (seconds) bounds each unary
    call. Every failed call raises :class:`HookdError`.

    The services are attributes typed as their generated stubs, e.g.
    ``client.tenants.GetTenant(tenant_pb2.GetTenantRequest(tenant_id="acme"))``;
    the methods below cover the common calls.
    """

    def __init__(
        self,
        address: str,
        token: str,
        *,
        tls: bool = False,
        root_certificates: Pem | None = None,
        certificate_chain: Pem | None = None,
        private_key: Pem | None = None,
        timeout: float | None = 30.0,
    ) -> None:
        options = [("grpc.max_receive_message_length", MAX_RESPONSE_BYTES)]
        if tls or root_certificates is not None or certificate_chain is not None:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read_pem(root_certificates),
                private_key=_read_pem(private_key),
                certificate_chain=_read_pem(certificate_chain),
            )
            raw = grpc.secure_channel(address, credentials, options=options)
        else:
            raw = grpc.insecure_channel(address, options=options)
        self._raw = raw
        channel = grpc.intercept_channel(raw, BearerAuth(token))
        self.tenants = service(tenant_pb2_grpc.TenantServiceStub, channel, timeout)
        self.secrets = service(secret_pb2_grpc.SecretServiceStub, channel, timeout)
        self.tokens = service(token_pb2_grpc.TokenServiceStub, channel, timeout)
        self.deliveries = service(delivery_pb2_grpc.DeliveryServiceStub, channel, timeout)
        self.routes = service(route_pb2_grpc.RouteServiceStub, channel, timeout)
        self.alerts = service(alert_pb2_grpc.AlertServiceStub, channel, timeout)
        self.contracts = service(contract_pb2_grpc.ContractServiceStub, channel, timeout)
        self.consumer = service(consumer_pb2_grpc.ConsumerServiceStub, channel, timeout)
        self.rejections = service(rejection_pb2_grpc.RejectionServiceStub, channel, timeout)

    def close(self) -> None:
        """Closes the channel; calls made after fail."""
        self._raw.close()

    def __enter__(self) -> HookdClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def create_tenant(
        self, tenant_id: str, *, scheme: str = "standard", destination_url: str = "", **settings: Any
    ) -> tenant_pb2.CreateTenantResponse:
        """Creates a tenant (admin token only); ``settings`` are the other
        fields of CreateTenantRequest. The response holds its first signing
        secret and destination secret, shown this once."""
        request = tenant_pb2.CreateTenantRequest(
            tenant_id=tenant_id, scheme=scheme, destination_url=destination_url, **settings
        )
        return self.tenants.CreateTenant(request)

    def get_tenant(self, tenant_id: str) -> tenant_pb2.Tenant:
        """Reads one tenant."""
        return self.tenants.GetTenant(tenant_pb2.GetTenantRequest(tenant_id=tenant_id))

    def iter_tenants(self, *, page_size: int = 0) -> Iterator[tenant_pb2.Tenant]:
        """Every tenant the token may see, in id order, over every page."""

        def fetch(token: str) -> tuple[Iterable[tenant_pb2.Tenant], str]:
            page = self.tenants.ListTenants(
                tenant_pb2.ListTenantsRequest(page_size=page_size, page_token=token)
            )
            return page.tenants, page.next_page_token

        return every_page(fetch)

    def iter_deliveries(
        self,
        tenant_id: str,
        *,
        status: delivery_pb2.DeliveryStatus.ValueType = delivery_pb2.DELIVERY_STATUS_UNSPECIFIED,
        route: str = "",
        page_size: int = 0,
    ) -> Iterator[delivery_pb2.Delivery]:
        """A tenant's deliveries of one route (default: ``default``), newest
        first, optionally of one status, over every page."""

        def fetch(token: str) -> tuple[Iterable[delivery_pb2.Delivery], str]:
            page = self.deliveries.ListDeliveries(
                delivery_pb2.ListDeliveriesRequest(
                    tenant_id=tenant_id, status=status, route=route, page_size=page_size, page_token=token
                )
            )
            return page.deliveries, page.next_page_token

        return every_page(fetch)

    def iter_dead_letters(
        self,
        tenant_id: str,
        *,
        route: str = "",
        since_unix_ms: int = 0,
        until_unix_ms: int = 0,
        reason_contains: str = "",
        page_size: int = 0,
    ) -> Iterator[delivery_pb2.DeadLetter]:
        """A tenant's dead letters of one route, most recently dead first,
        filtered as ListDeadLetters filters, over every page."""

        def fetch(token: str) -> tuple[Iterable[delivery_pb2.DeadLetter], str]:
            page = self.deliveries.ListDeadLetters(
                delivery_pb2.ListDeadLettersRequest(
                    tenant_id=tenant_id,
                    route=route,
                    since_unix_ms=since_unix_ms,
                    until_unix_ms=until_unix_ms,
                    reason_contains=reason_contains,
                    page_size=page_size,
                    page_token=token,
                )
            )
            return page.dead_letters, page.next_page_token

        return every_page(fetch)

    def get_delivery(self, tenant_id: str, delivery_id: str) -> delivery_pb2.Delivery:
        """One delivery with all its attempts."""
        return self.deliveries.GetDelivery(
            delivery_pb2.GetDeliveryRequest(tenant_id=tenant_id, delivery_id=delivery_id)
        )

    def get_event(self, tenant_id: str, delivery_id: str) -> delivery_pb2.Event:
        """The event a delivery carries: its stored headers and its body
        exactly as received (``json`` holds the text when it is JSON)."""
        return self.deliveries.GetEvent(
            delivery_pb2.GetEventRequest(tenant_id=tenant_id, delivery_id=delivery_id)
        )

    def redeliver(self, tenant_id: str, delivery_ids: Iterable[str]) -> delivery_pb2.RedeliverResponse:
        """Redelivers dead (or delivered) deliveries by id; the response
        lists the new deliveries' ids in the same order."""
        return self.deliveries.Redeliver(
            delivery_pb2.RedeliverRequest(tenant_id=tenant_id, delivery_ids=list(delivery_ids))
        )

    def retry_now(
        self, tenant_id: str, route: str = "", dry_run: bool = False
    ) -> delivery_pb2.RetryNowResponse:
        """Attempts every delivery of ``route`` (empty: ``default``) waiting
        for its retry now, without counting an extra attempt (at most 1,000
        per call; ``more`` says others wait); ``dry_run`` only counts them."""
        return self.deliveries.RetryNow(
            delivery_pb2.RetryNowRequest(
                tenant_id=tenant_id, all_waiting=True, route=route, dry_run=dry_run
            )
        )

    def cancel_pending(
        self, tenant_id: str, route: str = "", event_type: str = "", dry_run: bool = False
    ) -> delivery_pb2.CancelDeliveriesResponse:
        """Cancels every pending delivery of ``route`` (empty: ``default``),
        of ``event_type`` if given (at most 1,000 per call): each becomes a
        dead letter with reason ``cancelled``, nothing is sent;
        ``dry_run`` only counts them."""
        return self.deliveries.CancelDeliveries(
            delivery_pb2.CancelDeliveriesRequest(
                tenant_id=tenant_id,
                all_pending=True,
                route=route,
                event_type=event_type,
                dry_run=dry_run,
            )
        )

    def search_deliveries(self, id: str) -> list[delivery_pb2.Delivery]:
        """Every delivery whose id is ``id``, or of an event whose id is
        ``id``, on every tenant the token may read (the admin token: all;
        a tenant token: its own)."""
        found = self.deliveries.SearchDeliveries(delivery_pb2.SearchDeliveriesRequest(id=id))
        return list(found.deliveries)

    def route_metrics(
        self, tenant_id: str, name: str = "default", step_secs: int = 60, span_secs: int = 3600
    ) -> route_pb2.RouteMetrics:
        """A route's numbers by minute (``step_secs`` 60) or hour (3600) over
        ``span_secs`` (at most a day), and its queue now."""
        return self.routes.GetRouteMetrics(
            route_pb2.GetRouteMetricsRequest(
                tenant_id=tenant_id, name=name, step_secs=step_secs, span_secs=span_secs
            )
        )

    def pause_route(self, tenant_id: str, name: str = "default") -> route_pb2.Route:
        """Holds a route: events are still accepted and stored on it,
        nothing is sent until ``resume_route`` (every replica within a
        second)."""
        return self.routes.PauseRoute(route_pb2.PauseRouteRequest(tenant_id=tenant_id, name=name))

    def resume_route(
        self, tenant_id: str, name: str = "default", ramp_secs: int | None = None
    ) -> route_pb2.Route:
        """Lets a paused route send again, its forwards in flight rising from
        one to its limit over ``ramp_secs`` (``None``: 60; 0: at once)."""
        return self.routes.ResumeRoute(
            route_pb2.ResumeRouteRequest(tenant_id=tenant_id, name=name, ramp_secs=ramp_secs)
        )

    def replay_to_route(
        self,
        tenant_id: str,
        route: str,
        since_unix_ms: int,
        until_unix_ms: int = 0,
        event_type: str = "",
        body_pointer: str = "",
        body_value_json: str = "",
        rate_per_second: int = 0,
        dry_run: bool = False,
    ) -> route_pb2.ReplayToRouteResponse:
        """Replays the events the tenant accepted from ``since_unix_ms`` to
        ``until_unix_ms`` (0: now) into ``route`` (not ``default``), oldest
        first, at most ``rate_per_second`` deliveries a second (0: 100): each
        gets one delivery on the route if its filter passes it and the route
        has none of it yet. ``event_type`` and ``body_pointer`` with
        ``body_value_json`` narrow the events; ``dry_run`` only counts the
        deliveries it would make (``count``), else ``replay`` is the replay
        made."""
        return self.routes.ReplayToRoute(
            route_pb2.ReplayToRouteRequest(
                tenant_id=tenant_id,
                route=route,
                since_unix_ms=since_unix_ms,
                until_unix_ms=until_unix_ms,
                event_type=event_type,
                body_pointer=body_pointer,
                body_value_json=body_value_json,
                rate_per_second=rate_per_second,
                dry_run=dry_run,
            )
        )

    def get_replay(self, tenant_id: str, replay_id: str) -> route_pb2.Replay:
        """One replay and how far it got."""
        return self.routes.GetReplay(
            route_pb2.GetReplayRequest(tenant_id=tenant_id, replay_id=replay_id)
        )

    def list_replays(self, tenant_id: str, route: str = "") -> list[route_pb2.Replay]:
        """A tenant's replays (into ``route`` only, if given), newest first."""
        listed = self.routes.ListReplays(route_pb2.ListReplaysRequest(tenant_id=tenant_id, route=route))
        return list(listed.replays)

    def pause_replay(self, tenant_id: str, replay_id: str) -> route_pb2.Replay:
        """Stops a running replay where it is."""
        return self.routes.PauseReplay(
            route_pb2.ReplayActionRequest(tenant_id=tenant_id, replay_id=replay_id)
        )

    def resume_replay(self, tenant_id: str, replay_id: str) -> route_pb2.Replay:
        """Runs a paused (or failed) replay on from where it stopped."""
        return self.routes.ResumeReplay(
            route_pb2.ReplayActionRequest(tenant_id=tenant_id, replay_id=replay_id)
        )

    def cancel_replay(self, tenant_id: str, replay_id: str) -> route_pb2.Replay:
        """Ends a replay for good; the deliveries it made stay."""
        return self.routes.CancelReplay(
            route_pb2.ReplayActionRequest(tenant_id=tenant_id, replay_id=replay_id)
        )

    def watch_deliveries(self, tenant_id: str = "") -> Stream[delivery_pb2.DeliveryEvent]:
        """Streams a tenant's (empty: every visible tenant's) delivery events
        from now on, until ``cancel()``."""
        stream = self.deliveries.WatchDeliveries(delivery_pb2.WatchDeliveriesRequest(tenant_id=tenant_id))
        return cast(Stream[delivery_pb2.DeliveryEvent], stream)
