"""A TCP proxy in front of PostgreSQL that can lose a COMMIT's answer: the
client's COMMIT reaches the server and commits, the server's answer is read
and thrown away, and the client's connection is closed. The client cannot
tell whether its transaction committed, as when a link or the database
server dies at that instant.

Armed with a marker (bytes some statement of the wanted transactions carries,
say a table name), it fires once, at the first COMMIT on a connection that
has sent the marker, or at its first Sync: a statement sent alone with the
extended protocol commits at its Sync, which ends its implicit transaction.
The client must not use TLS (``sslmode=disable``): the proxy reads the
frontend protocol's message frames."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from tcp_proxy import TcpProxy

_LENGTH = struct.Struct(">i")
# Untyped requests a client may send before its startup message.
_SSL_REQUEST, _GSS_REQUEST = 80877103, 80877104
_COMMIT = b"Q" + _LENGTH.pack(4 + len(b"COMMIT\x00")) + b"COMMIT\x00"
_SYNC = b"S" + _LENGTH.pack(4)


class CommitCutProxy(TcpProxy):
    def __init__(self, target_host: str, target_port: int) -> None:
        super().__init__(target_host, target_port)
        self._marker: bytes | None = None
        self._hold_s = 0.0
        self.fired = threading.Event()
        # Whether the server answered the lost COMMIT with "COMMIT" (None: no answer).
        self.committed: bool | None = None

    def cut_after_commit(self, marker: bytes, *, hold_s: float = 0.0) -> None:
        """Lose the answer of the next COMMIT on a connection that sent ``marker``.
        With ``hold_s``, the client's connection is closed at once and the COMMIT
        reaches the server only that much later: the client, connecting again,
        may read before the transaction it left behind has ended."""
        self.fired.clear()
        self.committed = None
        self._hold_s = hold_s
        self._marker = marker

    def _connect(self, client: socket.socket) -> None:
        self._open.wait()
        try:
            upstream = socket.create_connection(self._target, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            self._sockets += [client, upstream]
        link = _Link(client, upstream)
        threading.Thread(target=self._requests, args=(link,), daemon=True).start()
        threading.Thread(target=self._answers, args=(link,), daemon=True).start()

    def _requests(self, link: _Link) -> None:
        """Client to server, a whole message at a time."""
        buffer = b""
        untyped = True  # until the startup message
        marked = False
        try:
            while True:
                data = link.client.recv(65536)
                if not data:
                    break
                self._open.wait()
                if self._closed:
                    break
                buffer += data
                out = bytearray()
                while True:
                    size = _frame_size(buffer, untyped)
                    if size is None:
                        break
                    message, buffer = buffer[:size], buffer[size:]
                    if untyped:
                        code = _LENGTH.unpack_from(message, 4)[0]
                        untyped = code in (_SSL_REQUEST, _GSS_REQUEST)
                    marker = self._marker
                    if marker is not None and marker in message:
                        marked = True
                    if message in (_COMMIT, _SYNC) and marked and marker is not None:
                        self._marker = None
                        link.upstream.sendall(out)
                        self._lose_answer(link, message)
                        return
                    out += message
                if out:
                    link.upstream.sendall(out)
        except OSError:
            pass
        finally:
            link.close()

    def _lose_answer(self, link: _Link, commit: bytes) -> None:
        link.swallow = True
        if self._hold_s:
            link.close_client()
            self.fired.set()
            # The server's session sits in its transaction meanwhile, row locks held.
            threading.Event().wait(self._hold_s)
        link.upstream.sendall(commit)
        link.answered.wait(10)
        self.committed = link.committed
        link.close_client()
        self.fired.set()

    def _answers(self, link: _Link) -> None:
        """Server to client; once swallowing, nothing more reaches the client."""
        seen = b""
        try:
            while True:
                data = link.upstream.recv(65536)
                if not data:
                    break
                if link.swallow:
                    seen += data
                    answer = _answer(seen)
                    if answer is not None:
                        link.committed = answer
                        break
                    continue
                self._open.wait()
                if self._closed:
                    break
                link.client.sendall(data)
        except OSError:
            pass
        finally:
            link.answered.set()
            link.close()


class _Link:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.swallow = False
        self.answered = threading.Event()
        self.committed: bool | None = None

    def close_client(self) -> None:
        with contextlib.suppress(OSError):
            self.client.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        for s in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _frame_size(buffer: bytes, untyped: bool) -> int | None:
    """The size of the first whole message in ``buffer``, or None if it is not all there."""
    header = 4 if untyped else 5
    if len(buffer) < header:
        return None
    length = _LENGTH.unpack_from(buffer, header - 4)[0]
    size = length if untyped else length + 1
    return size if len(buffer) >= size else None


def _answer(seen: bytes) -> bool | None:
    """Whether the server's answer, up to its ReadyForQuery, committed (a
    CommandComplete and no ErrorResponse); None until it is all there."""
    at, completed, failed = 0, False, False
    while at + 5 <= len(seen):
        kind, size = seen[at : at + 1], _LENGTH.unpack_from(seen, at + 1)[0]
        if at + 1 + size > len(seen):
            return None
        completed |= kind == b"C"
        failed |= kind == b"E"
        if kind == b"Z":
            return completed and not failed
        at += 1 + size
    return None
