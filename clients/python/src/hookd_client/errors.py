"""The one error type hookd-client raises for a failed call."""

from __future__ import annotations

import grpc


class HookdError(Exception):
    """A call hookd refused or could not answer.

    ``code`` is the gRPC status (``grpc.StatusCode.NOT_FOUND``, ...; the
    services' protos list which each call answers) and ``message`` hookd's
    plain-words reason, which names the field for INVALID_ARGUMENT.
    """

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> HookdError:
        """The HookdError of a failed grpcio call."""
        if isinstance(error, grpc.Call):
            return cls(error.code(), error.details() or "")
        return cls(grpc.StatusCode.UNKNOWN, str(error))
