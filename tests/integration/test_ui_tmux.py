"""The console in a real terminal (tmux, 80x24) against the sandbox, driven by keys only.

It opens a seeded group the way an operator would (groups, filter, enter), reads the committed
offsets and lag off the captured screen, and compares them with `mqadmin consumerProgress`.
The group is `analytics-etl`: static after the seed, committed on some queues only, so the
screen must say "unknown" exactly where mqadmin prints a consumer offset of 0.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from console.sandbox import scenario

GROUP = scenario.GROUP_PARTIAL
DEADLINE = 60.0

Key = tuple[str, str, int]


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def start(self, command: str, size: tuple[int, int] = (80, 24)) -> None:
        cols, rows = size
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                str(cols),
                "-y",
                str(rows),
                command,
            ],
            check=True,
        )

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def text(self, *keys: str) -> None:
        """Type literally (no key-name lookup)."""
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", *keys], check=True)

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def wait_for(self, ready: Callable[[str], bool], what: str) -> str:
        """Poll the pane until `ready(screen)`, up to DEADLINE seconds."""
        deadline = time.monotonic() + DEADLINE
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never showed; the screen was:\n{screen}")
            time.sleep(0.1)  # a poll interval, not a wait for something in particular

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    session = Tmux(f"rmqc-ui-{uuid.uuid4().hex[:8]}")
    yield session
    session.kill()


def queue_rows(screen: str) -> dict[Key, tuple[str, str]]:
    """(topic, broker, queue id) -> (committed, lag) from the queue table on screen."""
    rows: dict[Key, tuple[str, str]] = {}
    for line in screen.splitlines():
        fields = line.split()
        # TOPIC BROKER Q MIN MAX COMMITTED INFL LAG ...
        if len(fields) >= 8 and fields[1].startswith("broker-") and fields[2].isdigit():
            rows[(fields[0], fields[1], int(fields[2]))] = (fields[5], fields[7])
    return rows


def test_keys_only_open_a_group_and_read_its_offsets(
    sandbox: Any, tmux: Tmux, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")
    console = Path(sys.executable).with_name("rmq-console")
    tmux.start(
        f"env RMQ_CONSOLE_CONFIG={shlex.quote(str(config))} NO_COLOR=1 "
        f"{shlex.quote(str(console))} --namesrv {sandbox.namesrv_addr}"
    )
    tmux.wait_for(lambda s: "broker-a" in s and "broker-b" in s, "the cluster overview")
    tmux.keys("g")
    tmux.wait_for(lambda s: GROUP in s and "refreshed" in s, "the group list")
    tmux.keys("/")
    tmux.text(GROUP)
    tmux.wait_for(lambda s: re.search(r"groups · 1/\d+", s) is not None, "the filtered list")
    tmux.keys("Enter", "Enter")  # leave the filter box, open the group
    screen = tmux.wait_for(
        lambda s: f"› {GROUP}" in s and "refreshed" in s and len(queue_rows(s)) > 0,
        "the group's queues",
    )
    ours = queue_rows(screen)
    total = int(re.search(r"queues · (\d+)/", screen).group(1))  # type: ignore[union-attr]
    assert len(ours) == total, f"all {total} queues fit on an 80x24 screen:\n{screen}"

    progress = asyncio.run(sandbox.mqadmin.consumer_progress(GROUP))
    theirs = {(r.topic, r.broker_name, r.queue_id): r for r in progress.rows}
    assert set(ours) == set(theirs)
    unknown = 0
    for key, (committed, lag) in ours.items():
        row = theirs[key]
        if committed == "unknown":
            # mqadmin prints 0 for "never committed"; the console never does.
            unknown += 1
            assert lag == "unknown", key
            assert row.consumer_offset == 0, key
        else:
            assert int(committed) == row.consumer_offset, key
            assert int(lag) == row.diff, key
    assert 0 < unknown < len(ours), "the group is committed on some queues only"
    tmux.keys("q")
