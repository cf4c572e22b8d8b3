"""The official mqadmin (from the fetched tools jar) as an oracle: run it, parse what it prints.

Tests and the benchmark compare our client's numbers with these. Layouts were checked against the
real 5.3.3 output; the tools JVM also prints logback status lines on stdout before the table, and
reports command failures as a stack trace on stderr with exit code 0, so both are handled here.

One piece (over 400 lines): every mqadmin command run and parsed beside the others, so that each
quirk of the tool's output is handled once for all of them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from console.sandbox.cache import Distribution
from console.sandbox.errors import MqadminError
from console.sandbox.jvm import MQADMIN_MAIN, JvmOptions, java_argv, jvm_env

_NOT_AVAILABLE = "N/A"
_MS_FORMAT = "%Y-%m-%d %H:%M:%S,%f"


@dataclass(frozen=True, slots=True)
class ProgressRow:
    """One queue of `consumerProgress -g G` (no -s, so no client column)."""

    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int  # mqadmin shows 0 when nothing is committed
    diff: int
    inflight: int
    last_time_ms: int | None  # store time of the last consumed message, second precision


@dataclass(frozen=True, slots=True)
class ConsumerProgress:
    rows: list[ProgressRow]
    consume_tps: float
    diff_total: int
    inflight_total: int | None

    def row(self, topic: str, broker_name: str, queue_id: int) -> ProgressRow:
        for r in self.rows:
            if (r.topic, r.broker_name, r.queue_id) == (topic, broker_name, queue_id):
                return r
        raise KeyError((topic, broker_name, queue_id))


@dataclass(frozen=True, slots=True)
class ConsumerProgressLine:
    """One line of `consumerProgress` without -g: groups found through their %RETRY% topics."""

    group: str
    count: int  # online client connections
    version: str  # client version, "OFFLINE" when nobody is connected
    consume_type: str | None  # PUSH / PULL; absent when offline
    message_model: str | None  # CLUSTERING / BROADCASTING; absent when offline
    tps: int
    diff_total: int


@dataclass(frozen=True, slots=True)
class LiteLagLine:
    """One lite topic of `getLiteGroupInfo -p P -g G`'s "TopK" lists."""

    lite_topic: str
    lag: int
    unconsumed_ms: int | None  # store time of its oldest unconsumed message, local time, ms


@dataclass(frozen=True, slots=True)
class LiteGroupReport:
    """`getLiteGroupInfo -p P -g G` (5.5): every broker's count summed, their lists merged and
    sorted; a broker that failed counts nothing there and is named on a line of its own."""

    total_lag: int
    by_count: list[LiteLagLine]
    by_time: list[LiteLagLine]
    failed: list[str]


@dataclass(frozen=True, slots=True)
class LiteTopicRow:
    """One broker of `getLiteGroupInfo -p P -g G -l LITE`: None where it prints `-` (it does
    not hold the lite topic)."""

    broker_name: str
    broker_offset: int | None
    consumer_offset: int | None
    lag: int | None


@dataclass(frozen=True, slots=True)
class TopicStatusRow:
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_updated_ms: int | None  # store time of the newest message, millisecond precision


@dataclass(frozen=True, slots=True)
class TopicStatus:
    rows: list[TopicStatusRow]
    put_tps: float | None


@dataclass(frozen=True, slots=True)
class QueriedMessage:
    """What `queryMsgByOffset` prints of one message (its header block), and its body, which
    mqadmin writes to a file (`body_path`) rather than printing it."""

    offset_id: str
    topic: str
    tags: str | None  # mqadmin prints "[null]" for none
    keys: tuple[str, ...]
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reconsume_times: int
    born_ms: int  # millisecond precision, local time
    store_ms: int
    born_host: str
    store_host: str
    sys_flag: int
    properties: dict[str, str]
    body_path: str
    body: bytes | None = None


# ---- parsing --------------------------------------------------------------------------------


def parse_consumer_progress(text: str) -> ConsumerProgress:
    rows: list[ProgressRow] = []
    for line in _table(text, "#Topic"):
        # The last column is "yyyy-MM-dd HH:mm:ss" (one space inside) or N/A.
        f = line.split(maxsplit=7)
        if len(f) != 8:
            raise MqadminError(f"unexpected consumerProgress row: {line!r}")
        rows.append(
            ProgressRow(
                topic=f[0],
                broker_name=f[1],
                queue_id=int(f[2]),
                broker_offset=int(f[3]),
                consumer_offset=int(f[4]),
                diff=int(f[5]),
                inflight=int(f[6]),
                last_time_ms=_local_time_ms(f[7], "%Y-%m-%d %H:%M:%S"),
            )
        )
    inflight = _summary(text, "Consume Inflight Total")
    return ConsumerProgress(
        rows=rows,
        consume_tps=float(_summary(text, "Consume TPS") or 0),
        diff_total=int(_summary(text, "Consume Diff Total") or 0),
        inflight_total=int(inflight) if inflight is not None else None,
    )


