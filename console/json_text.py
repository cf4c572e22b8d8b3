"""JSON read from a file, whatever the file holds.

`json.loads` parses nested arrays and objects by recursion, so a document nested a thousand
levels deep (a line of `[[[[...`, edited in or made by a corruption) raises RecursionError: no
ValueError, it escaped every reader that turns bad content into a refusal of the file, and the
command crashed (exit 70). `loads` raises it as `TooDeep`, a `json.JSONDecodeError` like any
other bad document, placed where the nesting goes past reason, so each reader reports it as it
reports bad JSON: the file and the line. (console/lined_yaml.py does the same for YAML.)
"""

from __future__ import annotations

import json
import re
from typing import Any

#: A string (escapes included, closing quote optional: the document may be cut short), or a
#: bracket: what the nesting depth of a document is counted from.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


#: No file the console reads nests anywhere near this deep: a document too deep to read is
#: placed where it first goes deeper than this (the rest of it is not scanned).
SHALLOW = 100


class TooDeep(json.JSONDecodeError):
    """A document nested deeper than the reader can follow."""


def loads(text: str | bytes) -> Any:
    """`json.loads`, with a document nested too deep a `TooDeep` (a ValueError)."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        depth, at = deepest(doc)
        raise TooDeep(too_deep(depth), doc, at) from None


def too_deep(depth: int) -> str:
    """The problem with a document `deepest` found `depth` levels deep."""
    if depth > SHALLOW:
        return f"nested more than {SHALLOW} levels deep: too deep to read"
    return f"nested {depth} levels deep: too deep to read"


def deepest(doc: str) -> tuple[int, int]:
    """How deep the arrays and objects of `doc` nest, up to SHALLOW + 1, and where that depth is
    first reached (the index of its opening bracket)."""
    depth = most = at = 0
    for token in _TOKEN.finditer(doc):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > most:
                most, at = depth, token.start()
                if most > SHALLOW:
                    break
        elif char in "]}":
            depth -= 1
    return most, at
