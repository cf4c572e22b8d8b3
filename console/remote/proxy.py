"""The real `ClusterSource`: a proxy to the console's network process (see console.remote.child).

Calls are awaited on the UI loop; a reader thread takes the answers off the pipe and resolves
them there. Cancelling a call (a superseded refresh) cancels it in the network process too.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any, cast

from console.config import ClusterConfig, Config
from console.domain.offsets import GroupOffsets, QueueKey
from console.remote.child import RemoteError, read_frame, write_frame
from console.rocketmq.models import QueueStats
from console.services.source import BrokerState, ClusterSource, Progress, SourceFactory

EXITED = "the console's network process exited"

_Call = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Progress | None]


class NetworkProcess:
    def __init__(self, cluster: ClusterConfig, config: Config) -> None:
        # The process draws nothing: its stderr goes to a file whose tail explains a crash.
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "console.remote.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._stdin = cast(IO[bytes], self._proc.stdin)
        self._stdout = cast(IO[bytes], self._proc.stdout)
        self._ids = itertools.count(1)
        self._calls: dict[int, _Call] = {}
        self._lock = threading.Lock()
        self._gone: RemoteError | None = None
        self._send((cluster, config))
        self._reader = threading.Thread(target=self._read, name="rmq-network-reader", daemon=True)
        self._reader.start()

    async def call(self, method: str, *args: Any, progress: Progress | None = None) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        call_id = next(self._ids)
        with self._lock:
            if self._gone is not None:
                raise self._gone
            self._calls[call_id] = (loop, future, progress)
        try:
            self._send(("call", call_id, method, args))
            return await future
        except asyncio.CancelledError:
            self._send(("cancel", call_id), quiet=True)
            raise
        finally:
            with self._lock:
                self._calls.pop(call_id, None)

    def close(self) -> None:
        self._send(("close",), quiet=True)
        try:
            self._proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=3)
        self._reader.join(timeout=3)
        self._stdin.close()

    def _send(self, message: Any, *, quiet: bool = False) -> None:
        try:
            with self._lock:
                write_frame(self._stdin, message)
        except (BrokenPipeError, ValueError, OSError):
            if not quiet:
                gone = self._gone or RemoteError("NetworkProcessExited", EXITED)
                raise gone from None

    def _read(self) -> None:
        try:
            self._serve_answers()
        except Exception as exc:  # a broken pipe or a frame that does not decode: end it all
            self._fail_all(RemoteError(type(exc).__name__, f"{EXITED}: {exc}"))
        finally:
            self._stdout.close()
            self._log.close()

    def _serve_answers(self) -> None:
        while True:
            message = read_frame(self._stdout)
            if message is None:
                self._fail_all(self._exited())
                return
            kind, call_id = message[0], message[1]
            with self._lock:
                call = self._calls.get(call_id)
            if call is None:
                continue  # cancelled meanwhile
            loop, future, progress = call
            if kind == "progress":
                if progress is not None:
                    progress(message[2], message[3])
            elif kind == "ok":
                loop.call_soon_threadsafe(_settle, future, message[2], None)
            else:
                loop.call_soon_threadsafe(_settle, future, None, message[2])

    def _exited(self) -> RemoteError:
        code = self._proc.poll()
        self._log.seek(0)
        tail = self._log.read()[-2000:].decode("utf-8", "replace").strip()
        why = f"{EXITED} (code {code})"
        return RemoteError("NetworkProcessExited", f"{why}: {tail}" if tail else why)

    def _fail_all(self, error: RemoteError) -> None:
        with self._lock:
            self._gone = error
            calls = list(self._calls.values())
        for loop, future, _ in calls:
            loop.call_soon_threadsafe(_settle, future, None, error)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class RemoteSource:
    def __init__(self, cluster: ClusterConfig, config: Config) -> None:
        self._net = NetworkProcess(cluster, config)

    async def brokers(self) -> tuple[BrokerState, ...]:
        return cast(tuple[BrokerState, ...], await self._net.call("brokers"))

    async def topics(self) -> list[str]:
        return cast(list[str], await self._net.call("topics"))

    async def topic_queues(self, topic: str) -> list[QueueStats]:
        return cast(list[QueueStats], await self._net.call("topic_queues", topic))

    async def groups(self) -> list[str]:
        return cast(list[str], await self._net.call("groups"))

    async def group_offsets(self, group: str) -> GroupOffsets:
        return cast(GroupOffsets, await self._net.call("group_offsets", group))

    async def read_groups(
        self, groups: Sequence[str], progress: Progress | None = None
    ) -> dict[str, GroupOffsets | Exception]:
        answer = await self._net.call("read_groups", list(groups), progress=progress)
        return cast(dict[str, GroupOffsets | Exception], answer)

    async def consume_delays(
        self, group: str, topics_by_broker: Mapping[str, Sequence[str]]
    ) -> dict[QueueKey, int]:
        answer = await self._net.call("consume_delays", group, dict(topics_by_broker))
        return cast(dict[QueueKey, int], answer)

    async def read_delays(
        self, wanted: Mapping[str, Mapping[str, Sequence[str]]]
    ) -> dict[str, dict[QueueKey, int] | Exception]:
        answer = await self._net.call("read_delays", {k: dict(v) for k, v in wanted.items()})
        return cast(dict[str, dict[QueueKey, int] | Exception], answer)

    async def dlq_queues(self, group: str) -> list[QueueStats]:
        return cast(list[QueueStats], await self._net.call("dlq_queues", group))

    async def assignments(
        self, group: str, client_ids: Sequence[str]
    ) -> dict[QueueKey, tuple[str, ...]]:
        answer = await self._net.call("assignments", group, list(client_ids))
        return cast(dict[QueueKey, tuple[str, ...]], answer)

    def close(self) -> None:
        self._net.close()


def remote_sources(config: Config, *, warm: ClusterConfig | None = None) -> SourceFactory:
    """Sources for the console. `warm` starts that cluster's network process now, so it boots
    while the UI process is still importing Textual (start-up is measured)."""
    ready: dict[ClusterConfig, RemoteSource] = {}
    if warm is not None:
        ready[warm] = RemoteSource(warm, config)

    def connect(cluster: ClusterConfig) -> ClusterSource:
        return ready.pop(cluster, None) or RemoteSource(cluster, config)

    return connect
