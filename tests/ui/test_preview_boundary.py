"""The messages at the boundary in the reset preview, on a fake cluster and a fake planner: read
by themselves for a small plan, on `b` for the queue under the cursor of a large one; shown under
the diff at 80x24, a message that cannot be read shown as such. (The real brokers and the real
planner: tests/integration/test_ui_preview.py.)"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from console.domain.boundary_messages import Absence, Boundary, BoundaryRequest, MessageView
from console.domain.plan import PLAN_COLUMNS, PlanRow
from console.ui.screens.dialogs import BoundaryDialog, CommandsDialog, ErrorDialog
from console.ui.screens.preview import PreviewScreen
from console.ui.widgets.plandiff import PlanDiff
from tests.support.previews import FakePlanner, FakePlanners, open_preview

from .fakes import NOW_MS, FakeCluster, fake_app, fake_services
from .helpers import screen_lines, settle


def row(
    queue_id: int, current: int | None, target: int | None, broker: str = "broker-a"
) -> PlanRow:
    delta = None if current is None or target is None else target - current
    return PlanRow(
        "prod", "billing", "orders", broker, queue_id, 0, 1200, current, target, target, delta,
        None, (),
    )  # fmt: skip


class RowsPlanner(FakePlanner):
    """The fake planner with rows of the test's choosing."""

    def __init__(self, rows: list[PlanRow]) -> None:
        super().__init__()
        self.plan_rows = rows

    def rows(self, plan_uri: str) -> pa.Table:
        names = [n for n, _ in PLAN_COLUMNS]
        return pa.Table.from_pylist(
            [
                {n: getattr(r, n) if n != "warnings" else list(r.warnings) for n in names}
                for r in self.plan_rows
            ]
        )


def planned(rows: list[PlanRow]) -> Any:
    """The console's services, their previews planning `rows`."""
    return fake_services(planners=FakePlanners(RowsPlanner(rows)))


def view(offset: int, body: str, *, broker: str = "broker-a", qid: int = 0) -> MessageView:
    return MessageView(
        topic="orders",
        broker=broker,
        queue_id=qid,
        queue_offset=offset,
        store_time_ms=NOW_MS - 60_000,
        born_time_ms=NOW_MS - 60_001,
        keys=(f"order-{offset}",),
        tags="created",
        msg_id=f"AC1100010000{offset:08X}",
        offset_msg_id="7F000001000060E6000000000000AECF",
        size=len(body),
        reconsume_times=0,
        body_head=body,
        body_binary=False,
        body_truncated=False,
    )


def boundary(first: MessageView | None, last: MessageView | None = None, **kw: Any) -> Boundary:
    request = BoundaryRequest("orders", "broker-a", 0, 0, 0)  # the fake puts the real one in
    return Boundary(request, first, kw.get("first_note"), last, kw.get("last_note"))


async def compute(pilot: Any) -> PreviewScreen:
    await open_preview(pilot)
    await pilot.click("#value")
    await pilot.press(*"2026-11-22T10:05:00+01:00", "enter")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, PreviewScreen)
    return screen


