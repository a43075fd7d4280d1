"""The ``Host`` allow-list against DNS rebinding.

A web page whose name is rebound to 127.0.0.1 makes the user's browser send requests to the service with the
page's own name in ``Host:`` (the browser thinks it talks to the page's origin). The service therefore answers
only requests whose ``Host`` is a name it is known by: the bound address, ``localhost``, ``127.0.0.1``, ``::1``
and the names given with ``--allowed-hosts``, with any port. It does so with or without an API key.

Bound to a wildcard address (``0.0.0.0``, ``::``), any IP literal is accepted as well: a rebinding attack
needs a *name* (the page's origin), and a request whose ``Host`` is an IP address can only come from a page
served from that address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from sentcl.serve.limits import ServiceError, send_json_error

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str) -> str:
    """The name in a ``Host`` header without its port, lower-cased, IPv6 brackets removed."""
    value = header.strip().lower()
    if value.startswith("["):  # [::1]:8080
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:  # name:port (an unbracketed IPv6 address has several colons)
        value = value.split(":", 1)[0]
    return value.rstrip(".")  # "localhost." names the same host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which ``Host`` names the service answers: ``allowed`` exact names, ``*.suffix`` patterns, or ``*``."""

    def __init__(self, bound: str | None = None, extra: Iterable[str] = ()) -> None:
        names = {*LOCAL_HOSTS, *(host_name(h) for h in extra if h.strip())}
        self.any_ip = bound is not None and host_name(bound) in WILDCARD_ADDRESSES
        if bound is not None and not self.any_ip:
            names.add(host_name(bound))
        self.any_host = "*" in names
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*.") and len(n) > 2)  # ".example.com"
        self.names = frozenset(n for n in names if not n.startswith("*"))

    def allows(self, header: str) -> bool:
        name = host_name(header)
        if self.any_host or name in self.names or name.endswith(self.suffixes):
            return True
        return self.any_ip and _is_ip(name)

    def describe(self) -> str:
        shown = sorted(self.names) + [f"*{s}" for s in self.suffixes]
        return ", ".join(shown) + (", any IP address" if self.any_ip else "")


class HostCheck:
    """ASGI middleware: a request whose ``Host`` the policy does not allow is answered 400 (JSON)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.policy.any_host:
            await self.app(scope, receive, send)
            return
        values = [v for k, v in scope.get("headers", []) if k == b"host"]
        header = values[0].decode("latin-1") if len(values) == 1 else None
        if header is not None and self.policy.allows(header):
            await self.app(scope, receive, send)
            return
        if len(values) != 1:
            shown = "several Host headers" if values else "no Host header"
        else:
            shown = f"Host {header!r}"
        message = (
            f"{shown} is not one this service answers ({self.policy.describe()}): start it with "
            "--allowed-hosts NAME to serve under another name"
        )
        await send_json_error(send, ServiceError(400, "host_not_allowed", message), scope)
