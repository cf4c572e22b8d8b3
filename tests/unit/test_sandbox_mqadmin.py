# ruff: noqa: E501 - the fixtures are verbatim mqadmin 5.3.3 output, wider than 100 columns
"""Parsing the official mqadmin's output, checked against what the real 5.3.3 tools print.

The fixtures were captured from the sandbox; each keeps two of the logback status lines that
the tools JVM prints on stdout before the table.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from console.sandbox.errors import MqadminError
from console.sandbox.mqadmin_oracle import (
    command_error,
    parse_consumer_progress,
    parse_group_list,
    parse_lite_group_info,
    parse_lite_topic,
    parse_query_msg,
    parse_topic_status,
)

GROUPS = """\
03:47:59,708 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - This is logback-classic version 1.3.5-rocketmq
03:47:59,735 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - Could NOT find resource [rmq.logback-test.xml]

#Group                                                            #Count  #Version                 #Type  #Model          #TPS     #Diff Total
billing-service                                                   0       OFFLINE                                         0        557
risk-engine                                                       0       OFFLINE                                         84       349
analytics-etl                                                     0       OFFLINE                                         0        560
notifications                                                     1       V5_3_3                   PUSH   BROADCASTING    0        0
shipping-service                                                  1       V5_3_3                   PUSH   CLUSTERING      61       592
fraud-audit                                                       0       OFFLINE                                         22       36
inventory-sync                                                    0       OFFLINE                                         0        0
"""

PROGRESS_RETRY = """\
03:48:05,164 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - This is logback-classic version 1.3.5-rocketmq
03:48:05,493 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - Could NOT find resource [rmq.logback-test.xml]

#Topic                                                            #Broker Name                      #QID  #Broker Offset        #Consumer Offset      #Diff                #Inflight           #LastTime
%RETRY%risk-engine                                                broker-b                          0     386                   37                    349                  211                  2026-11-22 03:47:41
payments                                                          broker-a                          0     60                    60                    0                    0                    2026-11-22 03:47:31
payments                                                          broker-a                          1     68                    68                    0                    0                    2026-11-22 03:47:31
payments                                                          broker-a                          2     76                    76                    0                    0                    2026-11-22 03:47:31
payments                                                          broker-a                          3     84                    84                    0                    0                    2026-11-22 03:47:31

Consume TPS: 56.27
Consume Diff Total: 349
Consume Inflight Total: 211
"""

PROGRESS_PARTIAL = """\
03:48:10,993 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - This is logback-classic version 1.3.5-rocketmq
03:48:11,119 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - Could NOT find resource [rmq.logback-test.xml]

#Topic                                                            #Broker Name                      #QID  #Broker Offset        #Consumer Offset      #Diff                #Inflight           #LastTime
payments                                                          broker-a                          0     60                    30                    30                   0                    2026-11-22 03:47:23
payments                                                          broker-a                          1     68                    34                    34                   0                    2026-11-22 03:47:23
payments                                                          broker-a                          2     76                    38                    38                   0                    2026-11-22 03:47:23
payments                                                          broker-a                          3     84                    42                    42                   0                    2026-11-22 03:47:23
payments                                                          broker-a                          4     92                    0                     92                   0                    N/A
payments                                                          broker-a                          5     100                   0                     100                  0                    N/A
payments                                                          broker-a                          6     108                   0                     108                  0                    N/A
payments                                                          broker-a                          7     116                   0                     116                  0                    N/A

Consume TPS: 0.00
Consume Diff Total: 560
Consume Inflight Total: 0
"""

TOPIC_STATUS = """\
03:48:16,749 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - This is logback-classic version 1.3.5-rocketmq
03:48:16,778 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - Could NOT find resource [rmq.logback-test.xml]

#Broker Name                      #QID  #Min Offset           #Max Offset             #Last Updated
broker-a                          0     0                     40                      2026-11-22 03:47:31,880
broker-a                          1     0                     46                      2026-11-22 03:47:31,885
broker-a                          2     0                     52                      2026-11-22 03:47:31,890

Topic Put TPS: 0.0
"""

BROADCAST_STDERR = """\
org.apache.rocketmq.tools.command.SubCommandException: ConsumerProgressSubCommand command failed
	at org.apache.rocketmq.tools.command.consumer.ConsumerProgressSubCommand.execute(ConsumerProgressSubCommand.java:269)
	at org.apache.rocketmq.tools.command.MQAdminStartup.main0(MQAdminStartup.java:178)
	at org.apache.rocketmq.tools.command.MQAdminStartup.main(MQAdminStartup.java:128)
