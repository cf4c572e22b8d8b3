"""The console's RPC (console.services.infra.rpc): framing, typed errors across the process
boundary, progress, cancel, settling once, and a child that crashes. The child is a real process
(tests/unit/rpc_child.py), served the threaded way and the asyncio way."""

from __future__ import annotations

import asyncio
import inspect
import pickle
import socket
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from console.rocketmq import errors
from console.rocketmq.errors import (
    AccessDenied,
    BrokerError,
    ClosedUnanswered,
    ConnectError,
    ConnectionLost,
    NotFoundError,
    NotMaster,
    ProtocolError,
    ReadOnlyError,
    RequestTimeout,
    RocketMQError,
    TlsCause,
    TlsRefused,
    UnreachableAddress,
)
from console.services.infra.rpc import (
    CallCancelled,
    ChildExited,
    ChildProcess,
    Link,
    Peer,
    Pending,
    RemoteError,
    portable_error,
)

CHILD = "tests.unit.rpc_child"
WAIT = 60.0

#: One of each error the wire client raises, with every field set.
WIRE_ERRORS: list[RocketMQError] = [
    ProtocolError("bad frame: length 3"),
    ConnectError("10.0.0.1:9876", "Connection refused"),
    ConnectError("10.0.0.1:10911", "Connection refused", "through SOCKS 127.0.0.1:1080"),
    UnreachableAddress("10.0.0.1:10911", "Connection refused", "broker-a"),
    RequestTimeout("10.0.0.2:10911", 208, 2.5),
    ConnectionLost("10.0.0.2:10911", "closed by the server"),
    ClosedUnanswered("10.0.0.2:10911"),
    BrokerError("10.0.0.2:10911", 202, 17, "topic[x] not exist"),
    AccessDenied(
        "10.0.0.3:10911",
        28,
        16,
        "check signature failed.",
        access_key="ops-reader",
        authentication=True,
    ),
    AccessDenied(
        "10.0.0.3:10911",
        14,
        16,
        "User:ops has no permission to access Topic:t from 10.0.0.9, no matched policies.",
        access_key="ops",
        authentication=False,
    ),
    NotFoundError("consumer group 'g' not found on any broker of the cluster"),
    ReadOnlyError("cluster 'prod' is read-only"),
    NotMaster("10.0.0.4:10911", 15, broker="broker-a", broker_id=1),
    TlsRefused(
        "10.0.0.5:10911",
        TlsCause.NAME_MISMATCH,
        "10.0.0.5:10911: TLS certificate is not valid for rmq.example (name mismatch)",
    ),
]


def same_error(a: BaseException, b: BaseException) -> bool:
    return type(a) is type(b) and str(a) == str(b) and vars(a) == vars(b)


# ---- errors -----------------------------------------------------------------------------------


def test_every_wire_error_class_is_covered() -> None:
    classes = {
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, RocketMQError) and c.__module__ == errors.__name__
    }
    assert classes - {RocketMQError} == {type(e) for e in WIRE_ERRORS}


@pytest.mark.parametrize("error", WIRE_ERRORS, ids=lambda e: type(e).__name__)
def test_wire_errors_pickle_as_themselves(error: RocketMQError) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert same_error(back, error)
    assert portable_error(error) is error


def test_rpc_errors_pickle_as_themselves() -> None:
    for error in (
        RemoteError("ValueError", "bad"),
        CallCancelled("run"),
        ChildExited("the child", 3, "Traceback ...\nboom", "an unreadable answer"),
    ):
        assert same_error(pickle.loads(pickle.dumps(error)), error)


def test_an_error_that_does_not_pickle_crosses_as_its_kind_and_text() -> None:
    class Odd(Exception):
        def __init__(self, a: str, b: str) -> None:
            super().__init__(f"{a}+{b}")

    carried = portable_error(Odd("x", "y"))
    assert isinstance(carried, RemoteError)
    assert isinstance(carried, RocketMQError)
    assert (carried.kind, str(carried)) == ("Odd", "x+y")


# ---- framing ----------------------------------------------------------------------------------


