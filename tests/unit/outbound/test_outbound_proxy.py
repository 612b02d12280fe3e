"""Which requests go through the operator's forward proxy: ``HTTPS_PROXY`` for https hosts,
``HTTP_PROXY`` for http hosts, ``NO_PROXY`` as curl reads it; and what a proxy URL may be."""

from __future__ import annotations

import pytest

from aimcore.domain.outbound.proxy import Proxies, Proxy, bypassed
from aimcore.runtime.settings import ProxySettings, SettingsError


@pytest.mark.parametrize(
    ("host", "port", "entries", "direct"),
    [
        ("huggingface.co", 443, (), False),
        ("huggingface.co", 443, ("*",), True),
        ("huggingface.co", 443, ("huggingface.co",), True),
        ("cdn.huggingface.co", 443, ("huggingface.co",), True),
        ("cdn.huggingface.co", 443, (".huggingface.co",), True),
        ("cdn.huggingface.co", 443, ("*.huggingface.co",), True),
        ("nothuggingface.co", 443, ("huggingface.co",), False),
        ("HuggingFace.CO.", 443, ("huggingface.co",), True),
        ("mirror.svc", 8080, ("mirror.svc:8080",), True),
        ("mirror.svc", 443, ("mirror.svc:8080",), False),
        ("10.1.2.3", 80, ("10.0.0.0/8",), True),
        ("10.1.2.3", 80, ("10.1.2.3",), True),
        ("11.1.2.3", 80, ("10.0.0.0/8",), False),
        ("::1", 80, ("::1",), True),
        ("fd00::5", 80, ("[fd00::5]:80",), True),
        ("example.com", 80, ("10.0.0.0/8", "", " "), False),
    ],
)
def test_no_proxy(host: str, port: int, entries: tuple[str, ...], direct: bool) -> None:
    assert bypassed(host, port, entries) is direct


def test_the_proxy_of_each_scheme() -> None:
    proxies = Proxies(https="http://p:3128", http="http://q:3128", no_proxy=("internal",))
    assert proxies.url_for("https", "hf.co", 443) == "http://p:3128"
    assert proxies.url_for("http", "hf.co", 80) == "http://q:3128"
    assert proxies.url_for("https", "a.internal", 443) is None
    assert Proxies(http="http://q:3128").url_for("https", "hf.co", 443) is None  # no fallback
    assert not Proxies(no_proxy=("x",))


def test_proxy_url_forms() -> None:
    assert Proxy.parse("proxy.corp:3128") == Proxy("proxy.corp", 3128)
    assert Proxy.parse("http://proxy.corp") == Proxy("proxy.corp", 80)
    with_user = Proxy.parse("http://me:s%40cret@proxy.corp:3128")
    assert with_user.authorization == "Basic bWU6c0BjcmV0"  # me:s@cret
    with pytest.raises(ValueError, match="not supported"):
        Proxy.parse("https://proxy.corp")


def test_settings_refuse_a_tls_proxy_without_showing_it() -> None:
    with pytest.raises(SettingsError) as err:
        ProxySettings.from_env({"HTTPS_PROXY": "https://me:secret@proxy.corp"})
    assert "HTTPS_PROXY" in str(err.value) and "secret" not in str(err.value)
    settings = ProxySettings.from_env({"https_proxy": "http://p:1", "NO_PROXY": "a, b,,c"})
    assert settings.https == "http://p:1" and settings.no_proxy == ("a", "b", "c")
