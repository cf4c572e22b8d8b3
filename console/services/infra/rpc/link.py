"""Frames over a connected socket: a 4-byte big-endian length, then a pickle."""

from __future__ import annotations

import contextlib
import pickle
import socket
import struct
import threading
from typing import Any


class Link:
    """One end of the socket: whole frames out (from any thread), whole frames in (from one
    reader)."""

    HEADER = struct.Struct(">I")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()

    @classmethod
    def encode(cls, message: Any) -> bytes:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        return cls.HEADER.pack(len(data)) + data

    def send(self, message: Any) -> None:
        self.send_frame(self.encode(message))

    def send_frame(self, frame: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(frame)

    def receive(self) -> Any:
        """The next message, or None once the other end has closed."""
        header = self._read_exactly(self.HEADER.size)
        if header is None:
            return None
        (size,) = self.HEADER.unpack(header)
        data = self._read_exactly(size)
        if data is None:
            return None
        return pickle.loads(data)

    def receive_hello(self) -> Any:
        """The parent's first message, the value the child starts from (None if it is gone)."""
        message = self.receive()
        if message is None:
            return None
        if message[0] != "hello":
            raise ValueError(f"expected the parent's hello first, got {message[0]!r}")
        return message[1]

    def _read_exactly(self, size: int) -> bytearray | None:
        buf = bytearray(size)
        view = memoryview(buf)
        got = 0
        while got < size:
            try:
                n = self._sock.recv_into(view[got:])
            except OSError:  # reset, or closed under us by close()
                return None
            if n == 0:
                return None
            got += n
        return buf

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked on this socket
        self._sock.close()