@pytest.fixture
def pair() -> Iterator[tuple[Link, Link]]:
    a, b = socket.socketpair()
    left, right = Link(a), Link(b)
    yield left, right
    left.close()
    right.close()


def test_frames_round_trip_in_order_and_end_cleanly(pair: tuple[Link, Link]) -> None:
    left, right = pair
    big = bytes(range(256)) * 40_000  # 10 MB: more than any socket buffer holds
    sender = threading.Thread(
        target=lambda: [left.send(m) for m in [("call", 1, "x", ()), {"a": [1, 2]}, big]]
    )
    sender.start()
    assert right.receive() == ("call", 1, "x", ())
    assert right.receive() == {"a": [1, 2]}
    assert right.receive() == big
    sender.join()
    left.close()
    assert right.receive() is None


def test_a_frame_cut_short_reads_as_the_end(pair: tuple[Link, Link]) -> None:
    left, right = pair
    frame = Link.encode("a whole message")
    left.send_frame(frame[:-3])
    left.close()
    assert right.receive() is None


def test_the_child_expects_the_hello_first(pair: tuple[Link, Link]) -> None:
    left, right = pair
    left.send(("hello", {"cluster": "c"}))
    assert right.receive_hello() == {"cluster": "c"}
    left.send(("call", 1, "x", ()))
    with pytest.raises(ValueError, match="hello"):
        right.receive_hello()


# ---- a result that arrives later --------------------------------------------------------------


def test_a_pending_result_settles_once() -> None:
    cancelled = threading.Event()
    pending: Pending[str] = Pending(cancelled.set, what="job j")
    seen: list[str] = []
    pending.add_done_callback(lambda: seen.append("first"))
    with pytest.raises(TimeoutError, match="job j still running"):
        pending.result(0)
    pending.cancel()
    assert cancelled.is_set()
    assert pending.settle("value", None)
    assert not pending.settle(None, RuntimeError("late"))
    pending.add_done_callback(lambda: seen.append("after"))
    assert pending.result(0) == "value"
    assert seen == ["first", "after"]
    cancelled.clear()
    pending.cancel()  # a settled result has nothing to cancel
    assert not cancelled.is_set()


async def test_cancelling_the_awaiting_task_cancels_the_work() -> None:
    cancelled = threading.Event()
    pending: Pending[str] = Pending(cancelled.set)
    task = asyncio.ensure_future(pending.wait())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_an_error_settled_from_another_thread_reaches_the_awaiting_task() -> None:
    pending: Pending[str] = Pending()
    task = asyncio.ensure_future(pending.wait())
    await asyncio.sleep(0)
    threading.Thread(target=pending.settle, args=(None, NotFoundError("no group g"))).start()
    with pytest.raises(NotFoundError, match="no group g"):
        await task


# ---- a real child -----------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["threads", "async"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChildProcess]:
    """One child per way of serving, for the tests that leave it as they found it."""
    log = tmp_path_factory.mktemp("child") / "c.log"
    proc = ChildProcess(CHILD, name="the test child", hello=request.param, log=log)
    yield proc
    proc.close(timeout=10)


@pytest.fixture(params=["threads", "async"])
def child(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChildProcess]:
    """A child of its own, for a test that cancels, counts or crashes."""
    proc = ChildProcess(CHILD, name="the test child", hello=request.param, log=tmp_path / "c.log")
    yield proc
    proc.close(timeout=10)


def test_calls_answer_with_their_values(served: ChildProcess) -> None:
    calls = [served.call("echo", i, str(i)) for i in range(20)]
    assert [c.result(WAIT) for c in calls] == [(i, str(i)) for i in range(20)]


@pytest.mark.parametrize("error", WIRE_ERRORS, ids=lambda e: type(e).__name__)
def test_errors_cross_the_child_by_type_and_fields(
    served: ChildProcess, error: RocketMQError
) -> None:
    with pytest.raises(type(error)) as raised:
        served.call("fail", error).result(WAIT)
    assert same_error(raised.value, error)


