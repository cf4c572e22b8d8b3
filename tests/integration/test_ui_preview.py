"""The reset preview against the real sandbox, the way an operator reaches it: the console built by
`make_app`, the real network process, keys to the group and `R`, and the real planner
(`ClusterPlanners`) on the console's own warm Spark session.

What the diff shows must be the plan written to the workspace, row for row, and what the broker
itself says: the CURRENT column is the committed offset the wire client reads, a shift-by target
is that offset moved, a to-timestamp target is the broker's own search for that time; the
message at each queue's boundary is the broker's message at the target. Nothing is written to
the cluster.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from textual.pilot import Pilot

from console.config import ClusterConfig, Config
from console.domain.boundary_messages import Boundary
from console.remote.proxy import remote_sources
from console.rocketmq.models import BoundaryType
from console.sandbox import scenario
from console.sandbox.runner import Sandbox
from console.services.infra import files
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import ROWS, Workspace
from console.services.plan.preview_flow import ResetFlow, Stage
from console.ui.app import ConsoleApp, make_app
from console.ui.screens.group import GroupScreen
from console.ui.screens.preview import PreviewScreen
from console.ui.themes import PROJECT_THEMES
from console.ui.widgets.plandiff import PlanDiff, row_id
from tests.support.timestamps import seek_time
from tests.ui.helpers import screen_lines, settle, status, text_of, values

GROUP = scenario.GROUP_OFFLINE  # committed by hand, nothing consumes: its offsets stay put
TOPIC = scenario.TOPIC_ORDERS
# Spark's first start, and a plan job, on two cores shared with other test runs.
PLAN_TIMEOUT_S = 900.0


@pytest.fixture(autouse=True)
def _warm_spark(plan_runner: SparkRunner) -> SparkRunner:
    # The consoles' previews plan on the session's warm Spark, as one console keeps one.
    return plan_runner


Queue = tuple[str, str, int]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def console(sandbox: Sandbox, workspace: Path) -> ConsoleApp:
    cluster = ClusterConfig(name="sandbox", namesrv=(sandbox.namesrv_addr,))
    config = Config(
        clusters=(cluster,),
        refresh_interval=3600,
        theme="rmq-dark",
        spark_master="local[2]",
        workspace=str(workspace),
    )
    return make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])


async def settled(pilot: Pilot[int]) -> None:
    await asyncio.wait_for(settle(pilot), PLAN_TIMEOUT_S)


async def committed(sandbox: Sandbox) -> dict[Queue, int | None]:
    """The group's committed offsets on its topic, as the broker answers them."""
    out: dict[Queue, int | None] = {}
    async with sandbox.admin() as admin:
        for broker, addr in sandbox.broker_addrs.items():
            for q in range(scenario.topic_plan(TOPIC).queues_per_broker):
                out[(TOPIC, broker, q)] = await admin.query_consumer_offset(addr, GROUP, TOPIC, q)
    return out


async def searched(sandbox: Sandbox, queues: list[Queue], ts_ms: int) -> dict[Queue, int]:
    """The broker's own answer to "first message at or after ts" for each queue."""
    async with sandbox.admin() as admin:
        return {
            (topic, broker, q): await admin.search_offset(
                sandbox.broker_addrs[broker], topic, q, ts_ms, BoundaryType.LOWER
            )
            for topic, broker, q in queues
        }


def plan_on_disk(flow: ResetFlow) -> dict[Queue, dict[str, Any]]:
    assert flow.result is not None
    fs, path = files.filesystem(files.join(flow.result.uri, ROWS))
    rows = pq.read_table(path, filesystem=fs).to_pylist()
    return {(r["topic"], r["broker"], r["queue_id"]): r for r in rows}


def diff_shown(app: ConsoleApp) -> dict[Queue, dict[str, object]]:
    """The diff's rows as shown (raw values behind the cells), by queue."""
    out = {}
    for key, row in values(app, "#diff").items():
        group, topic, broker, queue_id = key.split("|")
        assert group == GROUP
        out[(topic, broker, int(queue_id))] = row
    return out


def assert_shown_is_written(app: ConsoleApp, flow: ResetFlow, workspace: Path) -> None:
    """Row for row, the diff on screen is the plan in the workspace, header included."""
    assert flow.result is not None
    assert flow.result.uri.startswith(files.to_uri(str(workspace)))
    assert Workspace(str(workspace)).read_header(flow.result.uri) == flow.result.header
    written, shown = plan_on_disk(flow), diff_shown(app)
    assert set(shown) == set(written)
    for queue, r in written.items():
        s = shown[queue]
        assert (s["min"], s["max"], s["current"], s["target"]) == (
            r["min_offset"],
            r["max_offset"],
            r["current"],
            r["target"],
        ), queue
        assert s["move"] == (None if r["delta"] is None else -r["delta"]), queue
        assert s["span"] == r["span_ms"], queue
    # And the terminal shows them: each queue's line carries its current and target.
    lines = screen_lines(app)
    for (topic, broker, q), r in written.items():
        line = next((ln for ln in lines if ln.split()[:3] == [topic, broker, str(q)]), None)
        assert line is not None, "\n".join(lines)
        assert line.split()[5:7] == [str(r["current"]), str(r["target"])], line


