"""Bearer authentication: one interceptor adds hookd's token to every call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import grpc


class _Details(NamedTuple):
    method: str
    timeout: float | None
    metadata: Any
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


class _CallDetails(_Details, grpc.ClientCallDetails):
    """The call's details with the authorization header added."""


class BearerAuth(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Sends ``authorization: Bearer <token>`` with every call, in plaintext
    and over TLS alike (grpcio's access-token credentials need TLS)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("hookd needs a token: the admin token or a tenant token")
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [*(details.metadata or ()), self._header]
        return _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )

    def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.ClientCallDetails, Any], Any],
        client_call_details: grpc.ClientCallDetails,
        request: Any,
    ) -> Any:
        """Adds the token to a unary call."""
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(
        self,
        continuation: Callable[[grpc.ClientCallDetails, Any], Iterator[Any]],
        client_call_details: grpc.ClientCallDetails,
        request: Any,
    ) -> Any:
        """Adds the token to a server-streaming call (WatchDeliveries)."""
        return continuation(self._with_token(client_call_details), request)