def test_failures_that_do_not_pickle_cross_as_remote_errors(served: ChildProcess) -> None:
    with pytest.raises(RemoteError) as raised:
        served.call("fail_unpicklably").result(WAIT)
    assert (raised.value.kind, str(raised.value)) == ("Unpicklable", "one and two")
    with pytest.raises(RemoteError, match="the answer to answer_unpicklably could not be sent"):
        served.call("answer_unpicklably").result(WAIT)
    with pytest.raises(RemoteError, match="no such operation: nothing") as unknown:
        served.call("nothing").result(WAIT)
    assert unknown.value.kind == "UnknownOperation"


def test_progress_arrives_in_order_before_the_answer(served: ChildProcess) -> None:
    seen: list[tuple[int, int]] = []
    call = served.call("count", 5, on_progress=lambda done, total: seen.append((done, total)))
    assert call.result(WAIT) == 5
    assert seen == [(i, 5) for i in range(1, 6)]


def test_parts_of_an_answer_reach_the_taker_in_order_before_the_rest(
    served: ChildProcess,
) -> None:
    parts: list[dict[int, int]] = []
    answer = served.call("squares", 10, 4, on_part=lambda part: parts.append(dict(part)))
    assert answer.result(WAIT) == {8: 64, 9: 81}
    assert parts == [{i: i * i for i in range(4)}, {i: i * i for i in range(4, 8)}]


def test_parts_nobody_takes_come_with_the_answer_in_the_order_sent(
    served: ChildProcess,
) -> None:
    answer = served.call("squares", 10, 4).result(WAIT)
    assert answer == {i: i * i for i in range(10)}
    assert list(answer) == list(range(10))


def test_the_child_hears_whether_the_caller_takes_parts(served: ChildProcess) -> None:
    assert served.call("takes_parts", on_part=lambda part: None).result(WAIT) is True
    assert served.call("takes_parts").result(WAIT) is False


def test_parts_that_come_after_the_caller_gave_up_are_dropped(child: ChildProcess) -> None:
    taken: list[dict[int, int]] = []
    started = threading.Event()
    call = child.call(
        "parts_until_cancelled",
        on_progress=lambda *_: started.set(),
        on_part=lambda part: taken.append(dict(part)),
    )
    assert started.wait(WAIT)
    call.cancel()
    with pytest.raises(CallCancelled):
        call.result(WAIT)
    assert taken == [{0: 0}]


def test_a_part_that_does_not_pickle_fails_the_call_saying_so(served: ChildProcess) -> None:
    with pytest.raises(RemoteError, match="a part of the answer to part_unpicklably") as failed:
        served.call("part_unpicklably", on_part=lambda part: None).result(WAIT)
    assert failed.value.kind in ("TypeError", "PicklingError")
    assert served.call("echo", "next").result(WAIT) == ("next",)


def test_a_call_taking_no_parts_is_the_four_values_a_child_of_before_reads(
    pair: tuple[Link, Link],
) -> None:
    """A warm Spark host started by `spark up` before parts existed still reads the calls."""
    left, right = pair
    peer = Peer(left, name="a child", hello="hi", reader_name="test reader")
    try:
        assert right.receive() == ("hello", "hi")
        peer.call("plan", 1)
        assert right.receive() == ("call", 1, "plan", (1,))
        peer.call("read_groups", ["g"], on_part=lambda part: None)
        assert right.receive() == ("call", 2, "read_groups", (["g"],), True)
    finally:
        peer.close(timeout=1.0)


def test_a_part_whose_taker_raises_comes_with_the_answer_instead(
    served: ChildProcess,
) -> None:
    taken: list[dict[int, int]] = []

    def fails_once(part: Mapping[int, int]) -> None:
        if not taken:
            taken.append({})
            raise RuntimeError("a broken callback")
        taken.append(dict(part))

    answer = served.call("squares", 14, 4, on_part=fails_once).result(WAIT)
    assert taken[1:] == [{i: i * i for i in range(4, 8)}, {i: i * i for i in range(8, 12)}]
    assert answer == {0: 0, 1: 1, 2: 4, 3: 9, 12: 144, 13: 169}
    assert served.call("echo", "next").result(WAIT) == ("next",)


