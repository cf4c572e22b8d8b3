"""What a controller says of the broker sets it elects masters for (RocketMQ 5's controller mode,
RIP-44), and what a broker says of its own epochs: three requests, and the HA status a broker
answers beside them, verified on 5.3.3 (tests/integration/test_failover.py).

- CONTROLLER_GET_METADATA_INFO (1005), to a controller, no header, no body: the answer's header
  is GetMetaDataResponseHeader, `group`, `controllerLeaderId`, `controllerLeaderAddress`,
  `isLeader` ("true"/"false") and `peers` ("n0:127.0.0.1:9878;" — id, colon, address, a `;`
  after each). A name server is no controller, even one with the controller embedded
  (`enableControllerInNamesrv=true`): it answers 3, REQUEST_CODE_NOT_SUPPORTED, on its own
  port, and the controller listens on its DLedger peer port (`controllerDLegerPeers`) either way.
- CONTROLLER_GET_SYNC_STATE_DATA (1006), to the controller's leader, body a JSON list of broker
  names: BrokerReplicasInfo, `{"replicasInfoTable": {NAME: {masterBrokerId, masterAddress,
  masterEpoch, syncStateSetEpoch, inSyncReplicas: [...], notInSyncReplicas: [...]}}}`, each
  replica `{brokerName, brokerId, brokerAddress, alive}`. A name the controller does not know is
  left out of the table; a follower answers 2007 (CONTROLLER_NOT_LEADER); no body at all is
  answered 1 ("not set any response code"). The ids there are the controller's own (1, 2, ...:
  one per replica, for good); the master's is `masterBrokerId`.
- GET_BROKER_EPOCH_CACHE (1007), to a broker, no header: EpochEntryCache, `{clusterName,
  brokerName, brokerId, epochList: [{epoch, startOffset, endOffset}], maxOffset}`; `brokerId` is
  the broker's role id (0 while master, its controller id while a replica), the last entry's
  `endOffset` is Long.MAX_VALUE (still open). A broker not in controller mode answers 1, "this
  request only for controllerMode".

- GET_BROKER_HA_STATUS (907), to a broker (console/rocketmq/admin.py `ha_status`): HARuntimeInfo,
  `{master, haClientRuntimeInfo: {maxOffset, masterFlushOffset, lastReadTimestamp, ...}}`; a
  replica in controller mode answers `master: false`, as a classic slave does.

What the name server lists is a role, not an identity: an elected replica registers again with
broker id 0, a master that rejoins after a kill registers as a replica under its controller id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .bodies import body_of, dict_of, list_of
from .codes import RequestCode
from .transport import Transport

#: Long.MAX_VALUE: the end offset of the epoch a broker is in now.
OPEN_END = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ControllerMetadata:
    """One controller's answer about its DLedger group: who leads it."""

    addr: str  # the controller asked
    group: str | None
    leader_id: str | None
    leader_addr: str | None
    is_leader: bool
    peers: tuple[str, ...]  # "n0:127.0.0.1:9878", one per controller of the group


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica of a broker set as the controller knows it."""

    broker_id: int  # the controller's id of it: stable across roles
    addr: str
    alive: bool  # the controller hears its heartbeats
    in_sync: bool  # in the SyncStateSet: it may be elected master


@dataclass(frozen=True, slots=True)
class ReplicaSet:
    """A broker set as its controller sees it: the master it elected (None: none now), the
    epoch of that election, and every replica with whether it is in the SyncStateSet."""

    broker: str
    master_id: int | None
    master_addr: str | None
    master_epoch: int
    sync_state_set_epoch: int
    replicas: tuple[Replica, ...]

    @property
    def in_sync(self) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.in_sync)

    def replica_at(self, addr: str) -> Replica | None:
        return next((r for r in self.replicas if r.addr == addr), None)


@dataclass(frozen=True, slots=True)
class Epoch:
    epoch: int
    start_offset: int
    end_offset: int  # OPEN_END: the epoch the broker is in


@dataclass(frozen=True, slots=True)
class EpochCache:
    """A broker's own record of the epochs it lived through (its commit log's offsets in each)."""

    cluster: str
    broker: str
    broker_id: int  # its role now: 0 master, else its controller id
    epochs: tuple[Epoch, ...]
    max_offset: int  # its commit log's end

    @property
    def last_epoch(self) -> int | None:
        return self.epochs[-1].epoch if self.epochs else None


class ControllerRequests(Transport):
    """The controller's requests and the broker's epoch request (AdminClient has them all:
    console/rocketmq/admin.py)."""

    async def controller_metadata(self, addr: str) -> ControllerMetadata:
        resp = await self.call(addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
        ext = resp.ext_fields
        peers = tuple(p for p in (ext.get("peers") or "").split(";") if p)
        return ControllerMetadata(
            addr=addr,
            group=ext.get("group") or None,
            leader_id=ext.get("controllerLeaderId") or None,
            leader_addr=ext.get("controllerLeaderAddress") or None,
            is_leader=(ext.get("isLeader") or "").lower() == "true",
            peers=peers,
        )

    async def replica_sets(self, addr: str, brokers: list[str]) -> dict[str, ReplicaSet]:
        """The SyncStateSet of each broker set named, from the controller leader at `addr`; a
        set the controller does not know is not in the answer."""
        resp = await self.call(
            addr, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=json.dumps(brokers).encode()
        )
        table = dict_of(body_of(resp).get("replicasInfoTable"))
        return {str(name): replica_set_of(str(name), dict_of(v)) for name, v in table.items()}

    async def epoch_cache(self, addr: str) -> EpochCache:
        resp = await self.call(addr, RequestCode.GET_BROKER_EPOCH_CACHE)
        body = body_of(resp)
        epochs = tuple(
            Epoch(
                epoch=int(e.get("epoch", 0)),
                start_offset=int(e.get("startOffset", 0)),
                end_offset=int(e.get("endOffset", OPEN_END)),
            )
            for e in map(dict_of, list_of(body.get("epochList")))
        )
        return EpochCache(
            cluster=str(body.get("clusterName", "")),
            broker=str(body.get("brokerName", "")),
            broker_id=int(body.get("brokerId", -1)),
            epochs=tuple(sorted(epochs, key=lambda e: e.epoch)),
            max_offset=int(body.get("maxOffset", 0)),
        )


def replica_set_of(broker: str, d: dict[object, object]) -> ReplicaSet:
    """One entry of BrokerReplicasInfo's table."""

    def replicas(key: str, in_sync: bool) -> list[Replica]:
        return [
            Replica(
                broker_id=int(r.get("brokerId", -1)),
                addr=str(r.get("brokerAddress", "")),
                alive=bool(r.get("alive", False)),
                in_sync=in_sync,
            )
            for r in map(dict_of, list_of(d.get(key)))
        ]

    master_id = d.get("masterBrokerId")
    master_addr = d.get("masterAddress")
    both = replicas("inSyncReplicas", True) + replicas("notInSyncReplicas", False)
    return ReplicaSet(
        broker=broker,
        master_id=None if master_id is None or int(str(master_id)) < 0 else int(str(master_id)),
        master_addr=str(master_addr) if master_addr else None,
        master_epoch=int(str(d.get("masterEpoch", 0))),
        sync_state_set_epoch=int(str(d.get("syncStateSetEpoch", 0))),
        replicas=tuple(sorted(both, key=lambda r: r.broker_id)),
    )