def parse_group_list(text: str) -> list[ConsumerProgressLine]:
    groups: list[ConsumerProgressLine] = []
    for line in _table(text, "#Group"):
        f = line.split()
        # Offline groups print empty type and model columns, so count from both ends.
        if len(f) not in (5, 7):
            raise MqadminError(f"unexpected consumerProgress group row: {line!r}")
        online = len(f) == 7
        groups.append(
            ConsumerProgressLine(
                group=f[0],
                count=int(f[1]),
                version=f[2],
                consume_type=f[3] if online else None,
                message_model=f[4] if online else None,
                tps=int(f[-2]),
                diff_total=int(f[-1]),
            )
        )
    return groups


def parse_lite_group_info(text: str) -> LiteGroupReport:
    lines = _after(text, "Lite Group Info:")
    total = _summary(text, "Total Lag Count")
    if total is None:
        raise MqadminError("getLiteGroupInfo printed no Total Lag Count")
    lists: dict[str, list[LiteLagLine]] = {"count": [], "time": []}
    current: list[LiteLagLine] | None = None
    for line in lines:
        if line.startswith("------TopK by lag "):
            current = lists[line.removeprefix("------TopK by lag ").split("-")[0].strip()]
        elif current is not None and line.strip() and not line.startswith("NO "):
            f = line.split(maxsplit=3)
            when = f[3].strip() if len(f) == 4 else "-"
            current.append(
                LiteLagLine(
                    f[1],
                    int(f[2]),
                    None if when == "-" else _local_time_ms(when, _MS_FORMAT),
                )
            )
    failed = [ln.strip()[1 : -len("] error.")] for ln in lines if ln.strip().endswith("] error.")]
    return LiteGroupReport(int(total), lists["count"], lists["time"], failed)


def parse_lite_topic(text: str) -> list[LiteTopicRow]:
    rows = []
    for line in _table("\n".join(_after(text, "Lite Group Info:")), "#Broker Name"):
        if line.startswith("Total Lag Count"):
            break
        f = line.split()
        numbers = [None if v == "-" else int(v) for v in f[1:4]]
        rows.append(LiteTopicRow(f[0], numbers[0], numbers[1], numbers[2]))
    return rows


def _after(text: str, start: str) -> list[str]:
    """The lines from the one that starts with `start` on (the JVM's logging set-up may print
    before it)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(start):
            return lines[i:]
    raise MqadminError(f"no line starting with {start!r} in mqadmin output")


def parse_topic_status(text: str) -> TopicStatus:
    rows: list[TopicStatusRow] = []
    for line in _table(text, "#Broker Name"):
        # An empty queue prints nothing in the Last Updated column.
        f = line.split(maxsplit=4)
        if len(f) not in (4, 5):
            raise MqadminError(f"unexpected topicStatus row: {line!r}")
        rows.append(
            TopicStatusRow(
                broker_name=f[0],
                queue_id=int(f[1]),
                min_offset=int(f[2]),
                max_offset=int(f[3]),
                last_updated_ms=_local_time_ms(f[4], _MS_FORMAT) if len(f) == 5 else None,
            )
        )
    tps = _summary(text, "Topic Put TPS")
    return TopicStatus(rows=rows, put_tps=float(tps) if tps is not None else None)


_FIELD = re.compile(r"^([A-Za-z][A-Za-z ]*?):\s+(.*?)\s*$")


def parse_query_msg(text: str) -> QueriedMessage | None:
    """The message block of `queryMsgByOffset` (printed by QueryMsgByIdSubCommand.printMsg);
    None when mqadmin printed none (it prints nothing for an offset without a message)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        m = _FIELD.match(line)
        if m and m.group(1) not in fields:
            fields[m.group(1)] = m.group(2)
    if "OffsetID" not in fields:
        return None
    try:
        return QueriedMessage(
            offset_id=fields["OffsetID"],
            topic=fields["Topic"],
            tags=_bracketed(fields["Tags"]),
            keys=tuple((_bracketed(fields["Keys"]) or "").split()),
            queue_id=int(fields["Queue ID"]),
            queue_offset=int(fields["Queue Offset"]),
            commit_log_offset=int(fields["CommitLog Offset"]),
            reconsume_times=int(fields["Reconsume Times"]),
            born_ms=_required_ms(fields["Born Timestamp"]),
            store_ms=_required_ms(fields["Store Timestamp"]),
            born_host=fields["Born Host"].lstrip("/"),
            store_host=fields["Store Host"].lstrip("/"),
            sys_flag=int(fields["System Flag"]),
            properties=_java_map(fields["Properties"]),
            body_path=fields["Message Body Path"],
        )
    except (KeyError, ValueError) as exc:
        raise MqadminError(f"unexpected queryMsgByOffset output ({exc!r}):\n{text}") from None


