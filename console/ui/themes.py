"""Themes are data: YAML files under `themes/` (the project's, then the user's config directory),
validated into `textual.theme.Theme` at start-up. A file that does not validate is reported once
and skipped; a configured theme that does not exist falls back to FALLBACK_THEME.

The project's themes live in the top-level `themes/` of the source tree. An install ships them
inside the package as `console.ui.project_themes` (see pyproject.toml); a checkout or an
editable install has no such directory and reads the source tree's.

    name: rmq-dark          # what `theme:` in the config and the palette's Theme command use
    dark: true
    primary: "#3d8fd1"      # any Textual colour: #rrggbb, rgb(), a name, or ansi_* for 16 colours
    error: "#e05d6f"        # also secondary, accent, warning, success, foreground, background,
                            # surface, panel, boost
    ansi: false             # true: emit the terminal's own palette colours (16-colour terminals)
    variables: {footer-key-foreground: "#ffd75f"}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from console.config import config_path
from console.errors import BadFile, read_text
from console.lined_yaml import load_lined

FALLBACK_THEME = "textual-dark"


def project_themes() -> Path:
    """The directory of the project's own theme files (see the module docstring)."""
    shipped = files("console.ui") / "project_themes"
    if isinstance(shipped, Path) and shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "themes"


PROJECT_THEMES = project_themes()

_COLOURS = {
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
}
_FIELDS = {f.name for f in fields(Theme)}
_ANSI_VARIABLES = {"ansi-background", "ansi-foreground"}


@dataclass(frozen=True, slots=True)
class LoadedThemes:
    themes: tuple[Theme, ...]
    problems: tuple[str, ...]


def theme_dirs() -> list[Path]:
    return [PROJECT_THEMES, config_path().parent / "themes"]


def load_themes(dirs: Sequence[Path]) -> LoadedThemes:
    themes: dict[str, Theme] = {}
    problems: list[str] = []
    for directory in dirs:
        if not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            try:
                theme = parse_theme(path)
            except ThemeError as exc:
                problems.append(str(exc))
                continue
            themes[theme.name] = theme  # a user's file overrides a project theme of that name
    return LoadedThemes(tuple(themes.values()), tuple(problems))


class ThemeError(Exception):
    pass


def parse_theme(path: Path) -> Theme:
    try:
        data = load_lined(read_text(path), path)
    except BadFile as exc:
        # Not YAML, not UTF-8, a directory, nested too deep to read: one line, the file named.
        where = path if exc.line is None else f"{path}:{exc.line}"
        raise ThemeError(f"{where}: cannot read: {exc.problem}") from None
    if not isinstance(data, dict):
        raise ThemeError(f"{path}: expected a mapping of theme settings")
    unknown = sorted(set(map(str, data)) - _FIELDS)
    if unknown:
        raise ThemeError(f"{path}: unknown setting(s) {', '.join(unknown)}")
    for key in ("name", "primary"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ThemeError(f"{path}: {key}: required, a non-empty string")
    for key in sorted(_COLOURS & set(data)):
        _colour(path, key, data[key])
    for key in ("dark", "ansi"):
        if key in data and not isinstance(data[key], bool):
            raise ThemeError(f"{path}: {key}: expected true or false, got {data[key]!r}")
    for key in ("luminosity_spread", "text_alpha"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], int | float)):
            raise ThemeError(f"{path}: {key}: expected a number, got {data[key]!r}")
    variables = data.get("variables", {}) or {}
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
    ):
        raise ThemeError(f"{path}: variables: expected a mapping of names to strings")
    missing = sorted(_ANSI_VARIABLES - set(variables)) if data.get("ansi") else []
    if missing:
        # Textual's own screen styles use these when a theme draws in the terminal's palette.
        raise ThemeError(f"{path}: variables: an ansi theme needs {', '.join(missing)}")
    data["variables"] = variables
    theme = Theme(**data)
    try:
        theme.to_color_system().generate()
    except (ColorParseError, ValueError, TypeError) as exc:
        raise ThemeError(f"{path}: {exc}") from None
    return theme


def _colour(path: Path, key: str, value: Any) -> None:
    if not isinstance(value, str):
        raise ThemeError(f"{path}: {key}: expected a colour string, got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{path}: {key}: {value!r} is not a colour") from None