async def test_a_small_plan_shows_its_boundaries_at_80x24() -> None:
    services = planned([row(0, 1100, 1000), row(1, 900, 1000), row(2, 50, 50)])
    cluster = FakeCluster()
    cluster.boundaries = {
        ("orders", "broker-a", 0): boundary(view(1000, '{"order": 1000}')),
        ("orders", "broker-a", 1): boundary(
            view(1000, '{"order": 1000, "q": 1}', qid=1), view(999, '{"poison": true}', qid=1)
        ),
    }
    app, _ = fake_app(cluster, services=services)
    async with app.run_test(size=(80, 24)) as pilot:
        await compute(pilot)
        # One read for the plan, of the two queues it changes (queue 2 stays where it is).
        assert [[r.key for r in ask] for ask in cluster.boundary_asks] == [
            [("orders", "broker-a", 0), ("orders", "broker-a", 1)]
        ]
        assert [r.skips for r in cluster.boundary_asks[0]] == [False, True]
        lines = screen_lines(app)
        text = "\n".join(lines)
        first = next(ln for ln in lines if "first @1000" in ln)
        assert "2023-11-14 22:12:20 +0000" in first
        assert "keys order-1000  tags created  15 B" in first
        assert '{"order": 1000}' in text
        assert "skipped" not in text  # a replay skips nothing
        # Every diff row still in view above the pane, and the status line and keys below it.
        for q in (0, 1, 2):
            assert any(ln.split()[:3] == ["orders", "broker-a", str(q)] for ln in lines), text
        assert lines[-1].lstrip().startswith("/ Filter"), text

        await pilot.press("down")  # the skip: its last skipped message too
        await pilot.pause()
        lines = screen_lines(app)
        text = "\n".join(lines)
        assert any("first @1000" in ln for ln in lines)
        assert any("skipped @999" in ln for ln in lines)
        assert '{"poison": true}' in text
        assert all(len(ln) <= 80 for ln in lines)

        await pilot.press("enter")  # the details: ids and all, and the mqadmin lines
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, BoundaryDialog)
        details = "\n".join(screen_lines(app))
        assert "first consumed after the reset · offset 1000" in details
        assert "msg id     AC1100010000000003E8" in details
        assert "offset id  7F000001000060E6000000000000AECF" in details
        assert "stored     2023-11-14 22:12:20.000 +0000 UTC" in details
        assert "↑↓ scroll · esc closes" in details
        await pilot.press("end")  # the last skipped, further down
        await pilot.wait_for_scheduled_animations()
        details = "\n".join(screen_lines(app))
        assert "msg id     AC1100010000000003E7" in details
        assert '{"poison": true}' in details
        assert "mqadmin queryMsgByOffset -t orders -b broker-a -i 1 -o 999 -n" in details
        assert dialog.commands == [
            "mqadmin queryMsgByOffset -t orders -b broker-a -i 1 -o 999 -n 10.0.0.9:9876",
            "mqadmin queryMsgByOffset -t orders -b broker-a -i 1 -o 1000 -n 10.0.0.9:9876",
        ]
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, PreviewScreen)

        await pilot.press("down")  # not changed by the plan
        await pilot.pause()
        assert "not changed by the plan" in "\n".join(screen_lines(app))
        screen = app.screen
        assert isinstance(screen, PreviewScreen)
        assert screen.check_action("boundary", ()) is None  # nothing to read there


async def test_a_message_that_cannot_be_read_is_shown_as_such() -> None:
    services = planned([row(0, 1100, 1200), row(1, 900, 1000, broker="broker-b")])
    cluster = FakeCluster()
    end = "nothing after the target: it is the queue's end (max offset 1200)"
    cluster.boundaries = {
        ("orders", "broker-a", 0): boundary(None, view(1199, "last"), first_note=end)
    }
    # broker-b's queue is not in the fake: it "does not answer"
    app, _ = fake_app(cluster, services=services)
    async with app.run_test(size=(80, 24)) as pilot:
        await compute(pilot)
        text = "\n".join(screen_lines(app))
        assert f"first @1200\n   {end}" in text
        assert "skipped @1199" in text
        await pilot.press("down")
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "first @1000\n   broker-b did not answer: timed out" in text
        assert "skipped @999\n   broker-b did not answer: timed out" in text
        diff = app.screen.query_one(PlanDiff)
        unread = diff.boundaries["billing|orders|broker-b|1"]
        assert isinstance(unread, Boundary)
        assert unread.first_absence is Absence.UNANSWERED


async def test_a_large_plan_reads_the_selected_queue_on_b() -> None:
    rows = [row(q, 100, 90) for q in range(40)]
    services = planned(rows)
    cluster = FakeCluster()
    cluster.boundaries = {("orders", "broker-a", 2): boundary(view(90, "ninety", qid=2))}
    app, _ = fake_app(cluster, services=services)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await compute(pilot)
        assert cluster.boundary_asks == []  # 40 queues: nothing read until asked
        assert "b reads the first message after the reset (offset 90)" in "\n".join(
            screen_lines(app)
        )
        assert screen.check_action("boundary", ()) is True
        await pilot.press("down", "down", "b")
        await settle(pilot)
        assert [[r.key for r in ask] for ask in cluster.boundary_asks] == [
            [("orders", "broker-a", 2)]
        ]
        text = "\n".join(screen_lines(app))
        assert "first @90" in text
        assert "ninety" in text
        await pilot.press("m")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, CommandsDialog)
        assert dialog.lines[-1] == (
            "mqadmin queryMsgByOffset -t orders -b broker-a -i 2 -o 90 -n 10.0.0.9:9876"
        )


async def test_a_failed_read_says_so_in_the_pane() -> None:
    services = planned([row(0, 1100, 1000)])
    cluster = FakeCluster()
    cluster.failures["boundary_messages"] = RuntimeError("network process gone")
    app, _ = fake_app(cluster, services=services)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_preview(pilot)
        await pilot.click("#value")
        await pilot.press(*"2026-11-22T10:05:00+01:00", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ErrorDialog)  # the console's one report of a failure
        assert "network process gone" in str(app.screen.query_one("#error-message").render())
        await pilot.press("escape")
        await pilot.pause()
        assert "could not read: network process gone" in "\n".join(screen_lines(app))
