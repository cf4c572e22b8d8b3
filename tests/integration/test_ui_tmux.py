"""The console in a real terminal (tmux, 80x24) against the sandbox, driven by keys only.

It opens a seeded group the way an operator would (groups, filter, enter), reads the committed
offsets and lag off the captured screen, and compares them with `mqadmin consumerProgress`.
The group is `analytics-etl`: static after the seed, committed on some queues only, so the
screen must say "unknown" exactly where mqadmin prints a consumer offset of 0. And an ACL broker
refusing a wrong secret is named as such, readable at 80 columns.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

from console.sandbox import scenario
from console.sandbox.acl import AclSandbox
from tests.connect import ConnectServer
from tests.support.terminal import Tmux

GROUP = scenario.GROUP_PARTIAL

Key = tuple[str, str, int]


def queue_rows(screen: str) -> dict[Key, tuple[str, str]]:
    """(topic, broker, queue id) -> (committed, lag) from the queue table on screen."""
    rows: dict[Key, tuple[str, str]] = {}
    for line in screen.splitlines():
        fields = line.split()
        # TOPIC BROKER Q MIN MAX COMMITTED INFL LAG ...
        if len(fields) >= 8 and fields[1].startswith("broker-") and fields[2].isdigit():
            rows[(fields[0], fields[1], int(fields[2]))] = (fields[5], fields[7])
    return rows


def test_keys_only_open_a_group_and_read_its_offsets(
    sandbox: Any, tmux: Tmux, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\n")
    tmux.start_console(config, "--namesrv", sandbox.namesrv_addr)
    tmux.wait_for(lambda s: "broker-a" in s and "broker-b" in s, "the cluster overview")
    tmux.keys("g")
    tmux.wait_for(lambda s: GROUP in s and "refreshed" in s, "the group list")
    tmux.keys("/")
    tmux.text(GROUP)
    tmux.wait_for(lambda s: re.search(r"groups · 1/\d+", s) is not None, "the filtered list")
    tmux.keys("Enter", "Enter")  # leave the filter box, open the group
    screen = tmux.wait_for(
        lambda s: f"› {GROUP}" in s and "refreshed" in s and len(queue_rows(s)) > 0,
        "the group's queues",
    )
    ours = queue_rows(screen)
    total = int(re.search(r"queues · (\d+)/", screen).group(1))  # type: ignore[union-attr]
    assert len(ours) == total, f"all {total} queues fit on an 80x24 screen:\n{screen}"

    progress = asyncio.run(sandbox.mqadmin.consumer_progress(GROUP))
    theirs = {(r.topic, r.broker_name, r.queue_id): r for r in progress.rows}
    assert set(ours) == set(theirs)
    unknown = 0
    for key, (committed, lag) in ours.items():
        row = theirs[key]
        if committed == "unknown":
            # mqadmin prints 0 for "never committed"; the console never does.
            unknown += 1
            assert lag == "unknown", key
            assert row.consumer_offset == 0, key
        else:
            assert int(committed) == row.consumer_offset, key
            assert int(lag) == row.diff, key
    assert 0 < unknown < len(ours), "the group is committed on some queues only"
    tmux.keys("q")


def test_the_reset_form_shows_what_is_typed_while_typing(
    sandbox: Any, tmux: Tmux, warm_cli: ConnectServer, tmp_path: Path
) -> None:
    """The preview's one-line boxes at 80x24: what is typed shows while the box has focus (a
    focused box once drew a tall border's top edge, ▔▔▔, over its text). The screen warms
    Spark as it opens: the session's Connect server, found as after `spark up`."""
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\nspark_master: local[1]\n")
    tmux.start_console(config, "--namesrv", sandbox.namesrv_addr, spark_cache=warm_cli.cache)
    group = scenario.GROUP_OFFLINE
    tmux.wait_for(lambda s: "broker-a" in s and "broker-b" in s, "the cluster overview")
    tmux.keys("g")
    tmux.wait_for(lambda s: group in s and "refreshed" in s, "the group list")
    tmux.keys("/")
    tmux.text(group)
    tmux.wait_for(lambda s: re.search(r"groups · 1/\d+", s) is not None, "the filtered list")
    tmux.keys("Enter", "Enter")
    tmux.wait_for(lambda s: f"› {group}" in s and "refreshed" in s, "the group")
    tmux.keys("R")
    tmux.wait_for(lambda s: "choose a strategy" in s, "the reset preview")
    tmux.keys("BTab", "Enter")  # the strategy list
    tmux.wait_for(lambda s: "by-duration" in s, "the strategy list")
    tmux.keys("Down", "Enter")  # to-timestamp -> by-duration
    tmux.wait_for(
        lambda s: "by-duration" in form_lines(s)[0] and "topics: all" in form_lines(s)[1],
        "by-duration chosen and the list closed",
    )
    tmux.keys("Tab")  # into the value box, and type at once
    tmux.text("10m")
    screen = tmux.wait_for(lambda s: "10m" in form_lines(s)[0], "10m in the value box")
    for line in form_lines(screen):
        assert not set("▔▁▊▎") & set(line), screen
    tmux.keys("q")


def form_lines(screen: str) -> list[str]:
    """The preview's two form lines: strategy, value and Preview; then the scope."""
    lines = screen.splitlines()
    return lines[2:4] if len(lines) >= 4 else ["", ""]


def test_a_refused_signature_is_named_and_readable_at_80x24(
    acl_cluster: AclSandbox, tmux: Tmux, tmp_path: Path
) -> None:
    """An ACL broker and a wrong secret: the overview says the broker refused the signature
    for the access key (not that it is down), in full, wrapped to 80 columns; the secret, right
    or wrong, is nowhere on the screen."""
    user = acl_cluster.user.username
    wrong = "not-the-secret-" + uuid.uuid4().hex[:8]
    ak, sk = tmp_path / "ak", tmp_path / "sk"
    ak.write_text(user + "\n")
    sk.write_text(wrong + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {tmp_path / 'ws'}\n"
        "clusters:\n"
        "  - name: acl\n"
        f"    namesrv: [{acl_cluster.namesrv_addr}]\n"
        "    credentials:\n"
        f"      access_key: file:{ak}\n"
        f"      secret_key: file:{sk}\n"
    )
    tmux.start_console(config, "--cluster", "acl")
    (broker,) = acl_cluster.broker_addrs
    screen = tmux.wait_for(
        lambda s: "AUTH REFUSED" in s and "check the secret" in s, "the refused signature"
    )
    print(screen)  # the 80x24 screen, for the record
    lines = screen.splitlines()
    assert all(len(line) <= 80 for line in lines)
    text = " ".join(" ".join(line.split()) for line in lines)
    assert f"refused the signature for access key {user}: check the secret" in text
    assert f"{broker}: {acl_cluster.broker_addr} refused the signature" in text
    assert f"AUTH REFUSED: {broker}" in text
    assert re.search(rf"^ {broker} .* AUTH\b", screen, re.MULTILINE), screen
    assert "DOWN" not in screen
    assert wrong not in screen
    assert acl_cluster.user.password not in screen
    tmux.keys("q")
