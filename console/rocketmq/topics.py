"""How RocketMQ names the topics that belong to a consumer group (MixAll / KeyBuilder).

A group's retries go to `%RETRY%<group>` and its dead letters to `%DLQ%<group>`; both are part of
the group's picture, so every layer (wire client, domain, services, jobs) names them from here.
"""

from __future__ import annotations

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def retry_topic(group: str) -> str:
    return f"{RETRY_PREFIX}{group}"


def dlq_topic(group: str) -> str:
    return f"{DLQ_PREFIX}{group}"


def group_topics(group: str) -> tuple[str, str]:
    """The retry and dead-letter topics that belong to a consumer group."""
    return retry_topic(group), dlq_topic(group)


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_PREFIX)
