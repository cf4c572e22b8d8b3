"""What the to-timestamp tests ask the brokers themselves: the offsets RocketMQ's own client finds
for a time (OffsetOracle, compiled against the sandbox's jars), and a time to seek to."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from console.sandbox.jvm import JDK_OPENS
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_OFFLINE
from console.sandbox.toolchain import find_tools

#: A queue: topic, broker, queue id.
Queue = tuple[str, str, int]
ORACLE = Path(__file__).resolve().parents[2] / "console" / "sandbox" / "java" / "OffsetOracle.java"


def oracle(tmp: Path, sandbox: Sandbox, ts_ms: int, queues: Sequence[Queue]) -> dict[Queue, int]:
    """Compile OffsetOracle against the sandbox's jars and ask it about every queue (over TLS
    when the sandbox's servers require it: mqadmin's system properties)."""
    tools = find_tools("javac")
    assert tools.javac is not None
    classpath = sandbox.distribution.classpath
    classes = tmp / "oracle"
    subprocess.run(
        [str(tools.javac), "-nowarn", "-cp", classpath, "-d", str(classes), str(ORACLE)],
        check=True,
        capture_output=True,
    )
    args = [str(x) for q in queues for x in q]
    out = subprocess.run(
        [
            str(tools.java),
            "-Xmx128m",
            *JDK_OPENS,
            f"-Duser.home={tmp}",
            *(f"-D{k}={v}" for k, v in sandbox.mqadmin.system_props.items()),
            "-cp",
            f"{classes}:{classpath}",
            "OffsetOracle",
            sandbox.namesrv_addr,
            str(ts_ms),
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers: dict[Queue, int] = {}
    for line in out.stdout.splitlines():
        if not line.startswith("OFFSET "):
            continue  # the client's own chatter
        _, topic, broker, queue_id, offset = line.split()
        answers[(topic, broker, int(queue_id))] = int(offset)
    return answers


async def seek_time(sandbox: Sandbox) -> int:
    """A store time inside the seeding of `orders`: some queues land mid-way, not at an end."""
    async with sandbox.admin() as admin:
        firsts = []
        for addr in sandbox.broker_addrs.values():
            spans = await admin.consume_time_span(addr, "orders", GROUP_OFFLINE)
            firsts += [s.min_timestamp for s in spans.values() if s.min_timestamp > 0]
    # The seed sends each queue in six batches a second apart.
    return sorted(firsts)[len(firsts) // 2] + 2_500