def test_a_cancelled_call_stops_in_the_child_which_keeps_serving(child: ChildProcess) -> None:
    started = threading.Event()
    call = child.call("block", on_progress=lambda *_: started.set())
    assert started.wait(WAIT)
    call.cancel()
    with pytest.raises(CallCancelled, match="block was cancelled"):
        call.result(WAIT)
    assert child.call("cancelled").result(WAIT) == 1
    assert child.call("echo", "still here").result(WAIT) == ("still here",)


async def test_cancelling_an_awaiting_task_cancels_the_call_in_the_child(
    child: ChildProcess,
) -> None:
    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    call = child.call("block", on_progress=lambda *_: loop.call_soon_threadsafe(started.set))
    task = asyncio.ensure_future(call.wait())
    await asyncio.wait_for(started.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(CallCancelled):
        await asyncio.wait_for(call.wait(), WAIT)
    assert await asyncio.wait_for(child.call("cancelled").wait(), WAIT) == 1


def test_a_crash_fails_every_pending_call_with_the_log_tail(child: ChildProcess) -> None:
    started = threading.Event()
    pending = [child.call("block", on_progress=lambda *_: started.set()) for _ in range(3)]
    assert started.wait(WAIT)
    crash = child.call("crash", "boom: the child's last words")
    for call in [*pending, crash]:
        with pytest.raises(ChildExited) as exited:
            call.result(WAIT)
        assert exited.value.code == 3
        assert "boom: the child's last words" in exited.value.tail
        assert "the test child exited (code 3)" in str(exited.value)
    with pytest.raises(ChildExited):  # and later calls at once
        child.call("echo", 1)
    assert child.exited is not None


def test_the_log_holds_the_launch_line_and_the_tail_only_this_run(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text("an earlier run's last words\n")
    proc = ChildProcess(CHILD, name="the test child", hello="threads", log=log)
    try:
        assert proc.call("echo", 1).result(WAIT) == (1,)
        tail = proc.log_tail()
    finally:
        proc.close(timeout=10)
    assert "rpc_child serving with threads" in tail
    assert "earlier run" not in tail
    text = log.read_text()
    assert text.startswith("an earlier run's last words\n")
    assert f"-m {CHILD} --fd " in text


def test_closing_fails_what_is_pending_and_refuses_what_follows(tmp_path: Path) -> None:
    proc = ChildProcess(CHILD, name="the test child", hello="async")
    started = threading.Event()
    call = proc.call("block", on_progress=lambda *_: started.set())
    assert started.wait(WAIT)
    proc.close(timeout=10)
    with pytest.raises(RemoteError):  # cancelled by the child's shutdown, or failed by the exit
        call.result(WAIT)
    with pytest.raises(ChildExited, match="the test child exited"):
        proc.call("echo")
    assert proc.process.returncode == 0


def test_a_progress_callback_that_raises_does_not_stop_the_answers(
    served: ChildProcess,
) -> None:

    def broken(*values: Any) -> None:
        raise RuntimeError("a broken callback")

    assert served.call("count", 3, on_progress=broken).result(WAIT) == 3
    assert served.call("echo", "next").result(WAIT) == ("next",)


def test_arguments_that_do_not_pickle_raise_before_anything_is_sent(
    served: ChildProcess,
) -> None:
    with pytest.raises((TypeError, pickle.PicklingError)):
        served.call("echo", threading.Lock())
    assert served.call("echo", "fine").result(WAIT) == ("fine",)


def test_an_error_holding_a_secret_crosses_masked() -> None:
    from console.redact import MASK, hide
    from console.services.infra.rpc.errors import portable_error

    secret = "rpc-" + "s3cr3t-value-for-the-test"
    hide(secret)
    crossed = portable_error(ConnectError("10.0.0.1:9876", f"refused {secret}"))
    assert isinstance(crossed, RemoteError)
    assert crossed.kind == "ConnectError"
    assert secret not in str(crossed)
    assert MASK in str(crossed)
    plain = ConnectError("10.0.0.1:9876", "refused")
    assert portable_error(plain) is plain
