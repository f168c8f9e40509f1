"""hookd-client: a typed Python client for hookd's gRPC control plane.

``HookdClient`` wraps the stubs generated from hookd's protos (package
``hookd.v1``) with bearer auth, TLS, paging helpers and one error type,
``HookdError``, carrying the gRPC status code.
"""

from importlib.metadata import version

from .client import HookdClient, Pem
from .errors import HookdError
from .paging import every_page
from .services import Stream

__all__ = ["HookdClient", "HookdError", "Pem", "Stream", "every_page", "__version__"]

__version__ = version("hookd-client")
"""This package's version, which is hookd's."""
