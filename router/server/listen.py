"""The API's listening sockets, bound before anything slow starts.

uvicorn binds its address only after the application has started (the model loaded, storage
opened, the catalog directory reconciled): a port in use or a host that does not resolve was
found half a minute late, after all of that work. Listening first says it at once, and holds the
address while the rest starts; a connection made meanwhile waits for the application.
"""

from __future__ import annotations

import socket

import uvicorn

# uvicorn's default backlog.
_BACKLOG = 2048


class ListenError(Exception):
    """The address cannot be listened on; ``argument`` says whether the host itself is at fault."""

    def __init__(self, message: str, *, argument: bool) -> None:
        super().__init__(message)
        self.argument = argument

    @property
    def exit_code(self) -> int:
        """The command's exit status: 2 for a bad ``--host``, 3 for an address that cannot be used."""
        return 2 if self.argument else 3


def bind(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address ``host`` resolves to, as asyncio's ``create_server`` binds them.

    Raises:
        ListenError: the host does not resolve (``argument``), or an address cannot be bound
            (in use, not this machine's, or a port that needs privileges).
    """
    try:  # an empty host is every interface, as asyncio reads it
        found = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenError(f"--host {host}: {exc.strerror}", argument=True) from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:  # a family this machine has turned off (IPv6): the others serve, as with asyncio
                continue
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # "::" must not claim IPv4's port too: it has a socket of its own
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            # Listening now holds the port: bound alone (with SO_REUSEADDR), another process may bind it too.
            # Connections wait in the backlog until the application has started.
            sock.listen(_BACKLOG)
        if not sockets:
            raise OSError(f"no address family of {host} can be used here")
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", argument=False) from None
    return sockets


class Server(uvicorn.Server):
    """uvicorn's server on sockets bound beforehand, saying where it listens as it does on its own."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start the application, then serve on ``sockets``."""
        await super().startup(sockets)
        if self.started and sockets:
            self._log_started_message(sockets)
