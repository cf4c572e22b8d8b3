"""Screens opened by name, so a later feature adds a screen without editing the screens that
open it (the group screen's `reset` binding opens whatever is registered as "reset").

Targets are "module:Class" strings and are imported only when opened: the reset preview pulls in
the Spark planning code, which must stay off the console's start-up path.

A registered screen class is built with one argument, a `GroupContext`.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from textual.screen import Screen

from console.domain.offsets import GroupOffsets
from console.services.session import ClusterSession

SCREENS: dict[str, str] = {
    "reset": "console.ui.screens.preview:PreviewScreen",
}


@dataclass(frozen=True, slots=True)
class GroupContext:
    """What a screen opened from the group screen gets: the cluster and the group as shown."""

    session: ClusterSession
    group: str
    offsets: GroupOffsets | None


ScreenFactory = Callable[[GroupContext], Screen[Any]]


def register(name: str, target: str) -> None:
    SCREENS[name] = target


def available(name: str) -> bool:
    """Whether the screen's module exists, without importing it."""
    target = SCREENS.get(name)
    if target is None:
        return False
    module = target.partition(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


_BINDING_ID = re.compile(r"""Binding\([^)]*?\bid=["']([A-Za-z0-9_]+)["']""", re.DOTALL)


def declared_binding_ids() -> set[str]:
    """Binding ids of the registered screens, read from their source rather than imported (the
    config's keymap is checked at start-up, and these screens may pull in Spark)."""
    ids: set[str] = set()
    for target in SCREENS.values():
        try:
            spec = importlib.util.find_spec(target.partition(":")[0])
        except ModuleNotFoundError:
            continue
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        try:
            source = Path(spec.origin).read_text(encoding="utf-8")
        except OSError:
            continue
        ids.update(_BINDING_ID.findall(source))
    return ids


def load(name: str) -> ScreenFactory:
    module_name, _, attr = SCREENS[name].partition(":")
    screen = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(screen, type) and issubclass(screen, Screen)):
        raise TypeError(f"{SCREENS[name]} is not a Screen class")
    return cast(ScreenFactory, screen)
