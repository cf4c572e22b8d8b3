"""YAML that remembers where each part of it stood: the one loader of the files operators write
(the config, reset specs, walkthroughs), so that every error names the file and the line.

`load_lined` parses safely (yaml.SafeLoader: no objects, no code) into plain data whose mappings
are `LinedMap` and whose lists are `LinedList`: dicts and lists that also know the line of the
node and of each key or item (1-based). `line_at` finds the line of a path into the document
(`("clusters", 0, "namesrv")`), or of the deepest part of it the document has.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from console import json_text
from console.errors import BadFile, yaml_failure

if TYPE_CHECKING:
    import yaml


class LinedMap(dict[Any, Any]):
    """A YAML mapping that remembers its line and the line of each of its keys."""

    line: int = 0
    key_lines: dict[Any, int]


class LinedList(list[Any]):
    """A YAML sequence that remembers its line and the line of each of its items."""

    line: int = 0
    item_lines: list[int]


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> LinedMap:
    out = LinedMap()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    loader.flatten_mapping(node)  # merge keys (<<) as the safe loader reads them
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            # deferred: yaml is loaded by now (this runs inside its loader)
            import yaml

            raise yaml.constructor.ConstructorError(
                problem="a key that is a list or a mapping", problem_mark=key_node.start_mark
            ) from None
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> LinedList:
    out = LinedList(loader.construct_object(item, deep=True) for item in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [item.start_mark.line + 1 for item in node.value]
    return out


@cache
def _loader() -> type[yaml.SafeLoader]:
    """The loader, made when a file is first read: a command that reads no file (a `lag`
    without a config file) pays neither for PyYAML nor for the C extension its package loads."""
    # deferred: yaml and its C extension, until a file is read
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)
    return Loader


def load_lined(text: str, source: str | os.PathLike[str]) -> Any:
    """The document in `text` (read from `source`), or BadFile naming `source` and the line of
    the YAML error."""
    # deferred: yaml and its C extension, until a file is read
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise yaml_failure(source, exc, text) from None
    except RecursionError:
        # The loader builds nested lists and mappings by recursion: a document nested a
        # thousand levels deep (`[[[[...`) is as unusable as one that is not YAML.
        depth, line = _deepest(text)
        raise BadFile(source, json_text.too_deep(depth), line=line) from None


def _deepest(text: str) -> tuple[int, int | None]:
    """How deep the lists and mappings of `text` nest, up to json_text.SHALLOW + 1, and the line
    where that depth is first reached, from the parser's events (a loop, not the loader's
    recursion; it slows down with the depth, so it stops there)."""
    # deferred: yaml and its C extension, until a file is read
    import yaml

    depth = most = 0
    line: int | None = None
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > most:
                    mark = event.start_mark
                    most, line = depth, (mark.line + 1 if mark is not None else None)
                    if most > json_text.SHALLOW:
                        break
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass  # the document ends there (cut short): as deep as it got
    return most, line


def line_at(doc: Any, path: Sequence[Any]) -> int | None:
    """The line of `path` in a document `load_lined` made: of a mapping's key, or a list's item;
    where the document lacks a part of the path, the line of the deepest part it has. None when
    `doc` holds no lines (it was not loaded here)."""
    line = doc.line if isinstance(doc, LinedMap | LinedList) else None
    node = doc
    for step in path:
        if isinstance(node, LinedMap) and step in node:
            line, node = node.key_lines[step], node[step]
        elif isinstance(node, LinedList) and isinstance(step, int) and 0 <= step < len(node):
            line, node = node.item_lines[step], node[step]
        else:
            break
    return line
