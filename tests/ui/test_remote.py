"""The network process behind the real source: framing, errors across the pipe, cancel, close."""

from __future__ import annotations

import asyncio
import io
import pickle
import socket

import pytest

from console.config import ClusterConfig, Config
from console.remote.child import RemoteError, portable, read_frame, write_frame
from console.remote.proxy import RemoteSource, remote_sources
from console.rocketmq.errors import ConnectError, RocketMQError


def test_frames_round_trip_and_end_cleanly() -> None:
    buf = io.BytesIO()
    write_frame(buf, ("call", 1, "brokers", ()))
    write_frame(buf, {"a": [1, 2]})
    buf.seek(0)
    assert read_frame(buf) == ("call", 1, "brokers", ())
    assert read_frame(buf) == {"a": [1, 2]}
    assert read_frame(buf) is None


def test_errors_cross_as_their_text() -> None:
    err = portable(ConnectError("10.0.0.1:9876", "refused"))
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, RemoteError)
    assert isinstance(back, RocketMQError)
    assert back.kind == "ConnectError"
    assert str(back) == "cannot connect to 10.0.0.1:9876: refused"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unreachable() -> ClusterConfig:
    return ClusterConfig("nowhere", (f"127.0.0.1:{_closed_port()}",))


async def test_a_failure_in_the_network_process_reaches_the_caller(
    unreachable: ClusterConfig,
) -> None:
    source = RemoteSource(unreachable, Config(timeout=1.0))
    try:
        with pytest.raises(RemoteError, match="cannot connect to 127.0.0.1"):
            await source.brokers()
        answer = await source.read_groups(["g1", "g2"])
        assert set(answer) == {"g1", "g2"}
        assert all(isinstance(v, RemoteError) for v in answer.values())
    finally:
        source.close()


async def test_a_cancelled_call_leaves_the_process_serving(unreachable: ClusterConfig) -> None:
    source = RemoteSource(unreachable, Config(timeout=5.0))
    try:
        call = asyncio.ensure_future(source.groups())
        await asyncio.sleep(0)  # let the call go out before cancelling it
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        with pytest.raises(RemoteError):
            await source.topics()
    finally:
        source.close()


async def test_closed_source_reports_instead_of_hanging(unreachable: ClusterConfig) -> None:
    connect = remote_sources(Config(timeout=1.0), warm=unreachable)
    source = connect(unreachable)
    source.close()
    with pytest.raises(RemoteError, match="network process exited"):
        await source.brokers()
