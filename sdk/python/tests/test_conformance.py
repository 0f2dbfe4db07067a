"""The conformance cases against the server test/conformance/conformance.test.ts starts (it
passes the server and its fixture in WARREN_CONFORMANCE_FIXTURE), with the sync client and with
the async one."""

import asyncio
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from conformance import load, run_case_async, run_case_sync  # noqa: E402

FIXTURE = os.environ.get("WARREN_CONFORMANCE_FIXTURE")
if FIXTURE:
    fixture, cases = load(FIXTURE)
else:
    fixture, cases = {}, []

needs_server = pytest.mark.skipif(
    not FIXTURE, reason="needs the server test/conformance/conformance.test.ts starts (WARREN_CONFORMANCE_FIXTURE)"
)


@needs_server
@pytest.mark.parametrize("case", cases, ids=[c["name"] for c in cases])
def test_sync_client(case):
    run_case_sync(case, fixture, "python")


@needs_server
@pytest.mark.parametrize("case", cases, ids=[c["name"] for c in cases])
def test_async_client(case):
    asyncio.run(run_case_async(case, fixture, "python-async"))
