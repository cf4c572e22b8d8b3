"""The console's network process: one admin client, serving the UI process over a pipe.

Why a process: decoding broker answers for a refresh of hundreds of groups keeps a CPU busy for
seconds. In a thread it would hold the GIL half of that time and double every key press's
latency; in its own process the UI keeps a whole interpreter (and, on two cores, a core) to itself.

Frames are a 4-byte big-endian length and a pickle; the parent sends the (ClusterConfig, Config)
first, then requests; both ends are this package, so nothing else ever reads the pickles.

    parent -> child   ("call", id, method, args) | ("cancel", id) | ("close",)
    child -> parent   ("ok", id, value) | ("err", id, RemoteError) | ("progress", id, done, total)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import struct
import sys
from collections.abc import Mapping
from typing import IO, Any

from console.rocketmq.errors import RocketMQError

_LENGTH = struct.Struct(">I")

#: Backend methods the UI may call, and those that report progress.
METHODS = frozenset(
    {
        "brokers",
        "topics",
        "topic_queues",
        "groups",
        "group_offsets",
        "read_groups",
        "consume_delays",
        "read_delays",
        "dlq_queues",
        "assignments",
    }
)
WITH_PROGRESS = frozenset({"read_groups"})
PROGRESS_INTERVAL = 0.2


class RemoteError(RocketMQError):
    """A failure in the network process, carried across by its kind and text."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __reduce__(self) -> tuple[type[RemoteError], tuple[str, str]]:
        return (RemoteError, (self.kind, self.message))


def portable(exc: BaseException) -> RemoteError:
    # Exceptions with their own constructor arguments do not survive pickling; their text does.
    return RemoteError(type(exc).__name__, str(exc) or type(exc).__name__)


def write_frame(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next value, or None at end of stream."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def _portable_result(value: Any) -> Any:
    """Results that carry per-item failures (read_groups) carry them as RemoteErrors."""
    if isinstance(value, Mapping):
        return {k: portable(v) if isinstance(v, BaseException) else v for k, v in value.items()}
    return value


async def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    from console.services.backend import Backend
    from console.services.fanout import Cadence

    init = read_frame(stdin)
    if init is None:
        return
    cluster, config = init
    backend = Backend(cluster, config)
    loop = asyncio.get_running_loop()
    tasks: dict[int, asyncio.Task[None]] = {}
    yielded = False

    def send(message: tuple[Any, ...]) -> None:
        nonlocal yielded
        write_frame(stdout, message)
        if not yielded:
            # Full priority until the first answer (the console's first frame waits for it),
            # background priority after. Where that is not allowed, it stays at equal priority.
            yielded = True
            with contextlib.suppress(OSError):
                os.nice(NICENESS)

    async def handle(call_id: int, method: str, args: tuple[Any, ...]) -> None:
        try:
            if method not in METHODS:
                raise ValueError(f"no such operation: {method}")
            fn = getattr(backend, method)
            if method in WITH_PROGRESS:

                def progressed(done: int, total: int) -> None:
                    send(("progress", call_id, done, total))

                result = await fn(*args, progress=Cadence(progressed, PROGRESS_INTERVAL))
            else:
                result = await fn(*args)
            send(("ok", call_id, _portable_result(result)))
        except asyncio.CancelledError:
            pass  # the UI gave up on this call and is not waiting for an answer
        except Exception as exc:  # every failure goes back to the caller, who decides
            send(("err", call_id, portable(exc)))
        finally:
            tasks.pop(call_id, None)

    try:
        while True:
            message = await loop.run_in_executor(None, read_frame, stdin)
            if message is None or message[0] == "close":
                break
            if message[0] == "cancel":
                task = tasks.get(message[1])
                if task is not None:
                    task.cancel()
                continue
            _, call_id, method, args = message
            tasks[call_id] = loop.create_task(handle(call_id, method, args))
    finally:
        for task in list(tasks.values()):
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        await backend.close()


#: Scheduling priority of the network process: it does throughput work (a refresh may take
#: seconds either way), the UI process latency work (a key press must repaint at once).
NICENESS = 10


def main() -> int:
    asyncio.run(serve(sys.stdin.buffer, sys.stdout.buffer))
    return 0


if __name__ == "__main__":
    # Run as the importable module, not as __main__: the pickles name their classes by module.
    from console.remote import child

    sys.exit(child.main())
