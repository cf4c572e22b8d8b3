"""Keys typed ahead of a focus change go where the focus went.

Textual hands each key to the widget focused when the app reads the key, and checks the bindings
when the key comes back up to the app. Keys that arrive in one read (an SSH session batches
keystrokes, so do a paste and tmux send-keys) are all handed to the widget focused before the
first of them ran: "/" and a name open the filter box and then feed the name to the table, which
passes it up unused. The app notes where each key went; a key that comes back up from a widget
that has lost the focus since is posted again, to go where the focus is now, in typing order.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from textual import events
from textual.widget import Widget

_handed_to: WeakKeyDictionary[events.Key, Widget] = WeakKeyDictionary()


def note_handed(event: events.Key, widget: Widget | None) -> None:
    if widget is not None:
        _handed_to[event] = widget


def focus_moved_since(event: events.Key, focused: Widget | None) -> bool:
    """Whether `event` went to a widget that no longer has the focus (and another one has)."""
    handed = _handed_to.get(event)
    return handed is not None and focused is not None and handed is not focused
