"""A broadcasting client's offsets.json: read as the Java client writes it, rewritten as it
reads it, the backup used as the client uses it, and the directories the config names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from console.config import DEFAULT_CLIENT_OFFSETS, Config, ConfigError, load_config
from console.domain.client_offsets import (
    ClientOffsetsError,
    parse_offsets_json,
    render_offsets_json,
)
from console.services.read.client_offset_files import find_store_files, read_store_file

# Written by RocketMQ 5.3.3's LocalFileOffsetStore for the sandbox's `notifications` group.
JAVA_WRITTEN = (
    '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":2,\n'
    '\t\t\t"topic":"orders"\n\t\t}:40,{\n\t\t\t"brokerName":"broker-b",\n\t\t\t"queueId":3,\n'
    '\t\t\t"topic":"orders"\n\t\t}:19,{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n'
    '\t\t\t"topic":"orders"\n\t\t}:44\n\t}\n}'
)


def test_the_java_clients_file_is_read() -> None:
    assert parse_offsets_json(JAVA_WRITTEN) == {
        ("orders", "broker-a", 2): 40,
        ("orders", "broker-b", 3): 19,
        ("orders", "broker-a", 0): 44,
    }


def test_a_rewritten_file_reads_back_and_looks_like_the_clients() -> None:
    offsets = {("orders", "broker-a", 0): 44, ("orders", "broker-a", 2): 40, ('t"x', "b", 7): 0}
    text = render_offsets_json(offsets)
    assert parse_offsets_json(text) == offsets
    # The same layout the client writes: tabs, queue objects as keys, fields in order.
    one = render_offsets_json({("orders", "broker-a", 0): 44})
    assert one == (
        '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n'
        '\t\t\t"topic":"orders"\n\t\t}:44\n\t}\n}'
    )
    assert parse_offsets_json(render_offsets_json({})) == {}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1, 2]", 'no "offsetTable"'),
        ('{"offsetTable": {"orders": 3}}', "is not a message queue"),
        ('{"offsetTable": {{"topic":"t","brokerName":"b"}: 3}}', "is not a message queue"),
        ('{"offsetTable": {{"topic":"t","brokerName":"b","queueId":1}: -4}}', "is not one"),
        ('{"offsetTable": {{"topic":"t","brokerName":"b","queueId":1}: "4"}}', "is not one"),
        ('{"offsetTable": {', "not an offsets file"),
    ],
)
def test_what_is_not_an_offsets_file_says_why(text: str, words: str) -> None:
    with pytest.raises(ClientOffsetsError, match=words):
        parse_offsets_json(text)


def test_the_backup_stands_in_for_an_empty_or_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    backup = tmp_path / "offsets.json.bak"
    backup.write_text(JAVA_WRITTEN)
    for broken in ("", '{"offsetTable":{{'):
        path.write_text(broken)
        got = read_store_file("c1", path)
        assert (got.path, got.error) == (backup, None)
        assert got.offsets[("orders", "broker-b", 3)] == 19
    path.write_text(render_offsets_json({("orders", "broker-a", 0): 7}))
    got = read_store_file("c1", path)
    assert (got.path, got.offsets) == (path, {("orders", "broker-a", 0): 7})
    # Neither readable: no offsets, and the reason for each.
    path.write_text("x")
    backup.write_text("")
    got = read_store_file("c1", path)
    assert got.offsets == {}
    assert got.error is not None
    assert "offsets.json: not an offsets file" in got.error
    assert "offsets.json.bak: empty" in got.error


def test_stores_are_found_per_client_for_the_group_only(tmp_path: Path) -> None:
    root = tmp_path / "offsets"
    for client, group in [
        ("10.0.0.1@DEFAULT", "notify"),
        ("10.0.0.2@DEFAULT", "notify"),
        ("10.0.0.2@DEFAULT", "other"),
    ]:
        folder = root / client / group
        folder.mkdir(parents=True)
        (folder / "offsets.json").write_text(render_offsets_json({("t", "b", 0): 5}))
    (root / "stray-file").write_text("")
    found = find_store_files([str(root), str(tmp_path / "absent")], "notify")
    assert [f.client_id for f in found] == ["10.0.0.1@DEFAULT", "10.0.0.2@DEFAULT"]
    assert find_store_files([str(root)], "nobody") == []


def test_the_directories_come_from_the_config_or_the_environment(tmp_path: Path) -> None:
    assert Config().client_offset_dirs == (DEFAULT_CLIENT_OFFSETS,) == ("~/.rocketmq_offsets",)
    path = tmp_path / "config.yaml"
    path.write_text("client_offset_dirs: [/srv/a, /srv/b]\n")
    assert load_config(path, environ={}).client_offset_dirs == ("/srv/a", "/srv/b")
    env = {"RMQ_CONSOLE_CLIENT_OFFSETS": os.pathsep.join(["/x", "/y"])}
    assert load_config(path, environ=env).client_offset_dirs == ("/x", "/y")
    path.write_text("client_offset_dirs: [/srv/a, 3]\n")
    with pytest.raises(ConfigError, match=r"config.yaml:1: client_offset_dirs.1"):
        load_config(path, environ={})
