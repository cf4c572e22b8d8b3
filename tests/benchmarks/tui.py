"""Console benchmarks, measured on the real program in a pseudo-terminal (80x24):

- `tui_first_frame_s`: process start until the cluster overview shows the brokers (target < 1.0).
- `tui_keypress_p95_ms`: key press until its repaint reaches the terminal, while the group list
  of 500 groups refreshes without pause (refresh interval 0.1 s: a new refresh starts as soon as
  the last one ends), 95th percentile (target < 100). Typing starts once the first refresh of
  the 500 is done, during the second: the sandbox's brokers are minutes old and still compiling
  the code that answers, a production broker's JVM is long warm.

The keys typed are filter edits on the 500-row group table, each followed by the character that
only its repaint can write (the filter box echo, or the table's row count), so output the refresh
writes meanwhile is never taken for the answer. The 500 groups are created for the run (prefix
`bench-tui-`) with offsets on the stable `payments` topic, and deleted afterwards.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Sequence
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.read.reader import ClusterReader

GROUPS = 500
PREFIX = "bench-tui-"
TOPIC = "payments"
KEY_ROUNDS = 100  # 200 key presses: a 95th percentile of 60 would be the 3rd-worst key alone
FIRST_FRAME_RUNS = 5
DELETE_SUBSCRIPTIONGROUP = 207

# CSI, OSC, DCS-like strings, or a two-byte escape; an escape cut short does not match.
_ESCAPES = re.compile(
    rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[^\[\]PX^_])"
)


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    with tempfile.TemporaryDirectory(prefix="rmq-bench-tui-") as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(f"workspace: {Path(tmp) / 'ws'}\n")
        env = _env(config)
        brokers = asyncio.run(_broker_names(namesrv))
        first = statistics.median(
            _first_frame(namesrv, env, brokers) for _ in range(FIRST_FRAME_RUNS)
        )
        groups = [f"{PREFIX}{i:03d}" for i in range(GROUPS)]
        asyncio.run(_create_groups(namesrv, groups))
        try:
            total = asyncio.run(_group_count(namesrv))
            p95 = _keypress_p95_ms(namesrv, {**env, "RMQ_CONSOLE_REFRESH": "0.1"}, total)
        finally:
            asyncio.run(_delete_groups(namesrv, groups))
    return {"tui_first_frame_s": first, "tui_keypress_p95_ms": p95}


# ---- the program in a pseudo-terminal ----------------------------------------------------------


class Terminal:
    """rmq-console on a pty of a fixed size; reads what it writes, types keys into it."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], size: tuple[int, int] = (80, 24)):
        master, slave = os.openpty()
        cols, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.fd = master
        self.seen = b""
        self._carry = b""

    def send(self, keys: bytes) -> float:
        self.forget()
        os.write(self.fd, keys)
        return time.perf_counter()

    def forget(self) -> None:
        """From here on, wait_for looks only at what is painted next."""
        self.seen = b""

    def wait_for(self, *needles: bytes, timeout: float = 30.0, every: bool = True) -> float:
        """Read until every needle (or, not `every`, one of them) appeared (escape sequences
        removed) since the last send."""
        deadline = time.perf_counter() + timeout
        seen = all if every else any
        while not seen(n in self.seen for n in needles):
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{needles!r} not painted; last output: {self.seen[-400:]!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError as exc:  # the program exited
                    raise TimeoutError(
                        f"console exited: {exc}; output {self.seen[-400:]!r}"
                    ) from None
                self.seen += self._plain(chunk)
        return time.perf_counter()

    def _plain(self, chunk: bytes) -> bytes:
        """The chunk without escape sequences; one cut in half waits for the next chunk (only
        the new bytes are scanned, so reading stays cheap while the console paints a lot)."""
        data = self._carry + chunk
        cut = data.rfind(b"\x1b")
        if cut >= 0 and _ESCAPES.match(data, cut) is None:
            data, self._carry = data[:cut], data[cut:]
        else:
            self._carry = b""
        return _ESCAPES.sub(b"", data)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.fd)


