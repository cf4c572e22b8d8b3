"""The lag history on disk: what a point keeps, thinning and bounds, lines cut by a killed console,
and two consoles appending (and compacting) the same file at once."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from console.config import ClusterConfig
from console.domain.gaps import Gap, Part, Why
from console.domain.lag import LagPoint, QueuePoint
from console.domain.offsets import BROADCASTING, Client, GroupOffsets, QueueOffsets
from console.domain.readings import Refreshes
from console.services.read.cluster_session import ClusterSession
from console.services.read.lag_history import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    LagHistory,
    bound,
    file_name,
    local_root,
    thin,
)

T0 = 1_700_000_000_000
ONLINE = (Client("c1", "10.0.0.1:1", "JAVA", 479),)


def read(
    group: str = "billing",
    lag_a: int = 100,
    lag_b: int | None = 20,
    *,
    unknown_b1: bool = True,
    **kw: object,
) -> GroupOffsets:
    """A group on topic orders, brokers a and b (b's queue 1 never committed), a retry queue;
    lag_b None: broker b did not answer."""
    qs = [QueueOffsets("orders", "broker-a", 0, 0, 1000, 1000 - lag_a)]
    if lag_b is not None:
        qs.append(QueueOffsets("orders", "broker-b", 0, 0, 500, 500 - lag_b))
        if unknown_b1:
            qs.append(QueueOffsets("orders", "broker-b", 1, 0, 70, None))
    qs.append(QueueOffsets(f"%RETRY%{group}", "broker-a", 0, 0, 9, 7))
    if lag_b is None:
        kw.setdefault("gaps", (Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "timed out"),))
    kw.setdefault("clients", ONLINE)
    return GroupOffsets(group, T0, tuple(qs), **kw)  # type: ignore[arg-type]


# ---- what a point keeps -------------------------------------------------------------------------


def test_a_point_keeps_lag_partial_clients_and_every_queue(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    h.record("prod", [read()], T0)
    h.record("prod", [read(lag_a=150, lag_b=None)], T0 + 5_000)
    whole, partial = h.series("prod", "billing").points
    assert (whole.at_ms, whole.total_lag, whole.partial, whole.online) == (T0, 120, False, 1)
    assert whole.committed() == {
        ("orders", "broker-a", 0): 900,
        ("orders", "broker-b", 0): 480,
        ("orders", "broker-b", 1): None,  # never committed: unknown, not 0
        ("%RETRY%billing", "broker-a", 0): 7,
    }
    assert (partial.total_lag, partial.partial, partial.missing) == (150, True, ("broker-b",))


def test_a_read_of_nothing_is_unknown_never_zero(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    never = GroupOffsets("shadow", T0, (QueueOffsets("orders", "broker-a", 0, 0, 10, None),))
    silent = replace(
        read("mute"),
        queues=(),
        answered=False,
        gaps=(Gap(Part.CLIENTS, "mute", Why.TIMEOUT, "timed out"),),
    )
    local = read("bcast", message_model=BROADCASTING)
    h.record("prod", [never, silent, local], T0)
    assert h.series("prod", "shadow").points[0].total_lag is None
    mute = h.series("prod", "mute").points[0]
    assert (mute.total_lag, mute.partial, mute.online) == (None, True, None)
    bcast = h.series("prod", "bcast").points[0]
    assert (bcast.total_lag, bcast.client_local) == (None, True)


def test_points_come_back_in_time_order_within_the_asked_range(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    for i in (3, 1, 2, 0):  # two consoles' clocks: appended out of order
        h.record("prod", [read(lag_a=i)], T0 + i * 10_000)
    assert [p.total_lag for p in h.series("prod", "billing").points] == [20, 21, 22, 23]
    inside = h.series("prod", "billing", since_ms=T0 + 10_000, until_ms=T0 + 20_000)
    assert [p.at_ms for p in inside.points] == [T0 + 10_000, T0 + 20_000]


def test_offsets_at_a_past_time(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    for i in range(3):
        h.record("prod", [read(lag_a=100 - i)], T0 + i * MINUTE_MS)
    at = h.offsets_at("prod", "billing", T0 + MINUTE_MS + 30_000)
    assert at is not None
    assert at.at_ms == T0 + MINUTE_MS
    assert at.committed()[("orders", "broker-a", 0)] == 901
    assert h.offsets_at("prod", "billing", T0 - 1) is None
    assert h.offsets_at("prod", "nobody", T0) is None


def test_refreshes_closer_than_a_second_are_one_point(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    for at in (T0, T0 + 400, T0 + 999, T0 + 1000):
        h.record("prod", [read()], at)
    assert [p.at_ms for p in h.series("prod", "billing").points] == [T0, T0 + 1000]


def test_names_become_one_path_component_and_back(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    cluster = "10.0.0.1:9876;10.0.0.2:9876"
    for group in ("a/b", "..", "GID|x%y", "订单"):
        h.record(cluster, [read(group)], T0)
    (base,) = (tmp_path / "lag").iterdir()
    assert base.name == file_name(cluster) == "10.0.0.1%3A9876%3B10.0.0.2%3A9876"
    assert all("/" not in p.name and not p.name.startswith(".") for p in base.glob("*.jsonl"))
    assert h.groups(cluster) == sorted(["a/b", "..", "GID|x%y", "订单"])
    assert h.series(cluster, "a/b").points[0].total_lag == 120


def test_a_remote_workspace_keeps_no_history(tmp_path: Path) -> None:
    assert local_root("s3://bucket/ws") is None
    assert local_root(f"file://{tmp_path}") == tmp_path
    assert local_root(str(tmp_path)) == tmp_path


# ---- lines cut short ----------------------------------------------------------------------------


def test_cut_and_corrupt_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    h.record("prod", [read()], T0)
    path = h.path("prod", "billing")
    with path.open("ab") as f:
        f.write(b'{"v":1,"t":"soon"}\n')  # edited by hand
        f.write(b"not json\n")
        f.write(b'{"v":1,"t":1700000009000,"lag":5,"on":1,"q":[["orders"')  # killed mid-write
    series = LagHistory(tmp_path).series("prod", "billing")
    assert ([p.at_ms for p in series.points], series.skipped) == ([T0], 3)

    h.record("prod", [read(lag_a=1)], T0 + 10_000)  # the next console starts a new line
    series = LagHistory(tmp_path).series("prod", "billing")
    assert [p.total_lag for p in series.points] == [120, 21]
    assert series.skipped == 3


def test_a_partial_point_never_reads_as_a_whole_one(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    h.record("prod", [read(lag_b=None)], T0)
    line = json.loads(h.path("prod", "billing").read_text())
    assert line["p"] == ["broker-b"]
    del line["p"]  # without its "p" the line would say complete: it must have one to be partial
    assert not LagPoint.from_json(line).partial
    assert h.series("prod", "billing").points[0].partial


def test_the_reader_follows_appends_and_replacements(tmp_path: Path) -> None:
    h = LagHistory(tmp_path)
    h.record("prod", [read()], T0)
    assert len(h.series("prod", "billing").points) == 1
    other = LagHistory(tmp_path)  # another console appends
    other.record("prod", [read(lag_a=1)], T0 + 5_000)
    assert len(h.series("prod", "billing").points) == 2
    other.compact(other.path("prod", "billing"), T0 + 10 * DAY_MS)  # ...and compacts it away
    assert h.series("prod", "billing").points == ()


# ---- thinning and bounds ------------------------------------------------------------------------


def point(at: int, lag: int = 5, *, partial: bool = False, queues: int = 4) -> LagPoint:
    return LagPoint(
        at,
        lag,
        missing=("broker-b",) if partial else (),
        online=1,
        queues=tuple(QueuePoint("orders", "broker-a", i, 100, 105) for i in range(queues)),
    )


def test_thinning_by_age() -> None:
    """Every point of the last hour, one a minute to a day, one per 15 minutes to a week."""
    now = T0 + 10 * DAY_MS
    points = [point(at) for at in range(now - 9 * DAY_MS, now + 1, 30_000)]
    kept = thin(points, now)
    ages = [now - p.at_ms for p in kept]
    assert min(ages) == 0
    assert max(ages) <= 7 * DAY_MS
    hour = [a for a in ages if a <= HOUR_MS]
    day = [a for a in ages if HOUR_MS < a <= DAY_MS]
    week = [a for a in ages if DAY_MS < a]
    assert len(hour) == HOUR_MS // 30_000 + 1
    assert 23 * 60 - 2 <= len(day) <= 23 * 60 + 2
    assert 6 * 96 - 2 <= len(week) <= 6 * 96 + 2


def test_thinning_keeps_a_complete_point_of_a_bucket_over_a_partial_one() -> None:
    now = T0 + DAY_MS
    base = now - 3 * HOUR_MS - (now - 3 * HOUR_MS) % MINUTE_MS  # the start of a minute
    partly = [point(base + 10_000, 9, partial=True), point(base + 20_000, 3)]
    assert [p.at_ms for p in thin([*partly, point(base + 40_000, 7, partial=True)], now)] == [
        base + 20_000
    ]
    only_partial = [point(base + 10_000, partial=True), point(base + 50_000, partial=True)]
    assert [p.partial for p in thin(only_partial, now)] == [True]


def test_bounds_drop_old_detail_before_old_points() -> None:
    points = [point(T0 + i * 1000, queues=20) for i in range(100)]
    size = sum(len(json.dumps(p.to_json(), separators=(",", ":"))) + 1 for p in points)
    some = bound(points, size * 2 // 3)
    assert len(some) == 100  # every point kept...
    assert not some[0].detailed
    assert some[-1].detailed
    assert [p.detailed for p in some] == sorted(p.detailed for p in some)
    few = bound(points, 2_000)
    assert 0 < len(few) < 100
    assert few[-1].at_ms == points[-1].at_ms  # the newest are the last to go


def test_a_file_stays_within_its_bound_as_refreshes_go_on(tmp_path: Path) -> None:
    h = LagHistory(tmp_path, max_bytes=20_000)
    for i in range(600):
        h.record("prod", [read(lag_a=i)], T0 + i * 5_000)
    path = h.path("prod", "billing")
    assert path.stat().st_size <= 20_000
    points = h.series("prod", "billing").points
    assert points[-1].total_lag == 599 + 20
    assert points[-1].detailed
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_file_too_old_is_thinned_the_first_time_a_console_writes_it(tmp_path: Path) -> None:
    LagHistory(tmp_path).record("prod", [read()], T0)
    later = T0 + 8 * DAY_MS
    LagHistory(tmp_path).record("prod", [read(lag_a=1)], later)
    assert [p.at_ms for p in LagHistory(tmp_path).series("prod", "billing").points] == [later]


# ---- two consoles -------------------------------------------------------------------------------

APPENDS = 300


def _append_many(root: str, first: int, step: int) -> None:
    h = LagHistory(Path(root), min_spacing_ms=0)
    for i in range(APPENDS):
        h.record("prod", [read(lag_a=first + i * step)], T0 + (first + i * step) * 10)


def _compact_often(root: str, times: int) -> None:
    h = LagHistory(Path(root))
    path = h.path("prod", "billing")
    for _ in range(times):
        while not path.exists():
            time.sleep(0.001)
        h.compact(path, T0)


@pytest.mark.parametrize("compacting", [False, True], ids=["appends", "appends-and-compaction"])
def test_two_consoles_appending_at_once_lose_and_cut_nothing(
    tmp_path: Path, compacting: bool
) -> None:
    ctx = multiprocessing.get_context("spawn")
    jobs = [
        ctx.Process(target=_append_many, args=(str(tmp_path), 0, 2)),
        ctx.Process(target=_append_many, args=(str(tmp_path), 1, 2)),
    ]
    if compacting:
        jobs.append(ctx.Process(target=_compact_often, args=(str(tmp_path), 100)))
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(timeout=120)
        assert job.exitcode == 0
    series = LagHistory(tmp_path).series("prod", "billing")
    assert series.skipped == 0
    assert sorted(p.total_lag or 0 for p in series.points) == [n + 20 for n in range(2 * APPENDS)]
    assert sorted(os.listdir(tmp_path / "lag" / "prod")) == [".lock", "billing.jsonl"]


def test_a_workspace_that_cannot_be_written_is_said_once_and_the_refresh_goes_on(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "ws"
    blocked.write_text("a file where the workspace should be")
    cluster = ClusterConfig("prod", ("h:9876",))
    source: Any = None  # nothing is read from the cluster here
    session = ClusterSession(cluster, source, Refreshes(), lag=LagHistory(blocked))
    problem = session.record_lag([read()], T0)
    assert problem is not None
    assert problem.startswith("lag history not kept:")
    assert session.record_lag([read()], T0 + 5_000) is None  # said once
    blocked.unlink()
    assert session.record_lag([read()], T0 + 10_000) is None
    assert session.lag_problem is None
    assert [p.at_ms for p in LagHistory(blocked).series("prod", "billing").points] == [T0 + 10_000]
