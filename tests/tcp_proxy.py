"""A TCP proxy that can cut a link without closing it, as a network partition
does: while cut, nothing is forwarded either way and new connections are
accepted but never reach the other side, so the peers see silence, not an
error. Healed, what was held back flows again. Runs on threads; always closed
by the test that made it."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._closed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def cut(self) -> None:
        """From now on nothing passes, and no new connection gets through."""
        self._open.clear()

    def heal(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._closed = True
        self._open.set()
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                s.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self._open.wait()  # a connection made while cut hangs, as over a dead link
        try:
            upstream = socket.create_connection(self._target, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            self._sockets += [client, upstream]
        pumps = [2]  # running; the last to end closes the pair
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(src, dst, pumps), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, pumps: list[int]) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self._open.wait()  # held back while cut
                if self._closed:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            # Closed once both directions are done (the other pump may still
            # be in recv on them), so that a long run does not run out of fds.
            with self._lock:
                pumps[0] -= 1
                last = pumps[0] == 0
                if last:
                    self._sockets = [k for k in self._sockets if k not in (src, dst)]
            if last:
                src.close()
                dst.close()
