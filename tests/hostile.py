"""A hostile Redis: a small TCP server that answers each command with bytes a test scripts.

``HostileServer(respond)`` listens on a free port of 127.0.0.1. For every command a client
sends, it calls ``respond(connection, argv)`` (``connection``: 0 for the first accepted
connection, 1 for the next, ...; ``argv``: the command as a list of ``bytes``) and writes what
it returns: ``bytes``, an iterable of ``bytes`` chunks (written one after the other, until the
client goes away), or ``None`` to answer nothing. Every command received is recorded in
``commands`` as ``(connection, argv)``, but for the handshake's ``HELLO``, which the server
answers itself with ``hello`` (by default as Redis 7.0.0: ``hello_reply()``), counted in
``hellos``; ``hello=None`` hands it to ``respond`` as any command.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Callable, Iterable, Optional, Union

Response = Union[bytes, Iterable[bytes], None]
Responder = Callable[[int, list[bytes]], Response]


def parse_commands(buffer: bytearray) -> list[list[bytes]]:
    """Takes every complete RESP command (an array of bulk strings) off the front of
    ``buffer``; an incomplete one stays."""
    commands = []
    while buffer:
        end = buffer.find(b"\r\n")
        if end < 0 or buffer[:1] != b"*":
            break
        count = int(buffer[1:end])
        pos, argv = end + 2, []
        for _ in range(count):
            line_end = buffer.find(b"\r\n", pos)
            if line_end < 0:
                return commands
            size = int(buffer[pos + 1 : line_end])
            start = line_end + 2
            if len(buffer) < start + size + 2:
                return commands
            argv.append(bytes(buffer[start : start + size]))
            pos = start + size + 2
        if len(argv) < count:
            break
        del buffer[:pos]
        commands.append(argv)
    return commands


def hello_reply(version: str = "7.0.0", server: str = "redis") -> bytes:
    """HELLO 2's reply (RESP2: a flat array of field, value) from ``server`` ``version``."""
    fields: list[bytes] = []
    for name, value in [
        ("server", server),
        ("version", version),
        ("proto", 2),
        ("id", 7),
        ("mode", "standalone"),
        ("role", "master"),
    ]:
        fields.append(b"$%d\r\n%s\r\n" % (len(name), name.encode()))
        if isinstance(value, int):
            fields.append(b":%d\r\n" % value)
        else:
            fields.append(b"$%d\r\n%s\r\n" % (len(value), value.encode()))
    return b"*%d\r\n" % (len(fields) + 2) + b"".join(fields) + b"$7\r\nmodules\r\n*0\r\n"


class HostileServer:
    def __init__(self, respond: Responder, hello: Optional[bytes] = hello_reply()) -> None:
        self.respond = respond
        self.hello = hello
        self.hellos = 0
        self.commands: list[tuple[int, list[bytes]]] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(512)
        self.host = "127.0.0.1"
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def names(self) -> list[bytes]:
        """The command names received so far, in order."""
        with self._lock:
            return [argv[0].upper() for _, argv in self.commands]

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index = self.connections
                self.connections += 1
                self._sockets.append(conn)
            threading.Thread(target=self._serve, args=(conn, index), daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        buffer = bytearray()
        with contextlib.suppress(OSError), conn:
            while not self._closed:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                for argv in parse_commands(buffer):
                    if self.hello is not None and argv[0].upper() == b"HELLO":
                        with self._lock:
                            self.hellos += 1
                        conn.sendall(self.hello)
                        continue
                    with self._lock:
                        self.commands.append((index, argv))
                    response = self.respond(index, argv)
                    if response is None:
                        continue
                    if isinstance(response, (bytes, bytearray)):
                        conn.sendall(response)
                    else:
                        for chunk in response:
                            if self._closed:
                                return
                            conn.sendall(chunk)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for conn in self._sockets:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    conn.close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def answer_all(reply: bytes, first: Optional[dict[int, bytes]] = None) -> Responder:
    """A responder giving ``reply`` to every command, except the n-th command overall
    (0-based), which gets ``first[n]``."""
    counter = {"n": 0}
    lock = threading.Lock()

    def respond(connection: int, argv: list[bytes]) -> bytes:
        with lock:
            n = counter["n"]
            counter["n"] += 1
        if first and n in first:
            return first[n]
        return reply

    return respond
