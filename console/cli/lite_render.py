"""How `lag` and `groups` show a lite group (console.domain.lite): its parent topic, the lag its
brokers count, and its lite topics most behind, by count and by time."""

from __future__ import annotations

from typing import Any

from console.cli.render import table, timestamp
from console.domain.gaps import at_least
from console.domain.lite import LiteLag, LiteTopicLag

#: Lite topics `lag` lists by count and by time (`--json` has every one the brokers listed).
SHOWN = 10
#: Lite topics the NOTE of `groups` names.
NOTED = 2


def print_lite(lite: LiteLag, partial: bool) -> None:
    """`lag`'s lines for a lite group."""
    said = ", ".join(f"{b} {n}" for b, n in lite.counted) or "no broker"
    print(
        f"lite group of parent topic {lite.parent_topic}: lag {at_least(lite.total, partial)}, "
        f"as its brokers count it ({said})"
    )
    if not lite.by_count and not lite.by_time:
        print("no lite topic listed behind" + (" by the brokers that counted" if partial else ""))
        return
    for title, lags in (("MOST LAG BY COUNT", lite.by_count), ("MOST LAG BY TIME", lite.by_time)):
        if lags:
            table([title, "BROKER", "LAG", "OLDEST UNCONSUMED"], [_row(x) for x in lags[:SHOWN]])


def _row(lag: LiteTopicLag) -> list[Any]:
    since = timestamp(lag.oldest_unconsumed_ms) if lag.oldest_unconsumed_ms else None
    return [lag.lite_topic, lag.broker, lag.lag, since or "-"]


def lite_document(lite: LiteLag | None) -> dict[str, Any] | None:
    """`--json`'s `lite` of a group: null for any other group. `total_lag` is the group's own
    (a lower bound when it is partial)."""
    if lite is None:
        return None
    return {
        "parent_topic": lite.parent_topic,
        "counted_by": dict(lite.counted),
        "most_lag_by_count": [_lag_document(x) for x in lite.by_count],
        "most_lag_by_time": [_lag_document(x) for x in lite.by_time],
    }


def _lag_document(lag: LiteTopicLag) -> dict[str, Any]:
    return {
        "lite_topic": lag.lite_topic,
        "broker": lag.broker,
        "lag": lag.lag,
        "oldest_unconsumed_at": (
            timestamp(lag.oldest_unconsumed_ms) if lag.oldest_unconsumed_ms else None
        ),
    }


def lite_note(lite: LiteLag) -> str:
    """The NOTE of a lite group's row in `groups`: its parent topic and lite topics most
    behind."""
    behind = ", ".join(f"{x.lite_topic} {x.lag}" for x in lite.by_count[:NOTED])
    return f"lite, parent {lite.parent_topic}" + (f": most behind {behind}" if behind else "")
