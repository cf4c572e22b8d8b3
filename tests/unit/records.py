"""Message records built by hand, byte for byte as a broker stores them (fact sheet §3.12), for
the codec's tests and a scripted broker's PULL answers."""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

from console.rocketmq.message import (
    BORNHOST_V6_FLAG,
    MAGIC_V1,
    MAGIC_V2,
    STOREHOST_V6_FLAG,
)


@dataclass
class Record:
    topic: str = "orders"
    queue_id: int = 3
    queue_offset: int = 42
    commit_log_offset: int = 0xAECF
    body: bytes = b'{"order": 1}'
    sys_flag: int = 0
    flag: int = 0
    body_crc: int = 1234
    born_timestamp: int = 1_795_606_246_789
    born_host: tuple[str, int] = ("10.0.0.7", 59642)
    store_timestamp: int = 1_795_606_246_790
    store_host: tuple[str, int] = ("127.0.0.1", 24806)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] = field(
        default_factory=lambda: {"TAGS": "paid", "KEYS": "k1 k2", "UNIQ_KEY": "AC11000100002A9F"}
    )
    magic: int = MAGIC_V1

    def encode(self) -> bytes:
        sys_flag = self.sys_flag
        if ":" in self.born_host[0]:
            sys_flag |= BORNHOST_V6_FLAG
        if ":" in self.store_host[0]:
            sys_flag |= STOREHOST_V6_FLAG
        topic = self.topic.encode()
        props = "".join(f"{k}\x01{v}\x02" for k, v in self.properties.items()).encode()
        rest = b"".join(
            [
                struct.pack(
                    ">iiqqiq",
                    self.queue_id,
                    self.flag,
                    self.queue_offset,
                    self.commit_log_offset,
                    sys_flag,
                    self.born_timestamp,
                ),
                host(self.born_host),
                struct.pack(">q", self.store_timestamp),
                host(self.store_host),
                struct.pack(
                    ">iqi", self.reconsume_times, self.prepared_transaction_offset, len(self.body)
                ),
                self.body,
                struct.pack(">h", len(topic)) if self.magic == MAGIC_V2 else bytes([len(topic)]),
                topic,
                struct.pack(">h", len(props)),
                props,
            ]
        )
        size = 12 + len(rest)
        return struct.pack(">iii", size, self.magic, self.body_crc) + rest


def host(addr: tuple[str, int]) -> bytes:
    return ipaddress.ip_address(addr[0]).packed + struct.pack(">i", addr[1])


def offset_msg_id(store_host: tuple[str, int], commit_log_offset: int) -> str:
    return (host(store_host) + struct.pack(">q", commit_log_offset)).hex().upper()
