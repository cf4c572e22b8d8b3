"""How values read on an 80-column screen: compact numbers, ages, abbreviations.

Ages are relative to the console's clock ("12s", "3h05m") rather than wall-clock times: they
answer "since when" without a time zone, and a fixed clock makes them stable in tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.domain.durations import age_text
from console.domain.offsets import Consumption

if TYPE_CHECKING:  # the lag trend's modules stay off the command line's `lag`
    from console.domain.lag_trend import LagTrend

UNKNOWN = "unknown"

_MODELS = {"CLUSTERING": "clu", "BROADCASTING": "bcast"}
_CONSUME_TYPES = {"CONSUME_PASSIVELY": "push", "CONSUME_ACTIVELY": "pull", "CONSUME_POP": "pop"}


def compact(n: int | None) -> str:
    """1234 -> 1234, 12345 -> 12.3k, 1234567 -> 1.23M; None -> '?'."""
    if n is None:
        return "?"
    sign = "-" if n < 0 else ""
    v = abs(n)
    if v < 10_000:
        return f"{sign}{v}"
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= size:
            scaled = v / size
            digits = 2 if scaled < 10 else 1 if scaled < 100 else 0
            return f"{sign}{scaled:.{digits}f}{unit}"
    return f"{sign}{v}"


def offset(n: int | None) -> str:
    """Offsets in full (they are what an operator copies into a reset), unknown spelled out."""
    return UNKNOWN if n is None else str(n)


#: An age or a span ("12s", "3h05m"), as the command line's text says it.
age = age_text


def behind(ms: int | None, *, at_least: bool = False) -> str:
    """A time behind: '?' when unknown; over a partial read, a lower bound (the queues not read
    may be further behind)."""
    if ms is None:
        return "?"
    return ("≥" if at_least else "") + age(ms)


def since(now_ms: int, then_ms: int) -> str:
    """Age of an epoch-ms timestamp; '-' for 0, the broker's 'never'."""
    return "-" if then_ms <= 0 else age(now_ms - then_ms)


def trend(t: LagTrend | None) -> str:
    if t is None:
        return "-"
    rate = round(t.per_minute)
    if rate == 0:
        return "→0"
    arrow = "↑" if rate > 0 else "↓"
    return f"{arrow}{compact(abs(rate))}/m"


def model(name: str | None) -> str:
    return "-" if name is None else _MODELS.get(name, name.lower())


def consume_type(name: str | None) -> str:
    return "-" if name is None else _CONSUME_TYPES.get(name, name.lower())


def consumption(c: Consumption, broker_type: str | None = None) -> str:
    """Short: `push`, `pop`, `pop/grpc` (through a proxy), `pop/grpc+rem`; the broker's
    consume type when no client said more."""
    if not c.kinds:
        return consume_type(broker_type)
    kinds = "+".join(k.lower() for k in c.kinds)
    if c.grpc:
        return f"{kinds}/grpc" + ("+rem" if c.remoting else "")
    return kinds


def version(ordinal: int) -> str:
    """MQVersion ordinal as its name: 479 -> V5_3_3 (4.x and 5.x: ten patches per minor,
    each preceded by its SNAPSHOT); other values as the number."""
    base = 213  # V4_0_0
    if ordinal < base or (ordinal - base) % 2:
        return str(ordinal)
    n = (ordinal - base) // 2
    major, rest = (4, n) if n < 100 else (5, n - 100)
    if rest >= 100:
        return str(ordinal)
    return f"V{major}_{rest // 10}_{rest % 10}"
