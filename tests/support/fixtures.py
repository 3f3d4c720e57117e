"""Shared pytest fixtures. Use them from a conftest.py:

from tests.support.fixtures import fake_llm_server  # noqa: F401
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.fake_llm_server import FakeLLMServer

__all__ = ["fake_llm_server"]


@pytest.fixture
async def fake_llm_server() -> AsyncIterator[FakeLLMServer]:
    """A loopback fake of the OpenAI and Anthropic APIs, fresh for each test."""
    async with FakeLLMServer() as server:
        yield server
