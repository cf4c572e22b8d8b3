"""The sandbox's plans: ports, broker configs, JVM command lines, scenario, run directory."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from console.rocketmq.models import MessageModel
from console.sandbox import scenario as sc
from console.sandbox.cluster import BROKER_NAMES, OFFSET_STORES, ClusterSetup, broker_properties
from console.sandbox.consumers import ConsumerSpec
from console.sandbox.errors import StartupError
from console.sandbox.jvm import JDK_OPENS, JvmOptions, java_argv, jvm_env
from console.sandbox.ports import (
    broker_ports,
    default_ports,
    free_ports,
    port_free,
    reserve,
)
from console.sandbox.rundir import prepare, status
from console.sandbox.seed import _batch_slice


def test_default_ports_look_like_a_stock_install() -> None:
    ports = default_ports(BROKER_NAMES)
    assert ports.namesrv == 9876
    assert ports.brokers == {"broker-a": 10911, "broker-b": 10921}
    assert broker_ports(10911) == [10909, 10911, 10912]


def test_free_ports_do_not_overlap_and_are_free() -> None:
    ports = free_ports(BROKER_NAMES)
    every = ports.all_ports()
    assert len(every) == len(set(every)) == 7
    assert all(port_free(p) for p in every)
    assert all(p < 32768 for p in every)  # below the ephemeral range


def test_ports_chosen_by_one_process_are_not_chosen_again_until_it_exits() -> None:
    """Two test streams starting clusters at once drew the same random port: one broker found
    it bound by the other's a few seconds later."""
    mine = set(free_ports(BROKER_NAMES, random.Random(7)).all_ports())
    # The same random draws, in this process and in another one while this one lives.
    assert mine.isdisjoint(free_ports(BROKER_NAMES, random.Random(7)).all_ports())
    draw = (
        "import random, sys; from console.sandbox.ports import free_ports; "
        "print(*free_ports(sys.argv[1:], random.Random(7)).all_ports())"
    )
    other = subprocess.run(
        [sys.executable, "-c", draw, *BROKER_NAMES], capture_output=True, text=True, check=True
    )
    theirs = {int(p) for p in other.stdout.split()}
    assert len(theirs) == len(mine)
    assert mine.isdisjoint(theirs)
    # That process has exited: what it reserved is free to reserve again.
    assert reserve(sorted(theirs))


def test_port_in_use_is_not_free() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert not port_free(sock.getsockname()[1])


def test_broker_config_stays_on_loopback_and_in_the_run_dir(tmp_path: Path) -> None:
    config = ClusterSetup(tmp_path, default_ports(BROKER_NAMES))
    props = broker_properties(config, "broker-b")
    assert props["brokerName"] == "broker-b"
    assert props["listenPort"] == "10921"
    assert props["namesrvAddr"] == "127.0.0.1:9876"
    assert props["brokerIP1"] == props["brokerIP2"] == props["bindAddress"] == "127.0.0.1"
    assert props["storePathRootDir"] == str(tmp_path / "broker-b" / "store")
    assert int(props["mappedFileSizeConsumeQueue"]) % 20 == 0


def test_a_cluster_half_moved_to_rocksdb(tmp_path: Path) -> None:
    """One broker's offset store of its own (as a rolling migration leaves a cluster) over
    what every broker gets."""
    config = ClusterSetup(
        tmp_path,
        default_ports(BROKER_NAMES),
        broker_extra={"enableLmq": "true"},
        broker_extra_of={"broker-b": OFFSET_STORES["rocksdb"]},
    )
    a, b = (broker_properties(config, name) for name in ("broker-a", "broker-b"))
    assert "configManagerVersion" not in a
    assert b["configManagerVersion"] == "v2"
    assert a["enableLmq"] == b["enableLmq"] == "true"


def test_java_command_line(tmp_path: Path) -> None:
    argv = java_argv(
        Path("/jdk/bin/java"),
        "/cache/lib/*",
        "org.example.Main",
        ["-c", "x.conf"],
        options=JvmOptions(heap_mb=256, direct_mb=128, system_props={"a": "b"}),
        home=tmp_path,
    )
    assert argv[:3] == ["/jdk/bin/java", "-Xms256m", "-Xmx256m"]
    assert "-XX:MaxDirectMemorySize=128m" in argv
    assert f"-Duser.home={tmp_path}" in argv
    assert "-Da=b" in argv
    assert argv[-5:] == ["-cp", "/cache/lib/*", "org.example.Main", "-c", "x.conf"]
    opens = argv.index(JDK_OPENS[0])
    assert tuple(argv[opens : opens + len(JDK_OPENS)]) == JDK_OPENS
    assert "-XX:TieredStopAtLevel=1" in argv


def test_a_benchmark_cluster_runs_both_jit_compilers(tmp_path: Path) -> None:
    setup = ClusterSetup(tmp_path, free_ports(["broker-a"])).with_peak_jit()
    for options in (setup.namesrv_jvm, setup.broker_jvm, setup.proxy_jvm):
        argv = java_argv(Path("java"), "cp", "Main", [], options=options, home=tmp_path)
        assert not any(arg.startswith("-XX:TieredStopAtLevel") for arg in argv)
    assert setup.broker_jvm.heap_mb == ClusterSetup(tmp_path, setup.ports).broker_jvm.heap_mb