Caused by: org.apache.rocketmq.client.exception.MQClientException: CODE: 213  DESC: Not found the consumer group consume stats, because return offset table is empty, the consumer is under the broadcast mode
"""


def local_ms(text: str, fmt: str) -> int:
    return int(datetime.strptime(text, fmt).timestamp() * 1000)


def test_group_list_online_and_offline() -> None:
    groups = {g.group: g for g in parse_group_list(GROUPS)}
    assert len(groups) == 7
    live = groups["shipping-service"]
    assert (live.count, live.version, live.consume_type, live.message_model) == (
        1,
        "V5_3_3",
        "PUSH",
        "CLUSTERING",
    )
    assert (live.tps, live.diff_total) == (61, 592)
    assert groups["notifications"].message_model == "BROADCASTING"
    offline = groups["billing-service"]
    assert (offline.count, offline.version) == (0, "OFFLINE")
    assert offline.consume_type is None
    assert offline.message_model is None
    assert offline.diff_total == 557


def test_consumer_progress_rows_and_totals() -> None:
    progress = parse_consumer_progress(PROGRESS_RETRY)
    assert len(progress.rows) == 5
    retry = progress.row("%RETRY%risk-engine", "broker-b", 0)
    assert (retry.broker_offset, retry.consumer_offset, retry.diff, retry.inflight) == (
        386,
        37,
        349,
        211,
    )
    assert retry.last_time_ms == local_ms("2026-11-22 03:47:41", "%Y-%m-%d %H:%M:%S")
    assert progress.consume_tps == pytest.approx(56.27)
    assert progress.diff_total == 349
    assert progress.inflight_total == 211
    with pytest.raises(KeyError):
        progress.row("payments", "broker-b", 0)


def test_uncommitted_queues_show_zero_and_no_time() -> None:
    """mqadmin prints 0 and N/A where nothing is committed; the caller must know that."""
    rows = parse_consumer_progress(PROGRESS_PARTIAL).rows
    committed = [r for r in rows if r.queue_id < 4]
    unknown = [r for r in rows if r.queue_id >= 4]
    assert all(r.consumer_offset > 0 and r.last_time_ms is not None for r in committed)
    assert all(r.consumer_offset == 0 and r.last_time_ms is None for r in unknown)
    assert all(r.diff == r.broker_offset for r in unknown)


def test_topic_status() -> None:
    status = parse_topic_status(TOPIC_STATUS)
    assert [(r.broker_name, r.queue_id, r.min_offset, r.max_offset) for r in status.rows] == [
        ("broker-a", 0, 0, 40),
        ("broker-a", 1, 0, 46),
        ("broker-a", 2, 0, 52),
    ]
    first = status.rows[0].last_updated_ms
    assert first == local_ms("2026-11-22 03:47:31,880", "%Y-%m-%d %H:%M:%S,%f")
    assert status.put_tps == 0.0


def test_empty_queue_has_no_last_updated() -> None:
    text = (
        "#Broker Name                      #QID  #Min Offset           #Max Offset             #Last Updated\n"
        "broker-a                          0     0                     0                       \n"
        "\nTopic Put TPS: 0.0\n"
    )
    (row,) = parse_topic_status(text).rows
    assert row.max_offset == 0
    assert row.last_updated_ms is None


def test_failure_is_found_although_exit_code_is_zero() -> None:
    problem = command_error("", BROADCAST_STDERR)
    assert problem is not None
    assert problem.startswith("org.apache.rocketmq.client.exception.MQClientException: CODE: 213")
    assert command_error(PROGRESS_PARTIAL, "") is None


def test_missing_table_is_an_error() -> None:
    with pytest.raises(MqadminError, match="#Topic"):
        parse_consumer_progress("03:48:05,164 |-INFO in logback\n")


QUERY_MSG = """\
11:31:17,250 |-INFO in org.apache.rocketmq.common.logging.JoranConfiguratorExt@9225652 - Registering current configuration as safe fallback point

