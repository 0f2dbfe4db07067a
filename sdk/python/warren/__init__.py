"""warren: the Python client of warren's HTTP API (its operations and models generated from the
server's OpenAPI document by scripts/python-sdk.ts)."""

from . import models
from ._extras import TERMINAL_RUN_STATUSES
from ._streams import StreamEvent
from .client import AsyncClient, Client
from .errors import API_ERROR_CODES, CLIENT_ERROR_CODES, WarrenApiError

__all__ = [
    "API_ERROR_CODES",
    "AsyncClient",
    "CLIENT_ERROR_CODES",
    "Client",
    "StreamEvent",
    "TERMINAL_RUN_STATUSES",
    "WarrenApiError",
    "models",
]
