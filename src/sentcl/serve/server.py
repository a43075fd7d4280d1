"""The server's socket plumbing: the address bound before anything loads (a busy port fails at once), listening
once the model is in, uvicorn run on that socket, and the open-file limit fitted to the connections wanted."""

from __future__ import annotations

import errno
import logging
import socket
from typing import Any

logger = logging.getLogger("sentcl")
# seconds an idle kept-alive connection is held: longer than clients' pools keep one (serve.protocol's doc)
KEEP_ALIVE_S = 75


def _address_error(host: str, port: int, err: OSError) -> ValueError:
    hint = ": another process listens there (pick another --port, or 0 for a free one)"
    reason = "the address is already in use" + hint if err.errno == errno.EADDRINUSE else err.strerror
    return ValueError(f"cannot listen on {host}:{port}: {reason}")


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening: until the model is loaded, connections are
    refused, not held). A busy or unusable address is a user error, raised before anything loads."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as err:
        raise ValueError(f"cannot listen on {host}:{port}: {err.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart is not blocked by TIME_WAIT
    try:
        sock.bind(address)
    except OSError as err:
        sock.close()
        raise _address_error(host, port, err) from None
    return sock


def listen(sock: socket.socket, host: str) -> None:
    """Start listening on the bound socket. SO_REUSEADDR lets two processes bind one port while neither
    listens, so a second service started at the same moment learns here that the port is taken."""
    try:
        sock.listen(2048)  # uvicorn's backlog
    except OSError as err:
        raise _address_error(host, sock.getsockname()[1], err) from None


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve_on(app: Any, sock: socket.socket, config: dict[str, Any]) -> None:
    """Run uvicorn on the bound socket until Ctrl-C or SIGTERM (the tests replace this)."""
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, **config)).run(sockets=[sock])


FD_MARGIN = 128  # open files the process needs beside its connections (model, index, libraries, the listener)


def fit_connections(wanted: int) -> int:
    """``wanted`` connections, raising the soft open-file limit toward the hard one where they need it; fewer
    (with a warning) where the hard limit leaves less, so that accept() never fails for want of descriptors."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + FD_MARGIN
    if soft == resource.RLIM_INFINITY or soft >= need:
        return wanted
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft >= need:
        return wanted
    fitted = max(1, soft - FD_MARGIN)
    logger.warning("--max-connections %d: the open-file limit is %d, so at most %d", wanted, soft, fitted)
    return fitted
