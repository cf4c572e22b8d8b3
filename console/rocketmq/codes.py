"""Request and response codes of the remoting protocol (RequestCode.java, ResponseCode.java)."""

from __future__ import annotations

from enum import IntEnum


class RequestCode(IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    UPDATE_CONSUMER_OFFSET = 15
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_AND_CREATE_TOPIC = 17
    GET_BROKER_CONFIG = 26
    GET_ALL_CONSUMER_OFFSET = 43
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    GET_CONSUME_STATS = 208
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_CONSUME_TIME_SPAN = 303
    CLONE_GROUP_OFFSET = 314
    GET_ALL_MESSAGE_REQUEST_MODE = 402
    GET_BROKER_HA_STATUS = 907
    #: RocketMQ 5.5's lite topics (RIP-83): what the brokers count of a lite group (5.5.0+).
    GET_LITE_GROUP_INFO = 200078


# Requests that change what a broker stores. A client opened read-only refuses them all.
WRITE_CODES = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        25,  # UPDATE_BROKER_CONFIG
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        207,  # DELETE_SUBSCRIPTIONGROUP
        215,  # DELETE_TOPIC_IN_BROKER
        216,  # DELETE_TOPIC_IN_NAMESRV
        217,  # REGISTER_TOPIC_IN_NAMESRV
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.CLONE_GROUP_OFFSET,
        310,  # SEND_MESSAGE_V2
        320,  # SEND_BATCH_MESSAGE
    }
)


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    INVALID_PARAMETER = 29
    CONSUMER_NOT_ONLINE = 206
    BROADCAST_CONSUMPTION = 213
    GO_AWAY = 1500


# What a Python admin tells the server about itself: the server switches formats on `version`
# (standard-JSON routes from 401) and on `language` (CPP gets a different reset body).
LANGUAGE = "PYTHON"
CLIENT_VERSION = 479  # MQVersion.V5_3_3

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2
