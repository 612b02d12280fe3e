"""Which forward proxy a blocking HTTP client goes through: the operator's ``HTTPS_PROXY`` /
``HTTP_PROXY`` / ``NO_PROXY`` (:class:`~aimcore.runtime.settings.ProxySettings`), read as curl and
requests read them. The proxy's address is the operator's configuration, so it is connected to
without the outbound address checks; the host a request is *for* is still judged by the policy
(:mod:`aimcore.domain.outbound.connect`). Pure: no I/O."""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class Proxy:
    """A forward proxy: where it is and the ``Proxy-Authorization`` its URL's user info makes."""

    host: str
    port: int
    authorization: str | None = None

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """``http://[user:password@]host[:port]`` (a bare ``host:port`` means ``http://``). TLS to
        the proxy itself (``https://``) is not supported: a ``ValueError`` says so."""
        text = url.strip()
        if "://" not in text:
            text = "http://" + text
        parts = urlsplit(text)
        if parts.scheme.lower() != "http":
            raise ValueError(f"proxy scheme {parts.scheme!r} is not supported; use an http:// proxy URL")
        if not parts.hostname:
            raise ValueError("proxy URL has no host")
        authorization = None
        if parts.username is not None:
            user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(user.encode()).decode()
        return cls(parts.hostname, parts.port or 80, authorization)


@dataclass(frozen=True)
class Proxies:
    """The proxy URLs for ``https`` and ``http`` targets, and the ``NO_PROXY`` entries."""

    https: str | None = None
    http: str | None = None
    no_proxy: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.https or self.http)

    def url_for(self, scheme: str, host: str, port: int) -> str | None:
        """The proxy URL a request to ``scheme://host:port`` goes through, or None (direct)."""
        url = self.https if scheme.lower() == "https" else self.http if scheme.lower() == "http" else None
        if not url or bypassed(host, port, self.no_proxy):
            return None
        return url

    def env(self) -> dict[str, str]:
        """As the environment variables they are read from (for the download Jobs)."""
        out: dict[str, str] = {}
        if self.https:
            out["HTTPS_PROXY"] = self.https
        if self.http:
            out["HTTP_PROXY"] = self.http
        if self.no_proxy:
            out["NO_PROXY"] = ",".join(self.no_proxy)
        return out


def bypassed(host: str, port: int, no_proxy: tuple[str, ...]) -> bool:
    """Whether ``NO_PROXY`` sends ``host`` direct: ``*`` (every host); a domain (``example.com``,
    ``.example.com`` or ``*.example.com``: the domain and its subdomains); ``host:port`` (that port
    only); an address or a CIDR range (an address literal host inside it)."""
    name = host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(name)
    except ValueError:
        address = None
    for raw in no_proxy:
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry_port: int | None = None
        if entry.startswith("["):  # [v6]:port
            bracket, _, rest = entry[1:].partition("]")
            entry, entry_port = (
                bracket,
                int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None,
            )
        elif entry.count(":") == 1:
            head, _, tail = entry.partition(":")
            if tail.isdigit():
                entry, entry_port = head, int(tail)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        domain = entry.removeprefix("*").lstrip(".").rstrip(".")
        if domain and (name == domain or name.endswith("." + domain)):
            return True
    return False
