"""What the generated groups take in besides one method per operation (scripts/python-sdk.ts
names these classes): waiting for a run's end."""

import asyncio
import time
from typing import Any

from .errors import WarrenApiError

#: a run's statuses after which it does not change again
TERMINAL_RUN_STATUSES = frozenset({"succeeded", "failed", "timed_out", "cancelled", "lost"})


class RunsExtras(object):
    get: Any

    def wait(self, id: str, *, timeout: float = 600.0, interval: float = 0.25, max_interval: float = 2.0) -> Any:
        """Polls the run until its status is terminal and answers it then (a `timeout` error past `timeout` s)."""
        deadline = time.monotonic() + timeout
        delay = max(0.001, interval)
        while True:
            run = self.get(id)
            if run["status"] in TERMINAL_RUN_STATUSES:
                return run
            left = deadline - time.monotonic()
            if left <= 0:
                raise WarrenApiError(0, "timeout", f"run {id} is still {run['status']} after {timeout} s; wait longer or cancel it")
            time.sleep(min(delay, left))
            delay = min(max(max_interval, interval), delay * 2)


class AsyncRunsExtras(object):
    get: Any

    async def wait(self, id: str, *, timeout: float = 600.0, interval: float = 0.25, max_interval: float = 2.0) -> Any:
        """Polls the run until its status is terminal and answers it then (a `timeout` error past `timeout` s)."""
        deadline = time.monotonic() + timeout
        delay = max(0.001, interval)
        while True:
            run = await self.get(id)
            if run["status"] in TERMINAL_RUN_STATUSES:
                return run
            left = deadline - time.monotonic()
            if left <= 0:
                raise WarrenApiError(0, "timeout", f"run {id} is still {run['status']} after {timeout} s; wait longer or cancel it")
            await asyncio.sleep(min(delay, left))
            delay = min(max(max_interval, interval), delay * 2)
