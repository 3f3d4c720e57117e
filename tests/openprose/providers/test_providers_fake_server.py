"""The out-of-process mode of the loopback fake that benchmarks rely on."""

from __future__ import annotations

from openprose.providers import Message, ModelRequest, ProviderSettings, RetryPolicy, open_provider
from tests.support.fake_llm_server import Fault, fetch_stats, script_faults, start_in_subprocess


async def test_subprocess_server_serves_both_apis_and_reports_stats() -> None:
    base_url, stop = start_in_subprocess(latency_ms=1)
    try:
        script_faults(base_url, Fault("500"))
        request = ModelRequest(model="m", messages=(Message("user", "ping"),))
        for name, url in (("openai", base_url + "/v1"), ("anthropic", base_url)):
            settings = ProviderSettings(
                provider=name, base_url=url, api_key="k", retry=RetryPolicy(base_delay=0.01)
            )
            provider = open_provider(settings)
            try:
                assert (await provider.complete(request)).text == "echo: ping"
            finally:
                await provider.aclose()
        stats = fetch_stats(base_url)
    finally:
        stop()
    # the scripted 500 cost the first call one retry
    assert stats == {
        "attempts": 3,
        "completed": 2,
        "in_flight": 0,
        "max_in_flight": 1,
        "max_in_flight_openai": 1,
        "max_in_flight_anthropic": 1,
    }
