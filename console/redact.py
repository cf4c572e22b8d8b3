"""Values that must never be printed, and the one filter every outward text passes through.

A secret is hidden the moment it is known (`hide`, called where a credential reference is
resolved); every error line, dialog text and report that leaves a process goes through
`redact_text`. This is the backstop behind the rule that no code formats a secret into a message:
if one ever slips through, what prints is the mask.

The set is per process: a process masks what it has resolved itself. The mask has a fixed
width, so a redacted text does not tell how long the secret is.
"""

from __future__ import annotations

import json
import threading

MASK = "********"

_hidden: set[str] = set()
_lock = threading.Lock()


def hide(value: str | None) -> None:
    """Never print `value` again in this process (nor its JSON- or repr-escaped form)."""
    if not value:
        return
    # A secret with quotes, backslashes or non-ASCII characters reaches a log escaped, in a
    # JSON message or an exception's repr: mask those spellings too.
    forms = {value, json.dumps(value)[1:-1], repr(value)[1:-1]}
    with _lock:
        _hidden.update(f for f in forms if f)


def redact_text(text: str) -> str:
    """`text` with every hidden value replaced by the mask."""
    with _lock:
        # Longest first: a secret that contains another is masked whole, not in pieces.
        values = sorted(_hidden, key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    return text