OffsetID:            7F000001000060E6000000000000AECF
Topic:               payments
Tags:                [paid]
Keys:                [payments-broker-a-2-5]
Queue ID:            2
Queue Offset:        5
CommitLog Offset:    44751
Reconsume Times:     0
Born Timestamp:      2026-11-25 11:30:46,789
Store Timestamp:     2026-11-25 11:30:46,790
Born Host:           127.0.0.1:59642
Store Host:          127.0.0.1:24806
System Flag:         0
Properties:          {MSG_REGION=DefaultRegion, UNIQ_KEY=FD000000000000000000000000000002551A4E0E2F2A7E110D860080, CLUSTER=SandboxCluster, MIN_OFFSET=0, TAGS=paid, KEYS=payments-broker-a-2-5, WAIT=true, TRACE_ON=true, MAX_OFFSET=76}
Message Body Path:   /tmp/rocketmq/msgbodys/FD000000000000000000000000000002551A4E0E2F2A7E110D860080
"""


def test_query_msg_by_offset() -> None:
    m = parse_query_msg(QUERY_MSG)
    assert m is not None
    assert m.offset_id == "7F000001000060E6000000000000AECF"
    assert (m.topic, m.tags, m.keys) == ("payments", "paid", ("payments-broker-a-2-5",))
    assert (m.queue_id, m.queue_offset, m.commit_log_offset, m.reconsume_times) == (2, 5, 44751, 0)
    local = datetime(2026, 11, 25, 11, 30, 46, 790_000).timestamp()
    assert m.store_ms == int(local * 1000)
    assert m.store_ms - m.born_ms == 1
    assert (m.born_host, m.store_host, m.sys_flag) == ("127.0.0.1:59642", "127.0.0.1:24806", 0)
    assert m.properties["UNIQ_KEY"] == "FD000000000000000000000000000002551A4E0E2F2A7E110D860080"
    assert m.properties["MAX_OFFSET"] == "76"
    assert len(m.properties) == 9
    assert m.body_path.startswith("/tmp/rocketmq/msgbodys/")
    assert m.body is None  # read from the file by Mqadmin.query_msg_by_offset
    untagged = QUERY_MSG.replace("[paid]", "[null]").replace("[payments-broker-a-2-5]", "[null]")
    m2 = parse_query_msg(untagged)
    assert m2 is not None
    assert (m2.tags, m2.keys) == (None, ())
    # An offset without a message: mqadmin prints only its logging lines.
    assert parse_query_msg(QUERY_MSG.split("OffsetID")[0]) is None
    with pytest.raises(MqadminError, match="unexpected queryMsgByOffset output"):
        parse_query_msg(QUERY_MSG.replace("Queue ID:            2", "Queue ID:            x"))


#: `getLiteGroupInfo -p chats -g chat-agents` of the 5.5.0 tools, against the lite sandbox.
LITE_GROUP = """\
16:13:21,004 |-INFO in org.apache.rocketmq.common.logging.JoranConfiguratorExt@19bb07ed - Registering current configuration as safe fallback point

Lite Group Info: [chat-agents] [chats]
Total Lag Count: 10
Min Unconsumed Timestamp: 1795882310197 (1 s ago)

------TopK by lag count-----
NO     Lite Topic                               Lag Count    UnconsumedTimestamp           
1      session-3                                7            2026-11-28 15:57:45,899       
2      session-4                                3            2026-11-28 15:57:46,034       

------TopK by lag time------
NO     Lite Topic                               Lag Count    UnconsumedTimestamp           
"""

#: ... with `-l session-3`: the broker that holds it, and `-` for the other.
LITE_TOPIC = """\
16:13:25,117 |-INFO in org.apache.rocketmq.common.logging.JoranConfiguratorExt@19bb07ed - Registering current configuration as safe fallback point

Lite Group Info: [chat-agents] [chats]
#Broker Name                                       #BrokerOffset    #ConsumeOffset   #LagCount        #LastUpdate                   
broker-b                                           12               5                7                2026-11-28 15:57:45,019       
broker-a                                           -                -                -                -                             
Total Lag Count: 7
Min Unconsumed Timestamp: 1795881465899 (875 s ago)

"""


def test_get_lite_group_info() -> None:
    report = parse_lite_group_info(LITE_GROUP)
    assert report.total_lag == 10
    assert [(x.lite_topic, x.lag) for x in report.by_count] == [("session-3", 7), ("session-4", 3)]
    first = datetime(2026, 11, 28, 15, 57, 45, 899_000).timestamp() * 1000
    assert report.by_count[0].unconsumed_ms == int(first)
    assert report.by_time == []
    assert report.failed == []
    broken = LITE_GROUP.replace("Total Lag Count: 10", "[broker-b] error.\nTotal Lag Count: 3")
    assert parse_lite_group_info(broken).failed == ["broker-b"]


def test_get_lite_group_info_of_one_lite_topic() -> None:
    rows = parse_lite_topic(LITE_TOPIC)
    assert [(r.broker_name, r.broker_offset, r.consumer_offset, r.lag) for r in rows] == [
        ("broker-b", 12, 5, 7),
        ("broker-a", None, None, None),
    ]
