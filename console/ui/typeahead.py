"""Keys typed ahead of a focus change go where the focus went, in the order they were typed.

Textual hands each key to the widget focused when the app reads the key, and checks the bindings
when the key comes back up to the app. Keys that arrive in one read (an SSH session batches
keystrokes, so do a paste and tmux send-keys) are all handed to the widget focused before the
first of them ran: "/" and a name open the filter box and then feed the name to the table, which
passes it up unused. The app notes where each key went; a key that comes back up from a widget
that has lost the focus since is posted again, to go where the focus is now.

A key posted again goes to the back of the app's queue, behind keys typed after it and already
waiting there: "bill" sent to a button, then "ing", gave "ingbill" in the name box the focus had
moved to. So while keys posted again are on their way, every new key is posted again behind them.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary, WeakSet

from textual import events
from textual.widget import Widget


class TypeAhead:
    """Where the app handed each key, and the keys it posted again that it has not read yet."""

    def __init__(self) -> None:
        self._handed_to: WeakKeyDictionary[events.Key, Widget] = WeakKeyDictionary()
        self._replays: WeakSet[events.Key] = WeakSet()
        self._waiting = 0  # replays posted and not yet read back by the app

    def arrived(self, event: events.Key, focused: Widget | None) -> events.Key | None:
        """A key the app reads (not one coming back up): None when the app hands it on to
        `focused` now, else the copy to post again behind the replays still waiting."""
        if event in self._replays:
            self._replays.discard(event)
            self._waiting -= 1
        elif self._waiting:
            return self._replay(event)
        if focused is not None:
            self._handed_to[event] = focused
        return None

    def came_back(self, event: events.Key, focused: Widget | None) -> events.Key | None:
        """A key coming back up to the app: the copy to post again when the widget it was handed
        to has lost the focus since (and another one has it); None for the app's own handling."""
        handed = self._handed_to.get(event)
        if handed is None or focused is None or handed is focused:
            return None
        return self._replay(event)

    def _replay(self, event: events.Key) -> events.Key:
        copy = events.Key(event.key, event.character)
        self._replays.add(copy)
        self._waiting += 1
        return copy
