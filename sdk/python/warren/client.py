"""The clients of a warren server: every operation of the API as `client.<group>.<operation>`,
sync (`Client`) and async (`AsyncClient`), on httpx."""

from typing import Any, Mapping, Optional

import httpx

from ._api import AsyncOperations, Operations
from ._transport import AsyncTransport, SyncTransport


class Client(Operations):
    """`Client("http://127.0.0.1:8080")`; `headers` go with every request (a trusted proxy's
    identity, say), `timeout` is each call's wait for its answer in seconds (None: no limit),
    `retries` how often an idempotent call is tried again after a connection error or a 503."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = 60.0,
        retries: int = 2,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self.transport = SyncTransport(base_url, headers, timeout, retries, http_client=http_client)
        self.base_url = self.transport.base_url
        super().__init__(self.transport)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient(AsyncOperations):
    """The same calls as `Client`, each awaited; streams are `async for`."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = 60.0,
        retries: int = 2,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self.transport = AsyncTransport(base_url, headers, timeout, retries, http_client=http_client)
        self.base_url = self.transport.base_url
        super().__init__(self.transport)

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
