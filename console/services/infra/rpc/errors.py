"""What crosses the RPC when a call fails and the failure cannot cross as itself."""

from __future__ import annotations

import pickle
from collections.abc import Callable

from console.redact import redact_text
from console.rocketmq.errors import RocketMQError

#: What a child sends for a failure: the exception itself, or a stand-in that pickles.
Portable = Callable[[BaseException], BaseException]


class RemoteError(RocketMQError):
    """A failure in a child process that could not cross as itself: its kind and its text.

    A RocketMQError, so that a caller who treats "the cluster did not answer" as expected (the
    console's screens do) treats a failure in the process that asks the cluster the same way.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @classmethod
    def of(cls, exc: BaseException) -> RemoteError:
        return cls(type(exc).__name__, str(exc) or type(exc).__name__)


class CallCancelled(RemoteError):
    """The parent cancelled the call and the child stopped it."""

    def __init__(self, method: str) -> None:
        super().__init__("CallCancelled", f"{method} was cancelled")
        self.method = method


class ChildExited(RemoteError):
    """The child process is gone; `tail` is the end of what it wrote to its log."""

    def __init__(self, name: str, code: int | None, tail: str, why: str | None = None) -> None:
        text = f"{name} exited" + (f" (code {code})" if code is not None else "")
        if why:
            text += f" after {why}"
        super().__init__("ChildExited", f"{text}: {tail}" if tail else text)
        self.name = name
        self.code = code
        self.tail = tail


def portable_error(exc: BaseException) -> BaseException:
    """`exc` itself when it survives pickling as itself, else a RemoteError with its kind and
    text (an exception whose constructor arguments are not its message does not).

    The child may know secrets the parent does not (it resolved the credentials): an error whose
    text holds one crosses as a RemoteError with the text masked, never as itself."""
    text = str(exc)
    masked = redact_text(text)
    if masked != text:
        return RemoteError(type(exc).__name__, masked)
    try:
        back = pickle.loads(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # whatever pickling raises, the text still crosses
        return RemoteError.of(exc)
    if type(back) is type(exc) and str(back) == str(exc):
        return exc
    return RemoteError.of(exc)
