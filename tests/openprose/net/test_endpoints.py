"""`net.endpoints`: proxy URLs read, the environment's proxy looked up (and not at all when
no proxy variable is set), credentials never shown."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openprose.net.endpoints import Proxy, env_proxy, parse_proxy

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_a_proxy_url_gives_its_address_credentials_and_tls() -> None:
    assert parse_proxy("http://u:p%40ss@proxy.example:3128") == Proxy(
        "proxy.example", 3128, "Basic dTpwQHNz", False
    )
    assert parse_proxy("proxy.example") == Proxy("proxy.example", 80, None, False)
    assert parse_proxy("https://proxy.example") == Proxy("proxy.example", 443, None, True)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("socks5://127.0.0.1:1080", "SOCKS proxies are not supported"),
        ("http://", "not an http:// or https:// proxy URL with a host"),
        ("http://[::1:3128", "is not a URL"),
        ("http://proxy.example:99999", "is not a URL"),
    ],
)
def test_an_unusable_proxy_url_is_refused_in_words(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_proxy(url)


def test_a_proxy_never_shows_its_credentials() -> None:
    shown = repr(parse_proxy("http://user:secret@proxy.example:3128"))
    assert "secret" not in shown and "Basic" not in shown and "<hidden>" in shown


def test_the_environments_proxy_and_its_exceptions(no_proxy_settings: pytest.MonkeyPatch) -> None:
    assert env_proxy("https://api.example.com/v1") is None
    no_proxy_settings.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    no_proxy_settings.setenv("NO_PROXY", "internal.example")
    assert env_proxy("https://api.example.com/v1") == "http://proxy.example:3128"
    assert env_proxy("http://api.example.com/v1") is None  # no HTTP_PROXY
    assert env_proxy("https://internal.example/v1") is None


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="system proxy settings apply")
def test_without_proxy_variables_nothing_more_is_imported(
    no_proxy_settings: pytest.MonkeyPatch,
) -> None:
    code = (
        "import sys; from openprose.net.endpoints import env_proxy; "
        "assert env_proxy('https://api.example.com') is None; "
        "print('urllib.request' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "False"