async def assert_boundaries_shown(sandbox: Sandbox, app: ConsoleApp) -> None:
    """A plan of eight queues has its boundaries read by itself: each queue's first message
    is the broker's message at its target, and the one under the cursor is on screen."""
    diff = app.screen.query_one(PlanDiff)
    shown = diff_shown(app)
    read = diff.boundaries
    assert {tuple(k.split("|")[1:]) for k in read} == {(t, b, str(q)) for t, b, q in shown}
    async with sandbox.admin() as admin:
        for key, boundary in read.items():
            assert isinstance(boundary, Boundary), (key, boundary)
            r = boundary.request
            assert boundary.first is not None, boundary.first_note
            assert boundary.first.queue_offset == r.target == shown[r.key]["target"]
            pulled = await admin.pull_message(
                sandbox.broker_addrs[r.broker], r.topic, r.queue_id, r.target
            )
            assert boundary.first.offset_msg_id == pulled.messages[0].offset_msg_id
    row = diff.current_row
    assert row is not None
    current = read[row_id(row)]
    assert isinstance(current, Boundary)
    assert current.first is not None
    text = "\n".join(screen_lines(app))
    assert f"first @{row.target}" in text
    assert " ".join(current.first.keys) in text


async def open_preview(pilot: Pilot[int], app: ConsoleApp) -> PreviewScreen:
    await settled(pilot)
    await pilot.press("g")
    await settled(pilot)
    await pilot.press("slash", *GROUP, "enter", "enter")  # filter, leave the box, open the group
    await settled(pilot)
    assert isinstance(app.screen, GroupScreen), status(app)
    assert app.screen.group == GROUP
    await pilot.press("R")
    await settled(pilot)  # Spark warms up while the operator reads the form
    screen = app.screen
    assert isinstance(screen, PreviewScreen)
    return screen


async def preview(pilot: Pilot[int], screen: PreviewScreen) -> ResetFlow:
    await pilot.press("enter")  # in the value box: Preview
    await settled(pilot)
    flow = screen.flow
    assert flow.stage is Stage.PREVIEWED, (flow.stage, flow.error, status(screen.app))
    return flow


async def test_the_preview_shows_the_plan_it_wrote_and_the_brokers_offsets(
    sandbox: Sandbox, console: ConsoleApp, workspace: Path
) -> None:
    before = await committed(sandbox)
    assert all(v is not None for v in before.values()), before
    app = console
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_preview(pilot, app)

        # shift-by -5: every queue re-consumes five messages from where the group stands.
        await pilot.press("shift+tab", "enter", "up", "enter")  # the strategy list: shift-by
        await pilot.press("tab", *"-5")
        await pilot.pause()
        assert "shift-by" in screen_lines(app)[2]
        assert "-5" in screen_lines(app)[2]
        flow = await preview(pilot, screen)
        assert_shown_is_written(app, flow, workspace)
        shown = diff_shown(app)
        assert set(shown) == set(before)
        for queue, offset in before.items():
            assert shown[queue]["current"] == offset, queue
            assert shown[queue]["target"] == offset - 5, queue  # type: ignore[operator]
            assert shown[queue]["move"] == 5, queue
        summary = text_of(app, "#plan-summary")
        assert f"{GROUP}: 8/8 queues change · re-consume 40 · skip 0" in summary
        assert "reset path: " in summary
        await assert_boundaries_shown(sandbox, app)

        # to-timestamp: a time inside the seeding, so some queues land between their ends.
        ts = await seek_time(sandbox)
        when = datetime.fromtimestamp(ts / 1000, UTC).isoformat(timespec="milliseconds")
        await pilot.click("#strategy")
        await pilot.press("down", "enter")  # shift-by -> to-timestamp
        await pilot.click("#value")
        await pilot.press("home", "ctrl+k", *when)
        await pilot.pause()
        assert when in screen_lines(app)[2]
        flow = await preview(pilot, screen)
        assert flow.result is not None
        assert flow.result.header.timestamp_ms == ts
        assert_shown_is_written(app, flow, workspace)
        shown = diff_shown(app)
        theirs = await searched(sandbox, sorted(shown), ts)
        assert {q: s["target"] for q, s in shown.items()} == theirs
        assert {q: s["current"] for q, s in shown.items()} == before
        assert any(s["min"] < s["target"] < s["max"] for s in shown.values())  # type: ignore[operator]

    assert len(Workspace(str(workspace)).snapshots("sandbox")) == 2  # one per preview
    assert await committed(sandbox) == before  # a preview writes nothing
