"""A TCP proxy between one engine and PostgreSQL that cuts every connection on demand.

A cut closes both sides at once, wherever the conversation is: the server may have
committed a statement whose answer never reaches the engine, which is exactly the
ambiguity the registry must settle by reading. ``pg_terminate_backend`` cannot make it:
it ends a session between statements, never after a commit and before its reply.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

CHUNK = 65536


@dataclass
class _Link:
    client: socket.socket
    server: socket.socket

    def close(self) -> None:
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


@dataclass
class CuttingProxy:
    target_host: str
    target_port: int
    port: int = 0
    cuts: int = 0
    links_cut: int = 0
    _listener: socket.socket | None = None
    _links: set[int] = field(default_factory=set)
    _by_id: dict[int, _Link] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: threading.Event = field(default_factory=threading.Event)

    def start(self) -> int:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        self.port = int(listener.getsockname()[1])
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()
        return self.port

    def cut(self) -> int:
        """Close every connection through the proxy, both ways, now; returns how many."""
        with self._lock:
            links = list(self._by_id.values())
            self._by_id.clear()
        for link in links:
            link.close()
        self.cuts += 1
        self.links_cut += len(links)
        return len(links)

    def stop(self) -> None:
        self._closed.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        self.cut()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection((self.target_host, self.target_port), 5)
            except OSError:
                client.close()
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(None)
            link = _Link(client, server)
            with self._lock:
                self._by_id[id(link)] = link
            for source, sink in ((client, server), (server, client)):
                threading.Thread(
                    target=self._pump, args=(link, source, sink), name="proxy-pump", daemon=True
                ).start()

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._by_id.pop(id(link), None)
            link.close()
