"""How long something took or lasts, as every screen and line of text says it: "12s", "3m05s",
"3h05m", "2d04h" (ages relative to a clock, spans of messages replayed or skipped)."""

from __future__ import annotations


def age_text(ms: int | None) -> str:
    """`ms` in the largest two units that fit; "-" when unknown."""
    if ms is None:
        return "-"
    s = max(ms, 0) // 1000
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
