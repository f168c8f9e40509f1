"""The services as typed attributes: each generated stub, wrapped so that a
call gets the client's default timeout and raises HookdError."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar, cast

import grpc

from .errors import HookdError

_T = TypeVar("_T")


class Stream(Iterator[_T]):
    """A server stream (WatchDeliveries) whose failures raise HookdError;
    ``cancel()`` ends it."""

    def __init__(self, call: Any) -> None:
        self._call = call

    def __iter__(self) -> Stream[_T]:
        return self

    def __next__(self) -> _T:
        try:
            item: _T = next(self._call)
            return item
        except grpc.RpcError as err:
            if isinstance(err, grpc.Call) and err.code() == grpc.StatusCode.CANCELLED:
                raise StopIteration from None
            raise HookdError.from_rpc_error(err) from None

    def wait_open(self) -> None:
        """Waits until hookd has answered the call: every event from then on
        is streamed (WatchDeliveries sends nothing from before)."""
        try:
            self._call.initial_metadata()
        except grpc.RpcError as err:
            raise HookdError.from_rpc_error(err) from None

    def cancel(self) -> None:
        """Ends the stream; iterating then stops."""
        self._call.cancel()


class _Method:
    """One RPC: calling it raises HookdError instead of grpc.RpcError."""

    def __init__(self, callable_: Any, timeout: float | None) -> None:
        self._callable = callable_
        self._streaming = isinstance(callable_, grpc.UnaryStreamMultiCallable)
        self._timeout = timeout

    def __call__(self, request: Any, **kwargs: Any) -> Any:
        if not self._streaming:
            kwargs.setdefault("timeout", self._timeout)
        try:
            result = self._callable(request, **kwargs)
        except grpc.RpcError as err:
            raise HookdError.from_rpc_error(err) from None
        return Stream[Any](result) if self._streaming else result

    def __getattr__(self, name: str) -> Any:
        # `future`, `with_call`: grpcio's own, raising grpc.RpcError.
        return getattr(self._callable, name)


class _Service:
    def __init__(self, stub: object, timeout: float | None) -> None:
        self._stub = stub
        self._timeout = timeout

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self._stub, name), self._timeout)


def service(stub_type: type[_T], channel: grpc.Channel, timeout: float | None) -> _T:
    """The stub of ``stub_type`` on ``channel``, typed as the generated stub
    (methods by their proto names, ``CreateTenant``, with the messages of
    ``hookd.v1``), raising HookdError."""
    return cast(_T, _Service(stub_type(channel), timeout))  # type: ignore[call-arg]
