"""The messages at the edge of a reset, read from the brokers (console.domain.boundary_messages).

One pull per queue where one does: a skip pulls two messages at target - 1 (the last skipped
and the first consumed), anything else one at the target. Pulls go out as the admin's own
group (TOOLS_CONSUMER, `AdminClient.pull_message`), never as the group being reset: a pull by
that group would erase a server-side reset pending for it.

Reads go where other reads go (`BrokerRoute.read_addr`): the master, or a slave when the name
server lists no master; a master that does not answer gives way to its slave for the rest of
the call. Nothing here raises for the cluster's sake: a queue that cannot be read has a note
saying why (`Absence.UNANSWERED`, `Absence.REFUSED`), so a caller shows every queue asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from console.domain.boundary_messages import (
    NOT_COMMITTED_NOTE,
    Absence,
    Boundary,
    BoundaryRequest,
    MessageView,
    beyond_note,
    deleted_note,
    end_note,
)
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import (
    AccessDenied,
    BrokerError,
    ConnectError,
    ConnectionLost,
    RequestTimeout,
    RocketMQError,
    TlsRefused,
)
from console.rocketmq.message import MessageDecodeError
from console.rocketmq.models import PullResult, PullStatus
from console.services.infra.fanout import gather_limited
from console.services.read.reader import ClusterReader
from console.services.read.routes import BrokerRoute

#: Pulls in flight at once over all brokers.
IN_FLIGHT = 256

_SILENT = (ConnectError, ConnectionLost, RequestTimeout)


@dataclass(frozen=True, slots=True)
class _Absent:
    note: str
    absence: Absence


@dataclass(slots=True)
class _Where:
    """Where one broker is read for this call: its master until it does not answer, then its
    slave (when it has one)."""

    name: str
    route: BrokerRoute | None
    silent_master: bool = False


class _Cannot(Exception):
    """A pull that could not be made or answered: why, for every message it was to read."""

    def __init__(self, absent: _Absent) -> None:
        super().__init__(absent.note)
        self.absent = absent


async def read_boundaries(
    reader: ClusterReader, wanted: Sequence[BoundaryRequest], *, in_flight: int = IN_FLIGHT
) -> list[Boundary]:
    """The boundary of every request, in the order asked."""
    if not wanted:
        return []
    try:
        routes: dict[str, BrokerRoute] | None = await reader.routes()
        unrouted: _Absent | None = None
    except RocketMQError as exc:
        routes = None
        unrouted = _Absent(f"the name server did not say where the brokers are: {exc}", _why(exc))
    places = {
        name: _Where(name, routes.get(name) if routes is not None else None)
        for name in sorted({r.broker for r in wanted})
    }

    async def one(request: BoundaryRequest) -> Boundary:
        if unrouted is not None:
            return _unread(request, unrouted)
        return await _read(reader, places[request.broker], request)

    return await gather_limited(one, wanted, limit=in_flight)


async def _read(reader: ClusterReader, where: _Where, request: BoundaryRequest) -> Boundary:
    skip = request.skips and request.target > 0
    start = request.target - 1 if skip else request.target
    try:
        result, from_slave = await _pull(reader, where, request, start, 2 if skip else 1)
        found = {m.queue_offset: m for m in result.messages}
        last: MessageView | _Absent | None = None
        if skip:
            at = found.get(start)
            last = MessageView.of(at, request.broker) if at else _absent(result, start, first=False)
        first_msg = next((m for m in result.messages if m.queue_offset >= request.target), None)
        if first_msg is None and skip and _worth_asking(result, request.target):
            # A skip whose last message is deleted, or a batch the broker cut short (a large
            # message): the first is asked on its own.
            result, from_slave = await _pull(reader, where, request, request.target, 1)
            first_msg = next((m for m in result.messages if m.queue_offset >= request.target), None)
        first = (
            MessageView.of(first_msg, request.broker)
            if first_msg
            else _absent(result, request.target)
        )
    except _Cannot as cannot:
        return _unread(request, cannot.absent)
    if not skip:
        last = _not_committed(request)
    return _boundary(request, first, last, from_slave=from_slave)


def _worth_asking(result: PullResult, target: int) -> bool:
    """Whether a pull at `target` could find what the last pull did not."""
    if result.status is PullStatus.FOUND:
        return target < result.max_offset
    return result.min_offset <= target < result.max_offset


async def _pull(
    reader: ClusterReader, where: _Where, request: BoundaryRequest, offset: int, count: int
) -> tuple[PullResult, bool]:
    """One pull, at the master or (its master not answering) the slave; _Cannot when neither
    answers or the broker refuses."""
    route = where.route
    if route is None or route.read_addr is None:
        raise _Cannot(
            _Absent(f"{where.name} is not registered with the name server", Absence.UNANSWERED)
        )
    admin = reader.admin
    slave = next(iter(route.slaves.values()), None)
    use_slave = route.master_addr is None or where.silent_master
    addr = slave if use_slave and slave is not None else route.read_addr
    try:
        result = await admin.pull_message(
            addr, request.topic, request.queue_id, offset, max_nums=count
        )
        return result, addr != route.master_addr
    except _SILENT as exc:
        if addr != route.master_addr or slave is None:
            raise _Cannot(_failure(where.name, request, exc)) from None
        where.silent_master = True
    except RocketMQError as exc:
        raise _Cannot(_failure(where.name, request, exc)) from None
    try:
        result = await admin.pull_message(
            slave, request.topic, request.queue_id, offset, max_nums=count
        )
    except RocketMQError as exc:
        raise _Cannot(_failure(where.name, request, exc)) from None
    return result, True


def _absent(result: PullResult, offset: int, *, first: bool = True) -> _Absent:
    """Why the pull found no message at `offset`, from the queue's min and max it answered
    (`first`: the offset is the target, where consuming resumes)."""
    if offset < result.min_offset:
        return _Absent(deleted_note(result.min_offset), Absence.DELETED)
    if offset >= result.max_offset and not first:
        return _Absent(
            f"nothing at offset {offset}: beyond the queue's end (max offset {result.max_offset})",
            Absence.BEYOND,
        )
    if offset == result.max_offset:
        return _Absent(end_note(result.max_offset), Absence.END)
    if offset > result.max_offset:
        return _Absent(beyond_note(result.max_offset), Absence.BEYOND)
    return _Absent(
        f"no message at offset {offset}: the broker found none there ({result.status})",
        Absence.NOT_FOUND,
    )


def _failure(broker: str, request: BoundaryRequest, error: RocketMQError) -> _Absent:
    if isinstance(error, RequestTimeout):
        return _Absent(f"{broker} did not answer: timed out", Absence.UNANSWERED)
    if isinstance(error, ConnectError):
        return _Absent(f"{broker} did not answer: cannot connect ({error.reason})", _why(error))
    if isinstance(error, ConnectionLost):
        return _Absent(f"{broker} did not answer: connection lost ({error.reason})", _why(error))
    if isinstance(error, AccessDenied | TlsRefused):
        return _Absent(str(error).replace(error.addr, broker, 1), Absence.REFUSED)
    if isinstance(error, BrokerError) and error.code == ResponseCode.TOPIC_NOT_EXIST:
        return _Absent(f"topic {request.topic} does not exist on {broker}", Absence.NOT_FOUND)
    if isinstance(error, BrokerError) and error.code == ResponseCode.INVALID_PARAMETER:
        # 5.x: a queue id the topic does not have ("queueId[9] is illegal, ...").
        return _Absent(f"{broker} has no such queue: {error.said}", Absence.NOT_FOUND)
    if isinstance(error, BrokerError):
        return _Absent(
            f"{broker} refused the read (code {error.code}): {error.said}", Absence.REFUSED
        )
    if isinstance(error, MessageDecodeError):
        return _Absent(f"{broker} answered bytes that are not a message: {error}", Absence.REFUSED)
    return _Absent(f"{broker}: {error}", Absence.REFUSED)


def _why(error: RocketMQError) -> Absence:
    return Absence.UNANSWERED if isinstance(error, _SILENT) else Absence.REFUSED


def _unread(request: BoundaryRequest, why: _Absent) -> Boundary:
    """Nothing read for the request: both messages carry the same reason."""
    last = why if request.skips else _not_committed(request)
    return _boundary(request, why, last, from_slave=False)


def _not_committed(request: BoundaryRequest) -> _Absent | None:
    """A queue with no current offset has no "last skipped" to show, and says so."""
    if request.current is None and request.target > 0:
        return _Absent(NOT_COMMITTED_NOTE, Absence.NOT_COMMITTED)
    return None


def _boundary(
    request: BoundaryRequest,
    first: MessageView | _Absent,
    last: MessageView | _Absent | None,
    *,
    from_slave: bool,
) -> Boundary:
    return Boundary(
        request=request,
        first=first if isinstance(first, MessageView) else None,
        first_note=first.note if isinstance(first, _Absent) else None,
        last_skipped=last if isinstance(last, MessageView) else None,
        last_note=last.note if isinstance(last, _Absent) else None,
        first_absence=first.absence if isinstance(first, _Absent) else None,
        last_absence=last.absence if isinstance(last, _Absent) else None,
        from_slave=from_slave,
    )
