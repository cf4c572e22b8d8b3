"""A read command collects young objects in large batches and never the whole heap on its own,
and gives the interpreter's schedule back when it is done, even when the read fails."""

from __future__ import annotations

import gc

import pytest

from console.cli.collection import NEVER, YOUNG, for_one_answer


def test_a_read_collects_in_batches_and_puts_the_schedule_back() -> None:
    before = gc.get_threshold()
    with for_one_answer():
        assert gc.get_threshold() == (YOUNG, before[1], NEVER)
    assert gc.get_threshold() == before


def test_the_schedule_comes_back_after_a_failed_read() -> None:
    before = gc.get_threshold()
    with pytest.raises(ConnectionError), for_one_answer():
        raise ConnectionError("no name server")
    assert gc.get_threshold() == before


def test_objects_kept_alive_are_not_collected_more_than_young_batches_need() -> None:
    """160,000 small containers alive at once, as a 10,000-group scan holds its queues: on the
    interpreter's schedule that is hundreds of young collections, inside a read a few."""

    def young_collections_while_building() -> int:
        start = gc.get_stats()[0]["collections"]
        kept = [{"queue": i} for i in range(160_000)]
        assert len(kept) == 160_000
        return int(gc.get_stats()[0]["collections"] - start)

    gc.collect()
    with for_one_answer():
        batched = young_collections_while_building()
    gc.collect()
    unbatched = young_collections_while_building()
    assert batched <= 160_000 // YOUNG + 1 < unbatched
