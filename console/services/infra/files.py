"""Small file operations on any location a workspace can live: a local path or a URI that
pyarrow's file systems understand (file://, hdfs://, s3://, gs://; s3a:// is read as s3://).

Spark reads and writes the Parquet itself; these are for the JSON next to it and for cleaning up.
pyarrow is imported by the operations that use it, not with this module: a command that reads no
file (`lag`) and the console's first frame never load it.
What cannot be read (an unknown scheme, a directory where a file should be, bytes that are not
UTF-8 or not Parquet) is a BadFile naming the location, never an OSError or a decoder's error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from console.errors import BadFile, decode

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


def to_uri(location: str | os.PathLike[str]) -> str:
    """A URI Spark and pyarrow agree on: local paths become absolute file:// URIs."""
    text = os.fspath(location)
    if "://" in text:
        return text.rstrip("/")
    return "file://" + os.path.abspath(os.path.expanduser(text))


def join(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *(p.strip("/") for p in parts)])


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    # deferred: pyarrow (see the module's text)
    import pyarrow.fs as pafs

    scheme = urlparse(uri).scheme
    if scheme in _SCHEME_ALIASES:
        uri = _SCHEME_ALIASES[scheme] + uri[len(scheme) :]
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as exc:
        raise BadFile(uri, f"cannot be opened: {_without(str(exc), uri)}") from None
    return fs, str(path)


def exists(uri: str) -> bool:
    # deferred: pyarrow (see the module's text)
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)


def read_text(uri: str) -> str:
    fs, path = filesystem(uri)
    try:
        with fs.open_input_stream(path) as f:
            data = bytes(f.read())
    except FileNotFoundError:
        raise BadFile(uri, "no such file") from None
    except OSError as exc:
        raise BadFile(uri, f"cannot be read: {_without(str(exc), path)}") from None
    return decode(uri, data)


def read_parquet(uri: str, **options: Any) -> pa.Table:
    """A Parquet file or directory as a table (`options` go to pyarrow's read_table)."""
    # deferred: pyarrow (see the module's text)
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs, path = filesystem(uri)
    try:
        return pq.read_table(path, filesystem=fs, **options)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise BadFile(
            uri, f"not a Parquet file that can be read: {_without(str(exc), path)}"
        ) from None


def read_parquet_schema(uri: str) -> pa.Schema:
    """A Parquet file's schema (its columns and key-value metadata), from the footer."""
    # deferred: pyarrow (see the module's text)
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs, path = filesystem(uri)
    try:
        return pq.read_schema(path, filesystem=fs)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise BadFile(
            uri, f"not a Parquet file that can be read: {_without(str(exc), path)}"
        ) from None


def _without(message: str, location: str) -> str:
    """pyarrow's message without the location it repeats (the BadFile names it first), on one
    line of printable text (it may quote the file's own bytes)."""
    for form in (f" '{location}'", f": {location}", f" {location}"):
        message = message.replace(form, "")
    printable = "".join(c if c.isprintable() else " " for c in message)
    return " ".join(printable.split())


def write_text(uri: str, text: str) -> None:
    """Write whole or not at all: to a temporary name first, then moved into place."""
    fs, path = filesystem(uri)
    parent = path.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with fs.open_output_stream(tmp) as f:
        f.write(text.encode("utf-8"))
    fs.move(tmp, path)


def delete(uri: str) -> None:
    """Remove a file or a directory tree; absent is fine."""
    # deferred: pyarrow (see the module's text)
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        fs.delete_dir(path)
    elif info.type == pafs.FileType.File:
        fs.delete_file(path)


def listdir(uri: str) -> list[str]:
    """Base names directly under a directory; empty if it does not exist."""
    # deferred: pyarrow (see the module's text)
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
    return sorted(i.base_name for i in infos)


def parquet_rows(uri: str) -> int:
    """Rows of a Parquet file or directory, from the footers alone."""
    fs, path = filesystem(uri)
    # deferred: pandas, which pyarrow.dataset imports when it is installed (the Spark Connect
    # client needs it): a second more for any command that imports this before it needs it
    import pyarrow.dataset as pads

    return int(pads.dataset(path, filesystem=fs, format="parquet").count_rows())


def write_parquet(uri: str, table: pa.Table) -> None:
    # deferred: pyarrow (see the module's text)
    import pyarrow.parquet as pq

    fs, path = filesystem(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(table, path, filesystem=fs)