def test_jvm_env_scrubs_a_real_cluster_address(tmp_path: Path) -> None:
    env = jvm_env(tmp_path, {"PATH": "/bin", "NAMESRV_ADDR": "prod:9876", "ROCKETMQ_HOME": "/x"})
    assert env == {"PATH": "/bin", "ROCKETMQ_HOME": str(tmp_path)}


def test_consumer_arguments(tmp_path: Path) -> None:
    spec = ConsumerSpec(
        "fraud-audit",
        "fraud-audit",
        ("audit", "orders"),
        model=MessageModel.BROADCASTING,
        fail_every=3,
        max_reconsume=1,
    )
    args = spec.program_args("127.0.0.1:9876", tmp_path)
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs["--topic"] == "audit,orders"
    assert pairs["--model"] == "BROADCASTING"
    assert pairs["--fail-every"] == "3"
    assert pairs["--max-reconsume"] == "1"
    assert pairs["--offset-dir"] == str(tmp_path)
    assert "--orderly" not in pairs
    assert "--pull-threshold" not in pairs  # SandboxConsumer's own small default


def test_poison_consumer_arguments(tmp_path: Path) -> None:
    plan = sc.group_plan(sc.GROUP_POISON)
    spec = ConsumerSpec(
        plan.name,
        plan.name,
        (plan.topic,),
        orderly=plan.orderly,
        poison_key=plan.poison_key,
        pull_batch=plan.pull_batch,
        pull_threshold=plan.pull_threshold,
    )
    args = spec.program_args("127.0.0.1:9876", tmp_path)
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs["--orderly"] == "true"
    assert pairs["--poison-key"] == sc.POISON_KEY
    # The Java client's defaults: a stuck queue keeps pulling (and so hears of a skip) until a
    # thousand messages wait behind the poison one.
    assert (pairs["--pull-batch"], pairs["--pull-threshold"]) == ("32", "1000")


def test_scenario_names_are_unique_and_cover_every_case() -> None:
    names = [g.name for g in sc.GROUPS]
    assert len(names) == len(set(names))
    setups = {g.setup for g in sc.GROUPS}
    assert setups == set(sc.Setup)
    assert any(g.model is MessageModel.BROADCASTING for g in sc.GROUPS)
    assert {g.topic for g in sc.GROUPS} <= {t.name for t in sc.TOPICS}
    assert all(4 <= t.queues_per_broker <= 16 for t in sc.TOPICS)
    assert sc.growing_topics() <= {t.name for t in sc.TOPICS}
    assert {g.name for g in sc.live_groups()} >= {sc.GROUP_LIVE, sc.GROUP_POISON}


@pytest.mark.parametrize("total", [0, 1, 5, 6, 7, 120, 143])
def test_batches_send_every_message_once(total: int) -> None:
    covered: list[int] = []
    for batch in range(sc.BATCHES):
        first, count = _batch_slice(total, batch)
        covered += range(first, first + count)
    assert covered == list(range(total))


def test_queues_are_skewed() -> None:
    orders = sc.topic_plan(sc.TOPIC_ORDERS)
    counts = {orders.messages_in(b, q) for b in range(2) for q in range(orders.queues_per_broker)}
    assert len(counts) == 2 * orders.queues_per_broker


def test_prepare_wipes_an_old_sandbox_but_not_other_data(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    prepare(run_dir)
    (run_dir / "broker-a").mkdir()
    pidfile = prepare(run_dir)  # same owner: allowed, and starts fresh
    assert not (run_dir / "broker-a").exists()
    assert pidfile.live_owner() == os.getpid()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("...")
    with pytest.raises(StartupError, match="refusing to wipe"):
        prepare(precious)
    assert (precious / "thesis.tex").exists()


def test_status_of_nothing(tmp_path: Path) -> None:
    st = status(tmp_path / "none")
    assert not st.running
    assert st.processes == {}
    assert st.info is None


def test_a_slave_has_its_own_ports_store_and_id(tmp_path: Path) -> None:
    ports = default_ports(BROKER_NAMES, slaves=["broker-a"])
    assert ports.slaves == {"broker-a": 10931}
    free = free_ports(BROKER_NAMES, slaves=["broker-a"])
    assert len(free.all_ports()) == len(set(free.all_ports())) == 10
    config = ClusterSetup(tmp_path, ports)
    assert config.slave_of == {"broker-a-slave": "broker-a"}
    master = broker_properties(config, "broker-a")
    slave = broker_properties(config, "broker-a", slave=True)
    assert (master["brokerId"], "brokerRole" in master) == ("0", False)
    assert (slave["brokerId"], slave["brokerRole"]) == ("1", "SLAVE")
    assert slave["brokerName"] == master["brokerName"] == "broker-a"
    assert slave["listenPort"] == "10931"
    assert slave["storePathRootDir"] == str(tmp_path / "broker-a-slave" / "store")
    with pytest.raises(ValueError, match="broker-c"):
        free_ports(BROKER_NAMES, slaves=["broker-c"])
