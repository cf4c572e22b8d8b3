"""Two walkthroughs in a real terminal (tmux, 80x24) against the sandbox, keys only: the group
from the list, `w`, the walkthrough, its questions, the preview, the typed confirmation, the
result; the report on disk and the broker holding the targets."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.topics import retry_topic
from console.sandbox.runner import Sandbox
from console.services.walkthrough.guided_run import load_walkthroughs
from tests.connect import ConnectServer
from tests.support.groups import committed, group_with_retry_backlog, new_group
from tests.support.terminal import Tmux


def start(
    tmux: Tmux, sandbox: Sandbox, server: ConnectServer, tmp_path: Path, group: str, name: str
) -> None:
    """The console at 80x24 with a local `spark_master`, and the session's Spark Connect server
    running as after `spark up`: it previews there, as the CLI's `plan` would."""
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {tmp_path / 'ws'}\nspark_master: local[1]\nwalkthrough_watch: 1\n"
    )
    tmux.start_console(config, "--namesrv", sandbox.namesrv_addr, spark_cache=server.cache)
    tmux.wait_for(lambda s: "broker-a" in s and "broker-b" in s, "the cluster overview")
    tmux.keys("g")
    tmux.wait_for(lambda s: "refreshed" in s, "the group list")
    tmux.keys("/")
    tmux.wait_for(lambda s: "filter: words to match" in s, "the filter box")
    tmux.text(group)
    tmux.wait_for(lambda s: re.search(r"groups · 1/\d+", s) is not None, "the filtered list")
    tmux.keys("Enter", "Enter")
    tmux.wait_for(lambda s: f"› {group}" in s and "refreshed" in s, "the group")
    tmux.keys("w")
    tmux.wait_for(lambda s: "Replay since an incident" in s, "the walkthroughs")
    index = load_walkthroughs().names.index(name)
    tmux.keys(*["Down"] * index, "Enter")


def apply_and_report(tmux: Tmux, group: str, workspace: Path) -> Path:
    tmux.wait_for(lambda s: "Enter: preview the reset" in s, "every step answered")
    tmux.keys("Enter")
    tmux.wait_for(
        lambda s: re.search(r"^ plan \d{8}T", s, re.M) is not None, "the plan", seconds=600
    )
    host_log = (workspace / "logs" / "spark-host.log").read_text()
    assert "Spark host on sc://" in host_log, host_log[:400]
    tmux.keys("a")
    tmux.wait_for(lambda s: f"type {group} to confirm" in s, "the confirm dialog")
    tmux.keys("BTab")  # from Cancel to the group name box
    tmux.text(group)
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "finished" in s and "verified" in s, "the apply's result", seconds=180)
    tmux.keys("Escape")
    tmux.keys("Escape")
    screen = tmux.wait_for(
        lambda s: "report:" in s and "/reports/" in s, "the walkthrough's report", seconds=120
    )
    assert re.search(r"(\d+)/\1 verified \(finished\)", " ".join(screen.split())), screen
    tmux.keys("q")
    (report,) = (workspace / "reports").glob(f"*-{group}.md")
    return report


def test_drain_a_flood_at_80x24(
    sandbox: Sandbox, tmux: Tmux, warm_cli: ConnectServer, tmp_path: Path
) -> None:
    group, before = asyncio.run(_new_group(sandbox))
    start(tmux, sandbox, warm_cli, tmp_path, group, "drain-flood")
    tmux.wait_for(lambda s: "Skip up to where?" in s, "the first question")
    tmux.keys("Enter")  # the default: latest
    tmux.wait_for(lambda s: "never delivered" in s and "Which topics?" in s, "the skip's span")
    tmux.keys("Enter")
    report = apply_and_report(tmux, group, tmp_path / "ws")
    assert "Verified: all" in report.read_text()
    held = asyncio.run(_committed(sandbox, group))
    assert all(held[q] is not None and held[q] > before[q] for q in before)  # type: ignore[operator]


def test_skip_a_retry_backlog_at_80x24(
    sandbox: Sandbox, tmux: Tmux, warm_cli: ConnectServer, tmp_path: Path
) -> None:
    async def setup() -> tuple[str, int]:
        async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
            return await group_with_retry_backlog(sandbox, admin)

    group, _ = asyncio.run(setup())
    start(tmux, sandbox, warm_cli, tmp_path, group, "retry-backlog")
    tmux.wait_for(lambda s: "Replay or skip the retry backlog?" in s, "the question")
    tmux.text("9")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "not usable" in s and "not one of" in s, "the refusal")
    # In one read, as a quick operator over SSH sends them: cleared, typed, then submitted.
    tmux.keys("C-u", "2", "Enter")
    report = apply_and_report(tmux, group, tmp_path / "ws")
    text = report.read_text()
    assert retry_topic(group) in text
    assert "Verified: all" in text

    async def held() -> list[int | None]:
        async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
            return [
                await admin.query_consumer_offset(addr, group, retry_topic(group), 0)
                for addr in sandbox.broker_addrs.values()
            ]

    assert asyncio.run(held()) == [4, 4]


async def _new_group(sandbox: Sandbox) -> tuple[str, dict[tuple[str, int], int]]:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        return await new_group(sandbox, admin)


async def _committed(sandbox: Sandbox, group: str) -> dict[tuple[str, int], int | None]:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        return await committed(sandbox, admin, group)
