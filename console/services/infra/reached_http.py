"""An HTTP(S) opener whose connections go where the cluster's addresses are reached: a mapped
address, or through a SOCKS5 proxy (console/rocketmq/reach.py). The brokers' metrics endpoints
are addresses of the cluster like any other; the URL keeps the endpoint's own host, which is
also the name an https endpoint's certificate is checked against."""

from __future__ import annotations

import functools
import http.client
import ssl
import urllib.request
from typing import Any

from console.rocketmq.reach import Reach


class _ReachedConnection(http.client.HTTPConnection):
    def __init__(self, host: str, *, reach: Reach, **kw: Any) -> None:
        super().__init__(host, **kw)
        self.reach = reach

    def connect(self) -> None:
        self.sock = self.reach.dial(f"{self.host}:{self.port}", self.timeout or 10.0)


class _ReachedTlsConnection(_ReachedConnection):
    default_port = http.client.HTTPS_PORT

    def __init__(self, host: str, *, reach: Reach, tls: ssl.SSLContext, **kw: Any) -> None:
        super().__init__(host, reach=reach, **kw)
        self.tls = tls

    def connect(self) -> None:
        super().connect()
        self.sock = self.tls.wrap_socket(self.sock, server_hostname=self.host)


class _ReachedHttp(urllib.request.HTTPHandler):
    def __init__(self, reach: Reach) -> None:
        super().__init__()
        self.reach = reach

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_ReachedConnection, reach=self.reach), req)


class _ReachedHttps(urllib.request.HTTPSHandler):
    def __init__(self, reach: Reach, tls: ssl.SSLContext) -> None:
        super().__init__()
        self.reach = reach
        self.tls = tls

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = functools.partial(_ReachedTlsConnection, reach=self.reach, tls=self.tls)
        return self.do_open(connection, req)


def reached_opener(reach: Reach, tls: ssl.SSLContext | None) -> urllib.request.OpenerDirector:
    """An opener for URLs of the cluster reached through `reach`; an https one verified with
    `tls` (None: the system's CAs)."""
    return urllib.request.build_opener(
        _ReachedHttp(reach), _ReachedHttps(reach, tls or ssl.create_default_context())
    )
