"""The lag history against the real sandbox, across a console restart: a console whose clock runs
65 minutes behind opens a group of the test's own and refreshes it (its samples stored an hour
ago, as far as the history can tell), quits; a plan shifts the group's offsets back by 3 and is
applied (journaled); a second console, on the real clock, refreshes the group and shows the lag
chart over the last day: more than an hour of samples from both consoles, the apply marked, and
the newest sample holding the offsets the apply wrote. `history -g G --lag --json` prints the
same series."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.cli import main
from console.config import ClusterConfig, Config
from console.remote.proxy import remote_sources
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.services.apply.check import check_apply
from console.services.apply.writer import Applier
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.read.lag_history import HOUR_MS, MINUTE_MS
from console.ui.app import ConsoleApp, make_app
from console.ui.themes import PROJECT_THEMES
from console.ui.widgets.lagchart import LagChart
from tests.support.console_keys import open_group
from tests.support.groups import new_group, shift_plan
from tests.support.writes import write_access
from tests.ui.helpers import screen_lines, settle

BEHIND_MS = 65 * MINUTE_MS
STEP_S = 120.0  # the first console's clock moves on this much between its refreshes


class Clock:
    """The real clock, shifted by `offset_s`."""

    def __init__(self, offset_s: float) -> None:
        self.offset_s = offset_s

    def __call__(self) -> float:
        return time.time() + self.offset_s


@pytest.fixture
async def admin(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as client:
        yield client


def console(sandbox: Sandbox, workspace: Path, clock: Clock) -> ConsoleApp:
    cluster = ClusterConfig(name="sandbox", namesrv=(sandbox.namesrv_addr,))
    config = Config(
        clusters=(cluster,), refresh_interval=3600, theme="rmq-dark", workspace=str(workspace)
    )
    return make_app(
        config, remote_sources(config), cluster=cluster, clock=clock, theme_paths=[PROJECT_THEMES]
    )


async def test_the_chart_spans_an_hour_across_a_restart_with_the_apply_marked(
    sandbox: Sandbox,
    admin: AdminClient,
    plan_runner: SparkRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    group, before = await new_group(sandbox, admin)
    ws = tmp_path / "ws"

    behind = Clock(-BEHIND_MS / 1000)
    first = console(sandbox, ws, behind)
    async with first.run_test(size=(80, 24)) as pilot:
        await open_group(pilot, first, group)
        for _ in range(2):
            behind.offset_s += STEP_S
            await pilot.press("r")
            await settle(pilot)
    assert first.lag_history is not None
    early = first.lag_history.series("sandbox", group).points
    assert len(early) >= 3
    # Every queue committed 5 behind its max when made; the trickle producer adds to orders.
    assert all(not p.partial and (p.total_lag or 0) >= 5 * len(before) for p in early)

    reader = sandbox.reader(admin)
    plan = await shift_plan(sandbox, admin, plan_runner, Workspace(ws), group)
    journal = await Applier(write_access(reader, ws, "sandbox")).apply(
        await check_apply(reader, plan)
    )
    assert {q.state.value for q in journal.queues} == {"verified"}

    second = console(sandbox, ws, Clock(0))
    async with second.run_test(size=(80, 24)) as pilot:
        screen = await open_group(pilot, second, group)
        await pilot.press("c", "t")  # the chart, over the last day
        await settle(pilot)
        chart = screen.query_one(LagChart)
        report = chart.report
        assert report is not None
        assert report.until_ms - report.since_ms == 24 * HOUR_MS
        points = report.series.points
        assert points[-1].at_ms - points[0].at_ms >= HOUR_MS
        assert points[: len(early)] == early  # the first console's samples, as it stored them
        newest = points[-1]
        assert not newest.partial
        assert (newest.total_lag or 0) >= 8 * len(before)  # 3 more behind on every queue
        assert {
            (q.broker, q.queue_id): q.committed for q in newest.queues if q.topic == TOPIC_ORDERS
        } == {k: v - 3 for k, v in before.items()}
        assert [(m.kind, m.apply_id, m.status) for m in report.marks] == [
            ("apply", journal.apply_id, "finished")
        ]
        assert chart.data is not None
        assert len(chart.data.marks) == 1
        shown = "\n".join(screen_lines(second))
        assert "last day" in shown
        assert f"apply {time.strftime('%H:%M', time.localtime(journal.started_at_ms / 1000))}" in (
            shown
        )
        plot = shown[shown.index("┌") :]
        assert "apply" in plot
    # The walkthroughs' question: where was the group before the apply?
    assert second.lag_history is not None
    then = second.lag_history.offsets_at("sandbox", group, journal.started_at_ms)
    assert then is not None
    assert {
        (q.broker, q.queue_id): q.committed for q in then.queues if q.topic == TOPIC_ORDERS
    } == before

    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {ws}\nclusters:\n  - name: sandbox\n    namesrv: [{sandbox.namesrv_addr}]\n"
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    capsys.readouterr()
    code = await asyncio.to_thread(
        main, ["history", "-g", group, "--lag", "--since", "24h", "--json", "--cluster", "sandbox"]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(p["at_ms"], p["total_lag"], p["partial"]) for p in doc["points"]] == [
        (p.at_ms, p.total_lag, p.partial) for p in points
    ]
    assert doc["points"][-1]["queues"] == [
        {
            "topic": q.topic,
            "broker": q.broker,
            "queue": q.queue_id,
            "committed": q.committed,
            "max": q.max_offset,
            "lag": q.lag,
        }
        for q in newest.queues
    ]
    assert doc["evaluation"]["status"] == report.verdict.status.value
    assert doc["evaluation"]["rule"] == report.verdict.rule
    assert [m["apply_id"] for m in doc["marks"]] == [journal.apply_id]
