"""Calls into a child process of ours, with progress and cancel: the console's one RPC.

Two children speak it: the console's network process (`console.remote.network_process`: asyncio, one
admin client) and the warm Spark host (`jobs.host`: a thread per job). The parent spawns
`python -m <module> --fd N` with one end of a socket pair inherited as descriptor N and the
child's stdout and stderr going to a log file, whose tail explains a crash. A reader thread
takes the answers off the socket and settles the call handles (`Call`), which any thread can
wait on; when the child exits, every call still pending fails with that tail (`ChildExited`).

Frames are a 4-byte big-endian length and a pickle. Both ends are this module and the child is
one we spawned, so nothing else ever writes what is unpickled.

    parent -> child   ("hello", value) once, first; then
                      ("call", id, method, args[, True]) | ("cancel", id) | ("close",)
    child -> parent   ("progress", id, values) | ("part", id, mapping) | ("ok", id, value)
                      | ("err", id, exception)

A mapping answer may come in parts before the rest, when the caller takes them as they come
(a call ending in True: `Reply.takes_parts`): the group list works on a refresh's reads while
the others are still read. A call that takes none is the four values it always was.

A process serving on a Unix socket (the warm Spark host of `spark up`) speaks the same frames
to every peer that connects (`serve_listener`), and a caller reaches it with `SocketPeer`. The
socket lives in a folder only our user can enter, and a peer the kernel says is another user is
hung up on before its first frame is read: what either end unpickles comes from a process of
our own user, who could run code as us anyway.

A failure crosses as its own exception when it survives pickling as itself (the wire client's
typed errors do, fields and all); anything else crosses as a RemoteError carrying its kind and
text. A call the parent cancelled answers CallCancelled, unless it finished first.
"""

from console.services.infra.rpc.child import (
    AsyncHandler,
    Handler,
    Reply,
    link_to_parent,
    same_user,
    serve_async,
    serve_listener,
    serve_threads,
)
from console.services.infra.rpc.errors import (
    CallCancelled,
    ChildExited,
    Portable,
    RemoteError,
    portable_error,
)
from console.services.infra.rpc.link import Link
from console.services.infra.rpc.parent import Call, ChildProcess, Peer, ProgressSink, SocketPeer
from console.services.infra.rpc.pending import Pending

__all__ = [
    "AsyncHandler",
    "Call",
    "CallCancelled",
    "ChildExited",
    "ChildProcess",
    "SocketPeer",
    "Handler",
    "Link",
    "Peer",
    "Pending",
    "Portable",
    "ProgressSink",
    "RemoteError",
    "Reply",
    "link_to_parent",
    "portable_error",
    "same_user",
    "serve_async",
    "serve_listener",
    "serve_threads",
]