def _console(namesrv: str) -> list[str]:
    return [str(Path(sys.executable).with_name("rmq-console")), "--namesrv", namesrv]


def _env(config: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL")}
    return {
        **keep,
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "RMQ_CONSOLE_CONFIG": str(config),
    }


def _first_frame(namesrv: str, env: dict[str, str], brokers: Sequence[str]) -> float:
    term = Terminal(_console(namesrv), env)
    try:
        painted = term.wait_for(*(b.encode() for b in brokers))
        return painted - term.started
    finally:
        term.close()


def _keypress_p95_ms(namesrv: str, env: dict[str, str], total: int) -> float:
    term = Terminal(_console(namesrv), env)
    try:
        term.wait_for(b"brokers")
        return filter_keypress_p95_ms(term, total, first_refresh_s=120)
    finally:
        term.close()


def filter_keypress_p95_ms(term: Terminal, total: int, *, first_refresh_s: float) -> float:
    """From the cluster's first screen: the group list of `total` opened, its first refresh
    waited for and the next one under way, the 95th percentile of KEY_ROUNDS rounds of typing
    into the filter a key no group matches and taking it back (ms from send to screen)."""
    term.send(b"g")
    all_rows = f"groups · {total}/{total}".encode()
    term.wait_for(all_rows, timeout=120)  # every group listed
    term.forget()
    term.wait_for(b" ago", timeout=first_refresh_s)  # the first refresh of all of them done
    term.forget()
    term.wait_for(b"refreshing", timeout=60)  # ... and the next one under way
    term.send(b"/")
    term.wait_for(b"filter:")
    samples = []
    for _ in range(KEY_ROUNDS):
        # "~" matches no group: the table empties and the box echoes the tilde.
        sent = term.send(b"~")
        samples.append(term.wait_for(b"\xe2\x80\x9c~\xe2\x80\x9d") - sent)
        # Backspace: all rows come back, which only the title's row count shows.
        sent = term.send(b"\x7f")
        samples.append(term.wait_for(all_rows) - sent)
    return statistics.quantiles(samples, n=20)[-1] * 1000


# ---- the 500 groups ----------------------------------------------------------------------------


async def _broker_names(namesrv: str) -> list[str]:
    async with AdminClient(namesrv) as admin:
        return sorted((await admin.master_addrs()).keys())


async def _group_count(namesrv: str) -> int:
    """Groups the console lists: the 500 and whatever the sandbox seeded."""
    async with AdminClient(namesrv) as admin:
        return len(await ClusterReader(admin).groups())


async def _create_groups(namesrv: str, groups: Sequence[str]) -> None:
    """Each group on every broker, committed halfway on every queue of the topic."""
    async with AdminClient(namesrv, timeout=10) as admin:
        brokers = await admin.master_addrs()
        gate = asyncio.Semaphore(64)

        async def create(addr: str, group: str) -> None:
            async with gate:
                await admin.create_group(addr, group)

        await asyncio.gather(*(create(a, g) for a in brokers.values() for g in groups))
        stats = {a: await admin.topic_stats(a, TOPIC) for a in brokers.values()}
        report = await OffsetWriter(admin).write(
            OffsetWrite(addr, g, TOPIC, mq.queue_id, (s.min_offset + s.max_offset) // 2)
            for addr, queues in stats.items()
            for mq, s in queues.items()
            for g in groups
        )
        if not report.ok:
            raise RuntimeError(f"committing the {len(groups)} groups: {report.summary()}")


async def _delete_groups(namesrv: str, groups: Sequence[str]) -> None:
    async with AdminClient(namesrv, timeout=10) as admin:
        brokers = await admin.master_addrs()
        gate = asyncio.Semaphore(64)

        async def delete(addr: str, group: str) -> None:
            async with gate:
                await admin.call(
                    addr, DELETE_SUBSCRIPTIONGROUP, {"groupName": group, "cleanOffset": True}
                )

        await asyncio.gather(*(delete(a, g) for a in brokers.values() for g in groups))
