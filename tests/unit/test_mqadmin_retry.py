"""mqadmin runs again only where that cannot change the cluster twice: a read that ran out of its
client's time (a JVM just started on a loaded machine), and a send the producer gave up on before
the message went out. Any other failure is the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.sandbox.cache import Distribution
from console.sandbox.errors import MqadminError
from console.sandbox.mqadmin_oracle import READ_ATTEMPTS, SEND_ATTEMPTS, Mqadmin

TIMED_OUT = (
    "mqadmin queryMsgByOffset failed (exit 0): org.apache.rocketmq.remoting.exception."
    "RemotingTimeoutException: wait response on the channel </127.0.0.1:29840> timeout, 1144(ms)"
)
NOT_SENT = (
    "mqadmin sendMessage failed (exit 0): org.apache.rocketmq.remoting.exception."
    "RemotingTooMuchRequestException: sendKernelImpl call timeout"
)
TOPIC_STATUS = "#Broker Name   #QID  #Min Offset  #Max Offset  #Last Updated\n\nTopic Put TPS: 0\n"


class Scripted(Mqadmin):
    """An mqadmin whose runs fail with `failures`, in turn, then print `out`."""

    def __init__(self, failures: list[str], out: str) -> None:
        super().__init__(Path("java"), Distribution(Path("dist")), "127.0.0.1:9876", Path("w"))
        self.failures, self.out, self.runs = list(failures), out, 0

    async def run(self, subcommand: str, *args: str, **kwargs: Any) -> str:
        self.runs += 1
        if self.failures:
            raise MqadminError(self.failures.pop(0))
        return self.out


async def test_a_read_that_timed_out_runs_again() -> None:
    tool = Scripted([TIMED_OUT, NOT_SENT], TOPIC_STATUS)
    await tool.topic_status("orders")
    assert tool.runs == 3


async def test_a_read_that_keeps_timing_out_fails_after_its_attempts() -> None:
    tool = Scripted([TIMED_OUT] * READ_ATTEMPTS, TOPIC_STATUS)
    with pytest.raises(MqadminError, match="RemotingTimeoutException"):
        await tool.topic_status("orders")
    assert tool.runs == READ_ATTEMPTS


async def test_a_read_that_failed_otherwise_is_not_run_again() -> None:
    tool = Scripted(["mqadmin topicStatus failed (exit 0): TopicRouteData not found"], "")
    with pytest.raises(MqadminError, match="not found"):
        await tool.topic_status("orders")
    assert tool.runs == 1


async def test_a_send_is_sent_again_only_when_it_never_went_out() -> None:
    sent = Scripted([NOT_SENT, NOT_SENT], "SEND_OK")
    await sent.send_message("t", "body", broker_name="broker-a", queue_id=0, tags="x", keys="k")
    assert sent.runs == 3

    gave_up = Scripted([NOT_SENT] * SEND_ATTEMPTS, "SEND_OK")
    with pytest.raises(MqadminError, match="call timeout"):
        await gave_up.send_message("t", "b", broker_name="broker-a", queue_id=0, tags="x", keys="k")
    assert gave_up.runs == SEND_ATTEMPTS

    # It may have been stored: sending again could store it twice.
    maybe_stored = Scripted([TIMED_OUT], "SEND_OK")
    with pytest.raises(MqadminError, match="RemotingTimeoutException"):
        await maybe_stored.send_message(
            "t", "b", broker_name="broker-a", queue_id=0, tags="x", keys="k"
        )
    assert maybe_stored.runs == 1
