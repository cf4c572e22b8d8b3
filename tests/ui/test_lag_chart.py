"""The group screen's lag chart (`c`): what the workspace's lag history holds for the group, with
its applies and undos marked, partial samples apart from the line and unknown ones left out, the
Burrow evaluation of the window with its rule; usable at 80x24 (the chart takes the queue
table's place), an hour or a day (`t`). Every refresh stores its sample, timed by the app's
clock."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from console.config import Config
from console.domain.journal import ApplyStatus, Journal, JournalQueue, QueueState
from console.domain.lag import LagPoint, LagSeries, Mark
from console.domain.offsets import GroupOffsets
from console.domain.triage import Status, evaluate_points
from console.services.infra.journal_store import JournalStore, new_apply_id
from console.services.read.lag_history import MINUTE_MS, LagHistory
from console.services.read.lag_report import LagReport
from console.ui.screens.group import GroupScreen
from console.ui.widgets.lagchart import LagChart, chart_data, x_ticks

from .fakes import NOW_MS, NOW_S, PROD, STAGING, fake_app, sample_groups
from .helpers import screen_lines, settle

SAMPLES = 40  # one a minute before the console starts
PARTIAL_AT = (20, 21)  # minutes ago: broker-b did not answer
UNKNOWN_AT = 12  # minutes ago: nothing could be read


class Clock:
    def __init__(self, now_s: float) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def billing(minutes_ago: int) -> GroupOffsets:
    """billing as it read `minutes_ago`: orders@broker-a:0 consumed, but its lag rising by 10 a
    minute (1000 now)."""
    g = sample_groups(NOW_MS - minutes_ago * MINUTE_MS)["billing"]
    queues = tuple(
        q._replace(committed=q.max_offset - (1000 - 10 * minutes_ago))
        if q.key == ("orders", "broker-a", 0)
        else q
        for q in g.queues
    )
    g = replace(g, queues=queues)
    if minutes_ago in PARTIAL_AT:
        g = replace(
            g,
            queues=tuple(q for q in g.queues if q.broker != "broker-b"),
            unreachable_brokers=("broker-b",),
        )
    if minutes_ago == UNKNOWN_AT:
        g = replace(g, queues=(), answered=False, unreachable_brokers=("broker-a", "broker-b"))
    return g


def journal(at_ms: int, kind: str, group: str = "billing") -> Journal:
    queue = JournalQueue(group, "orders", "broker-a", "10.0.0.1:10911", 0, 900, 950)
    return Journal(
        apply_id=new_apply_id(at_ms, group, kind, "test"),
        kind=kind,
        plan_id="p",
        plan_hash="h",
        cluster="prod",
        paths={group: "direct commit"},
        who="ops@host",
        started_at_ms=at_ms,
        queues=(replace(queue, state=QueueState.VERIFIED, stored=950),),
        status=ApplyStatus.FINISHED,
        finished_at_ms=at_ms + 1000,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    history = LagHistory(tmp_path)
    for minutes_ago in range(SAMPLES, 0, -1):
        history.record("prod", [billing(minutes_ago)], NOW_MS - minutes_ago * MINUTE_MS)
    store = JournalStore(tmp_path)
    store.write(journal(NOW_MS - 15 * MINUTE_MS, "apply"))
    store.write(journal(NOW_MS - 5 * MINUTE_MS, "undo"))
    store.write(journal(NOW_MS - 10 * MINUTE_MS, "apply", group="audit"))  # not billing's
    return tmp_path


async def test_the_chart_shows_the_history_with_applies_marked_at_80x24(workspace: Path) -> None:
    clock = Clock(NOW_S)
    config = Config(
        clusters=(PROD, STAGING), refresh_interval=3600, theme="rmq-dark", workspace=str(workspace)
    )
    app, fake = fake_app(config=config, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        # The group list's refresh stored every group it read, at the console's clock.
        kept = LagHistory(workspace)
        assert kept.groups("prod") == sorted(fake.groups)
        assert [p.at_ms for p in kept.series("prod", "audit").points] == [NOW_MS]
        await pilot.press("down", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        assert "COMMITTED" in "\n".join(screen_lines(app))
        clock.now_s += 30
        fake.advance()
        await pilot.press("r")
        await settle(pilot)

        await pilot.press("c")
        await settle(pilot)
        now = NOW_MS + 30_000
        chart = screen.query_one(LagChart)
        assert chart.report is not None
        assert (chart.report.since_ms, chart.report.until_ms) == (now - 60 * MINUTE_MS, now)
        # The refreshes of this console are stored at its clock's times, after the 40 before.
        points = chart.report.series.points
        assert [p.at_ms for p in points[-2:]] == [NOW_MS, now]
        assert len(points) == SAMPLES + 2
        data = chart.data
        assert data is not None
        # The line breaks at the partial and the unknown samples; the partial ones are drawn
        # apart at their lower bound (broker-a's lag only), the unknown one not at all.
        assert len(data.lines) == 3
        assert [round(x, 1) for x, _ in data.partial] == [-21.5, -20.5]
        assert [y for _, y in data.partial] == [790.0, 800.0]
        assert data.unknown == 1
        assert all(y > 0 for run in data.lines for _, y in run)
        marks = [(round(x, 1), kind) for x, kind in data.marks]
        assert marks == [(-15.5, "apply"), (-5.5, "undo")]

        lines = screen_lines(app)
        shown = "\n".join(lines)
        assert "COMMITTED" not in shown  # the chart took the queue table's place
        assert "last hour" in shown
        assert f"{SAMPLES + 2} samples (2 partial ≥, 1 unknown)" in shown
        assert "rule:" in shown
        plot = lines[lines.index(next(line for line in lines if "┌" in line)) :]
        assert any("apply" in line for line in plot)
        assert any("undo" in line for line in plot)
        assert any("≥" in line for line in plot)
        labels = x_ticks(now - 60 * MINUTE_MS, now, 70)[1]
        axis = next(line for line in plot if re.search(r"\d\d:\d\d", line))
        assert [label for label in labels if label in axis] == labels

        await pilot.press("t")
        await settle(pilot)
        assert chart.report.until_ms - chart.report.since_ms == 24 * 60 * MINUTE_MS
        assert "last day" in "\n".join(screen_lines(app))

        await pilot.press("c")
        await settle(pilot)
        assert "COMMITTED" in "\n".join(screen_lines(app))


async def test_the_chart_follows_the_theme() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("down", "enter", "c")
        await settle(pilot)
        chart = app.screen.query_one(LagChart)
        assert chart.report is not None
        dark = chart.colours()
        app.theme = "rmq-light"
        await pilot.pause()
        light = chart.colours()
        assert dark["primary"] != light["primary"]
        assert light["primary"] == (0x1F, 0x63, 0xB5)  # themes/rmq-light.yaml


def report(points: LagSeries, marks: tuple[Mark, ...] = ()) -> LagReport:
    return LagReport(
        "prod", "billing", NOW_MS - 60 * MINUTE_MS, NOW_MS, points, marks, evaluate_points(())
    )


def test_a_console_that_was_away_draws_no_line_across_the_time() -> None:
    history = [billing(m) for m in (50, 49, 48, 10, 9, 8)]
    series = LagSeries("prod", "billing", tuple(LagPoint.of(g, g.taken_at_ms) for g in history), 0)
    data = chart_data(report(series), 70)
    assert [len(run) for run in data.lines] == [3, 3]
    verdict = evaluate_points(series.points)  # the window spans the time away
    assert (verdict.status, verdict.queue) == (Status.STALL, ("orders", "broker-b", 0))
    assert "unchanged for 42m" in verdict.reason
