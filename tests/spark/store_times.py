"""A broker that answers one question, SEARCH_OFFSET_BY_TIMESTAMP, from a fixed rule: message n
of queue q was stored at `base_ms + q * queue_step_ms + n * message_step_ms`. A time strategy
planned here and through Spark Connect asks it the same questions and gets the same answers,
whatever the clock says when each runs."""

from __future__ import annotations

import math
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from console.rocketmq import frame
from console.rocketmq.codes import FLAG_RESPONSE, RequestCode, ResponseCode
from console.rocketmq.frame import Command


@dataclass(frozen=True)
class StoreTimes:
    base_ms: int
    message_step_ms: int = 60_000
    queue_step_ms: int = 600_000

    def first_at_or_after(self, queue_id: int, ts_ms: int) -> int:
        since = ts_ms - self.base_ms - queue_id * self.queue_step_ms
        return max(0, math.ceil(since / self.message_step_ms))


@dataclass
class StoreTimesBroker:
    addr: str
    times: StoreTimes
    asked: int = 0


@contextmanager
def store_times_broker(times: StoreTimes) -> Iterator[StoreTimesBroker]:
    """The broker on a free loopback port, for as long as the block runs."""
    lock = threading.Lock()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            stream = self.request.makefile("rb")
            while len(prefix := stream.read(4)) == 4:
                cmd = frame.decode(stream.read(frame.frame_length(prefix)))
                self.request.sendall(frame.encode(answer(cmd)))

    def answer(cmd: Command) -> Command:
        if cmd.code != RequestCode.SEARCH_OFFSET_BY_TIMESTAMP:
            code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            return Command(code=code, opaque=cmd.opaque, flag=FLAG_RESPONSE, remark="not here")
        with lock:
            broker.asked += 1
        queue_id, ts = int(cmd.ext_fields["queueId"]), int(cmd.ext_fields["timestamp"])
        offset = times.first_at_or_after(queue_id, ts)
        fields = {"offset": str(offset)}
        return Command(code=0, opaque=cmd.opaque, flag=FLAG_RESPONSE, ext_fields=fields)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    broker = StoreTimesBroker(f"127.0.0.1:{server.server_address[1]}", times)
    thread = threading.Thread(target=server.serve_forever, name="store-times", daemon=True)
    thread.start()
    try:
        yield broker
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