def _bracketed(value: str) -> str | None:
    inner = value.removeprefix("[").removesuffix("]")
    return None if inner == "null" else inner


def _required_ms(value: str) -> int:
    ms = _local_time_ms(value, _MS_FORMAT)
    if ms is None:
        raise ValueError(f"no time in {value!r}")
    return ms


def _java_map(value: str) -> dict[str, str]:
    """A java.util.Map's toString(), `{k=v, k2=v2}` (values without ", " in them)."""
    inner = value.strip().removeprefix("{").removesuffix("}")
    pairs = (item.partition("=") for item in inner.split(", ") if item)
    return {k: v for k, _, v in pairs}


def _take_body(path: Path) -> bytes:
    """The body file mqadmin wrote (under /tmp/rocketmq/msgbodys, its fixed place), removed
    once read."""
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise MqadminError(
            f"mqadmin wrote the body to {path}, which cannot be read: {exc}"
        ) from None
    path.unlink(missing_ok=True)
    return body


def _table(text: str, header_start: str) -> list[str]:
    """Rows between the header line and the first blank line after it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header_start):
            body = []
            for row in lines[i + 1 :]:
                if not row.strip():
                    break
                body.append(row.strip())
            return body
    raise MqadminError(f"no table starting with {header_start!r} in mqadmin output")


def _summary(text: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:\s*(\S+)\s*$", text, re.MULTILINE)
    return m.group(1) if m else None


def _local_time_ms(value: str, fmt: str) -> int | None:
    """mqadmin prints times in the JVM's default zone, which is this machine's local zone."""
    value = value.strip()
    if value == _NOT_AVAILABLE:
        return None
    ms = int(datetime.strptime(value, fmt).timestamp() * 1000)
    return ms if ms > 0 else None


def command_error(stdout: str, stderr: str) -> str | None:
    """The failure mqadmin reported, if any: it prints a stack trace and still exits 0."""
    for text in (stderr, stdout):
        causes = [ln.strip() for ln in text.splitlines() if ln.startswith("Caused by:")]
        if causes:
            return causes[-1].removeprefix("Caused by:").strip()
        for ln in text.splitlines():
            if "SubCommandException" in ln or ln.startswith("Exception in thread"):
                return ln.strip()
    return None


# ---- running ----------------------------------------------------------------------------------

#: DefaultMQProducerImpl.sendKernelImpl throws this when the send's timeout has passed before it
#: writes the request (route look-up, connection): the message was not sent.
NOT_SENT_YET = "sendKernelImpl call timeout"
SEND_ATTEMPTS = 3
#: What mqadmin's client says when an answer took longer than its own budget (a JVM that has just
#: started, on a loaded machine). A read-only command that says so is run again.
TIMED_OUT = ("RemotingTimeoutException", NOT_SENT_YET)
READ_ATTEMPTS = 3


class Mqadmin:
    """Runs `MQAdminStartup <subcommand> -n <namesrv>` in a throw-away JVM (about 2–5 s a call)."""

    def __init__(
        self,
        java: Path,
        dist: Distribution,
        namesrv: str,
        work_dir: Path,
        *,
        system_props: Mapping[str, str] | None = None,
    ) -> None:
        self.java = java
        self.dist = dist
        self.namesrv = namesrv
        self.work_dir = work_dir
        #: Of every run (the TLS sandbox's client properties).
        self.system_props = dict(system_props or {})

    def argv(
        self, subcommand: str, *args: str, system_props: Mapping[str, str] | None = None
    ) -> list[str]:
        return java_argv(
            self.java,
            self.dist.classpath,
            MQADMIN_MAIN,
            [subcommand, *args, "-n", self.namesrv],
            options=JvmOptions(
                heap_mb=128, system_props={**self.system_props, **(system_props or {})}
            ),
            home=self.work_dir / "home",
        )

    async def run(
        self,
        subcommand: str,
        *args: str,
        until: str | None = None,
        timeout: float = 60.0,
        system_props: Mapping[str, str] | None = None,
    ) -> str:
        """Stdout of one mqadmin command; MqadminError when it fails, even with exit code 0.

        `until` is the start of the line a read-only command prints last. Once it appears the
        JVM is killed instead of waiting ~3 s for its remoting client to shut down (a
        non-interruptible 3 s poll in NettyEventExecutor); there is nothing left for it to do.
        """
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "rocketmq-home").mkdir(exist_ok=True)
        proc = await asyncio.create_subprocess_exec(
            *self.argv(subcommand, *args, system_props=system_props),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.work_dir,
            env=jvm_env(self.work_dir / "rocketmq-home"),
            start_new_session=True,
        )
        assert proc.stdout is not None
        assert proc.stderr is not None
        stderr_task = asyncio.ensure_future(proc.stderr.read())
        lines: list[str] = []
        finished_early = False
        try:
            async with asyncio.timeout(timeout):
                async for raw in proc.stdout:
                    line = raw.decode(errors="replace")
                    lines.append(line)
                    if until is not None and line.startswith(until):
                        finished_early = True
                        proc.kill()
                        break
                await proc.wait()
                err = (await stderr_task).decode(errors="replace")
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            stderr_task.cancel()
        out = "".join(lines)
        problem = command_error(out, err)
        if (proc.returncode != 0 and not finished_early) or problem:
            raise MqadminError(
                f"mqadmin {subcommand} {' '.join(args)} failed "
                f"(exit {proc.returncode}): {problem or err.strip()[-2000:]}"
            )
        return out

    async def read(self, subcommand: str, *args: str, until: str | None = None) -> str:
        """`run` for a command that only reads: run again (up to READ_ATTEMPTS) when mqadmin's
        client ran out of time, which says nothing about the cluster."""
        return await self._run_again(TIMED_OUT, READ_ATTEMPTS, subcommand, *args, until=until)

    async def _run_again(
        self, markers: Sequence[str], attempts: int, subcommand: str, *args: str, **kwargs: Any
    ) -> str:
        """`run`, again while it fails with one of `markers` in its error, `attempts` in all."""
        for _ in range(attempts - 1):
            try:
                return await self.run(subcommand, *args, **kwargs)
            except MqadminError as e:
                if not any(m in str(e) for m in markers):
                    raise
        return await self.run(subcommand, *args, **kwargs)

    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        args: Sequence[str] = ("-g", group, "-t", topic) if topic else ("-g", group)
        out = await self.read("consumerProgress", *args, until="Consume Inflight Total:")
        return parse_consumer_progress(out)

    async def groups(self) -> list[ConsumerProgressLine]:
        return parse_group_list(await self.read("consumerProgress"))

    async def query_msg_by_offset(
        self, topic: str, broker_name: str, queue_id: int, offset: int
    ) -> QueriedMessage | None:
        """The message at a queue's offset as mqadmin reads it (a pull as TOOLS_CONSUMER, then a
        look-up by id), with its body read from the file mqadmin wrote (and removed); None
        when mqadmin found no message there."""
        out = await self.read(
            "queryMsgByOffset",
            *("-t", topic, "-b", broker_name, "-i", str(queue_id), "-o", str(offset)),
            until="Message Body Path:",
        )
        found = parse_query_msg(out)
        if found is None:
            return None
        return replace(found, body=await asyncio.to_thread(_take_body, Path(found.body_path)))

    async def send_message(
        self,
        topic: str,
        body: str,
        *,
        broker_name: str,
        queue_id: int,
        tags: str,
        keys: str,
        compress_type: str | None = None,
    ) -> None:
        """One message sent by the Java producer inside mqadmin; `compress_type` (ZLIB, LZ4,
        ZSTD) is the codec it compresses a body over 4 KiB with (the client's
        `rocketmq.message.compressType`)."""
        props = {"rocketmq.message.compressType": compress_type} if compress_type else None
        # Sent again only when the producer's 3 s budget ran out before the message went out
        # (a JVM's start on a loaded machine): that cannot send it twice.
        out = await self._run_again(
            (NOT_SENT_YET,),
            SEND_ATTEMPTS,
            "sendMessage",
            *("-t", topic, "-p", body, "-k", keys, "-c", tags),
            *("-b", broker_name, "-i", str(queue_id)),
            system_props=props,
        )
        if "SEND_OK" not in out:
            raise MqadminError(f"mqadmin sendMessage did not answer SEND_OK: {out[-500:]}")

    async def lite_group_info(self, parent_topic: str, group: str) -> LiteGroupReport:
        out = await self.read("getLiteGroupInfo", "-p", parent_topic, "-g", group)
        return parse_lite_group_info(out)

    async def lite_topic(self, parent_topic: str, group: str, lite: str) -> list[LiteTopicRow]:
        """`getLiteGroupInfo ... -l LITE`: each broker's offsets of one lite topic."""
        out = await self.read("getLiteGroupInfo", "-p", parent_topic, "-g", group, "-l", lite)
        return parse_lite_topic(out)

    async def topic_status(self, topic: str) -> TopicStatus:
        out = await self.read("topicStatus", "-t", topic, until="Topic Put TPS:")
        return parse_topic_status(out)
