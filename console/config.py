"""Typed configuration, loaded once: built-in defaults < YAML file < environment.

The file is `~/.config/rmq-console/config.yaml` unless `RMQ_CONSOLE_CONFIG` names another (tests
point it at their own file so a developer's config never leaks in). Every error names the file
and the line.

    clusters:
      - name: prod
        namesrv: [10.0.0.1:9876, 10.0.0.2:9876]
        colour: red            # banner colour, so prod never looks like staging
        read_only: true        # refuse every write to this cluster
        proxies: [10.0.0.5:8080]  # RocketMQ 5 proxies' remoting ports: their gRPC clients
        broker_metrics: [http://10.0.0.1:5557/metrics]  # brokers' Prometheus metrics
        proxy_port: 8080       # where proxies the brokers list are looked for (no proxies:)
        address_map:           # registered address -> the one this machine reaches
          "10.1.2.3": "127.0.0.1"                 # every port kept
          "10.1.2.4:10911": "127.0.0.1:30911"     # one port
        socks: 127.0.0.1:1080  # every connection through SOCKS5 (ssh -D 1080 bastion)
        credentials:           # by reference only: env:VAR or file:/path
          access_key: env:PROD_RMQ_AK
          secret_key: file:/etc/rmq/prod.secret
        tls:                   # or `tls: true` (the server verified against the system CAs)
          ca: /etc/rmq/ca.pem            # the CA that signed the cluster's certificates
          cert: /etc/rmq/console.pem     # a client certificate and its key, for mutual TLS
          key: /etc/rmq/console.key
          server_name: rocketmq.prod     # the name the certificates hold, if not the address
    refresh_interval: 5
    theme: rmq-dark
    keymap: {refresh: f5}
    spark_master: local[*]
    workspace: ~/.local/share/rmq-console
    client_offset_dirs: [~/.rocketmq_offsets]   # broadcasting consumers' offsets.json on this host

One piece (over 400 lines): each setting is declared, documented and parsed together, and the
parser names the fields the dataclasses declare.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console.errors import BadFile, UserError, read_text
from console.lined_yaml import line_at, load_lined
from console.redact import hide
from console.rocketmq.reach import Reach, map_error
from console.rocketmq.signing import Credentials
from console.rocketmq.tls import EncryptedKey, TlsClient, client_context

CONFIG_ENV = "RMQ_CONSOLE_CONFIG"
DEFAULT_CONFIG = Path("~/.config/rmq-console/config.yaml")
DEFAULT_WORKSPACE = Path("~/.local/share/rmq-console")
DEFAULT_CLIENT_OFFSETS = "~/.rocketmq_offsets"
#: A RocketMQ 5 proxy's remoting port unless configured otherwise (ProxyConfig).
DEFAULT_PROXY_PORT = 8080


class ConfigError(UserError):
    """A config problem, worded for the operator: file, line, field, what is wrong."""


@dataclass(frozen=True, slots=True)
class CredentialsRef:
    """Where the access and secret keys live (`env:VARIABLE` or `file:/path`); the values are
    read only when connecting, in the process that connects (a Spark executor included), so only
    the references ever travel or get written down."""

    access_key: str
    secret_key: str

    def resolve(self) -> Credentials:
        """The values, read now. The secret is hidden at once (console.redact): from here on
        this process masks it in every error and log line. The access key stays readable: it
        is what names the identity a broker refused."""
        secret = _deref(self.secret_key)
        hide(secret)
        return Credentials(_deref(self.access_key), secret)

    def to_dict(self) -> dict[str, str]:
        return {"access_key": self.access_key, "secret_key": self.secret_key}

    @classmethod
    def from_dict(cls, refs: Mapping[str, str]) -> CredentialsRef:
        return cls(access_key=str(refs["access_key"]), secret_key=str(refs["secret_key"]))


@dataclass(frozen=True, slots=True)
class TlsRef:
    """How to speak TLS to a cluster. The files are named by path, like credentials by
    reference: read only when connecting, by the process that connects (a Spark executor
    included), so no certificate or key is ever copied into a request or the workspace."""

    #: The CA file (PEM) the servers' certificates are checked against; None: the system CAs.
    ca: str | None = None
    #: A client certificate (PEM) and its unencrypted key, for servers that require one.
    cert: str | None = None
    key: str | None = None
    #: False: the servers' certificates are not checked at all (shown as unverified TLS).
    verify: bool = True
    #: The name the servers' certificates are checked against, instead of each address's host.
    server_name: str | None = None

    def resolve(self) -> TlsClient:
        """The TLS context, built now from the files."""
        fields = {"ca": self.ca, "cert": self.cert, "key": self.key}
        paths = {k: str(Path(v).expanduser()) if v else None for k, v in fields.items()}
        for key, path in paths.items():
            if path is not None and not os.access(path, os.R_OK):
                why = "no such file" if not Path(path).exists() else "not readable"
                raise ConfigError(f"tls.{key}: cannot read {path}: {why}")
        try:
            context = client_context(
                ca=paths["ca"] if self.verify else None,
                cert=paths["cert"],
                key=paths["key"],
                verify=self.verify,
            )
        except EncryptedKey:
            raise ConfigError(
                f"tls.key: {paths['key']} is encrypted: give the key unencrypted (PKCS#8 PEM, "
                "readable by the console's user only)"
            ) from None
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            which = ", ".join(f"{k} {p}" for k, p in paths.items() if p)
            raise ConfigError(f"tls: cannot use {which}: {exc}") from None
        return TlsClient(
            context, server_name=self.server_name, verify=self.verify, has_cert=bool(self.cert)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ca": self.ca,
            "cert": self.cert,
            "key": self.key,
            "verify": self.verify,
            "server_name": self.server_name,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TlsRef:
        def text(key: str) -> str | None:
            value = d.get(key)
            return None if value is None else str(value)

        return cls(
            ca=text("ca"),
            cert=text("cert"),
            key=text("key"),
            verify=bool(d.get("verify", True)),
            server_name=text("server_name"),
        )


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    name: str
    namesrv: tuple[str, ...]
    colour: str = "green"
    read_only: bool = False
    #: RocketMQ cluster name inside the name server, when one name server serves several.
    rocketmq_cluster: str | None = None
    credentials: CredentialsRef | None = None
    #: TLS to the name servers and brokers (None: plaintext).
    tls: TlsRef | None = None
    #: The remoting address (host:8080) of each RocketMQ 5 proxy in front of the cluster: the
    #: brokers do not list the gRPC clients connected through a proxy, the proxy does.
    proxies: tuple[str, ...] = ()
    #: The brokers' metrics for Prometheus (`http://host:5557/metrics`): what a gRPC group
    #: popped and did not ack is there and nowhere else.
    broker_metrics: tuple[str, ...] = ()
    #: Registered address -> the address connected to instead (`10.1.2.3` -> `127.0.0.1`
    #: keeps the port; `10.1.2.3:10911` -> `127.0.0.1:30911` maps that port): brokers that
    #: register addresses of another network (pod IPs, private addresses behind NAT).
    address_map: tuple[tuple[str, str], ...] = ()
    #: A SOCKS5 proxy (`host:port`, what `ssh -D 1080 bastion` opens) every connection to the
    #: cluster goes through, names resolved on its side.
    socks: str | None = None
    #: The remoting port a proxy the brokers list is looked for on, when `proxies` names none
    #: (a RocketMQ 5 proxy's default: 8080).
    proxy_port: int = DEFAULT_PROXY_PORT

    def reach(self) -> Reach:
        """How the wire client reaches this cluster's addresses."""
        return Reach.of(self.address_map, self.socks)

    @property
    def reach_note(self) -> str | None:
        """How the cluster is reached, for a banner ("via SOCKS HOST:PORT", "addresses
        mapped"); None: directly."""
        notes = [f"via SOCKS {self.socks}"] if self.socks else []
        if self.address_map:
            notes.append("addresses mapped")
        return ", ".join(notes) or None


@dataclass(frozen=True, slots=True)
class Config:
    clusters: tuple[ClusterConfig, ...] = ()
    #: Seconds between refreshes of the console's views.
    refresh_interval: float = 5.0
    #: Seconds before a request to a name server or broker is given up.
    timeout: float = 3.0
    #: A theme name from themes/ or a built-in Textual theme.
    theme: str = "rmq-dark"
    #: Binding id -> keys, e.g. {refresh: f5}; see `?` in the console for the ids.
    keymap: Mapping[str, str] = field(default_factory=dict)
    #: Spark master for plan jobs: local[*], spark://host:7077, or sc://host:15002 (Connect).
    spark_master: str = "local[*]"
    #: Where snapshots, plans, journals and the audit log are written (a path or a URI).
    workspace: str = str(DEFAULT_WORKSPACE)
    #: How many snapshots to keep per cluster.
    snapshot_retention: int = 500
    #: Take a snapshot of the shown groups on every refresh.
    snapshot_on_refresh: bool = False
    #: Where BROADCASTING consumers on this host keep their offsets.json (the Java client's
    #: `rocketmq.client.localOffsetStoreDir`): one directory per client id inside each.
    client_offset_dirs: tuple[str, ...] = (DEFAULT_CLIENT_OFFSETS,)
    #: Seconds a walkthrough watches a group for evidence (rates, stuck queues), and waits for
    #: online consumers to move past an apply's targets (six times as long).
    walkthrough_watch: float = 10.0
    source: str | None = None

    def cluster(self, name: str) -> ClusterConfig:
        for c in self.clusters:
            if c.name == name:
                return c
        known = ", ".join(c.name for c in self.clusters) or "none configured"
        where = f" in {self.source}" if self.source else ""
        raise ConfigError(f"unknown cluster {name!r}{where} (known: {known})")

    @property
    def workspace_path(self) -> str:
        if "://" in self.workspace:
            return self.workspace
        return str(Path(self.workspace).expanduser())


def split_namesrv(text: str) -> tuple[str, ...]:
    """Name server addresses as operators write them: separated by ';' (RocketMQ's own
    NAMESRV_ADDR form) or ','."""
    return tuple(a.strip() for a in text.replace(",", ";").split(";") if a.strip())


def is_address(text: str) -> bool:
    """Whether `text` is a host:port address with a port a socket can have."""
    host, sep, port = text.strip().rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get(CONFIG_ENV) or DEFAULT_CONFIG).expanduser()


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    env = os.environ if environ is None else environ
    explicit = path is not None or bool(env.get(CONFIG_ENV))
    path = path or config_path(env)
    config = Config()
    if path.exists():
        config = _from_file(path)
    elif explicit:
        raise ConfigError(f"{path}: config file not found")
    return _apply_env(config, env)


def _apply_env(config: Config, env: Mapping[str, str]) -> Config:
    changes: dict[str, Any] = {}
    if env.get("RMQ_CONSOLE_WORKSPACE"):
        changes["workspace"] = env["RMQ_CONSOLE_WORKSPACE"]
    if env.get("RMQ_CONSOLE_SPARK_MASTER"):
        changes["spark_master"] = env["RMQ_CONSOLE_SPARK_MASTER"]
    if env.get("RMQ_CONSOLE_CLIENT_OFFSETS"):
        dirs = [d for d in env["RMQ_CONSOLE_CLIENT_OFFSETS"].split(os.pathsep) if d.strip()]
        changes["client_offset_dirs"] = tuple(dirs)
    if env.get("RMQ_CONSOLE_THEME"):
        changes["theme"] = env["RMQ_CONSOLE_THEME"]
    if env.get("RMQ_CONSOLE_REFRESH"):
        try:
            changes["refresh_interval"] = float(env["RMQ_CONSOLE_REFRESH"])
        except ValueError:
            raise ConfigError(
                f"RMQ_CONSOLE_REFRESH: expected seconds, got {env['RMQ_CONSOLE_REFRESH']!r}"
            ) from None
    return replace(config, **changes) if changes else config


# ---- parsing -------------------------------------------------------------------------------------


class _Doc:
    """A YAML document that knows the line of each of its parts (console/lined_yaml.py), for
    error messages."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        try:
            self.data = load_lined(text, path)
        except BadFile as exc:
            raise ConfigError(str(exc)) from None

    def error(self, where: tuple[Any, ...], message: str) -> ConfigError:
        line = line_at(self.data, where)
        name = ".".join(str(p) for p in where) or "(top level)"
        loc = f"{self.path}:{line}" if line else str(self.path)
        return ConfigError(f"{loc}: {name}: {message}")


_TOP_LEVEL = {
    "clusters",
    "refresh_interval",
    "timeout",
    "theme",
    "keymap",
    "spark_master",
    "workspace",
    "snapshot_retention",
    "snapshot_on_refresh",
    "client_offset_dirs",
    "walkthrough_watch",
}
_CLUSTER_KEYS = {
    "name",
    "namesrv",
    "colour",
    "color",
    "read_only",
    "rocketmq_cluster",
    "credentials",
    "tls",
    "proxies",
    "broker_metrics",
    "address_map",
    "socks",
    "proxy_port",
}
_TLS_KEYS = ("ca", "cert", "key", "verify", "server_name")


def _from_file(path: Path) -> Config:
    try:
        text = read_text(path)
    except BadFile as exc:
        raise ConfigError(str(exc)) from None
    doc = _Doc(path, text)
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise doc.error((), "expected a mapping of settings")
    for key in data:
        if key not in _TOP_LEVEL:
            raise doc.error((key,), f"unknown setting (known: {', '.join(sorted(_TOP_LEVEL))})")
    values: dict[str, Any] = {"source": str(path)}
    for key in ("refresh_interval", "timeout", "walkthrough_watch"):
        if key in data:
            values[key] = _number(doc, (key,), data[key], minimum=0.1)
    for key in ("theme", "spark_master", "workspace"):
        if key in data:
            values[key] = _string(doc, (key,), data[key])
    if "snapshot_retention" in data:
        values["snapshot_retention"] = int(
            _number(doc, ("snapshot_retention",), data["snapshot_retention"], minimum=1)
        )
    if "snapshot_on_refresh" in data:
        values["snapshot_on_refresh"] = _bool(
            doc, ("snapshot_on_refresh",), data["snapshot_on_refresh"]
        )
    if "client_offset_dirs" in data:
        raw = data["client_offset_dirs"]
        items = raw if isinstance(raw, list) else [raw]
        values["client_offset_dirs"] = tuple(
            _string(doc, ("client_offset_dirs", i), d) for i, d in enumerate(items)
        )
    if "keymap" in data:
        keymap = data["keymap"] or {}
        if not isinstance(keymap, dict):
            raise doc.error(("keymap",), "expected a mapping of binding id to keys")
        values["keymap"] = {str(k): _string(doc, ("keymap", k), v) for k, v in keymap.items()}
    clusters = data.get("clusters") or []
    if not isinstance(clusters, list):
        raise doc.error(("clusters",), "expected a list of clusters")
    parsed = [_cluster(doc, i, c) for i, c in enumerate(clusters)]
    names = [c.name for c in parsed]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise doc.error(("clusters", i, "name"), f"duplicate cluster name {name!r}")
    values["clusters"] = tuple(parsed)
    return Config(**values)


def _cluster(doc: _Doc, i: int, raw: Any) -> ClusterConfig:
    where: tuple[Any, ...] = ("clusters", i)
    if not isinstance(raw, dict):
        raise doc.error(where, "expected a mapping with at least name and namesrv")
    for key in raw:
        if key not in _CLUSTER_KEYS:
            raise doc.error((*where, key), f"unknown cluster setting ({', '.join(_CLUSTER_KEYS)})")
    if "name" not in raw:
        raise doc.error(where, "missing 'name'")
    if "namesrv" not in raw:
        raise doc.error(where, "missing 'namesrv' (host:port, or a list of them)")
    name = _string(doc, (*where, "name"), raw["name"])
    ns = raw["namesrv"]
    items = ns if isinstance(ns, list) else split_namesrv(str(ns))
    namesrv = tuple(_addr(doc, (*where, "namesrv"), a) for a in items if str(a).strip())
    if not namesrv:
        raise doc.error((*where, "namesrv"), "no address given")
    creds = None
    if raw.get("credentials") is not None:
        c = raw["credentials"]
        cw = (*where, "credentials")
        if not isinstance(c, dict) or set(c) != {"access_key", "secret_key"}:
            raise doc.error(cw, "expected access_key and secret_key references")
        creds = CredentialsRef(
            access_key=_reference(doc, (*cw, "access_key"), c["access_key"]),
            secret_key=_reference(doc, (*cw, "secret_key"), c["secret_key"]),
        )
    colour = raw.get("colour", raw.get("color", "green"))
    rmq_cluster = raw.get("rocketmq_cluster")
    tls = _tls(doc, (*where, "tls"), raw.get("tls"))
    px = raw.get("proxies") or []
    proxy_items = px if isinstance(px, list) else split_namesrv(str(px))
    proxies = tuple(_addr(doc, (*where, "proxies"), a) for a in proxy_items if str(a).strip())
    bm = raw.get("broker_metrics") or []
    metric_items = bm if isinstance(bm, list) else str(bm).replace(",", ";").split(";")
    broker_metrics = tuple(
        _url(doc, (*where, "broker_metrics"), u) for u in metric_items if str(u).strip()
    )
    socks = raw.get("socks")
    return ClusterConfig(
        name=name,
        namesrv=namesrv,
        colour=_string(doc, (*where, "colour"), colour),
        read_only=_bool(doc, (*where, "read_only"), raw.get("read_only", False)),
        rocketmq_cluster=None
        if rmq_cluster is None
        else _string(doc, (*where, "rocketmq_cluster"), rmq_cluster),
        credentials=creds,
        tls=tls,
        proxies=proxies,
        broker_metrics=broker_metrics,
        address_map=_address_map(doc, (*where, "address_map"), raw.get("address_map")),
        socks=None if socks is None else _addr(doc, (*where, "socks"), socks),
        proxy_port=int(
            _number(
                doc, (*where, "proxy_port"), raw.get("proxy_port", DEFAULT_PROXY_PORT), minimum=1
            )
        ),
    )


def parse_address_map(entries: Iterable[str], where: str) -> tuple[tuple[str, str], ...]:
    """`FROM=TO` entries (`--map-address`) as an address map; ConfigError naming `where` and
    the entry when one is not an address map entry."""
    out = []
    for entry in entries:
        source, _, target = (p.strip() for p in entry.partition("="))
        why = map_error(source, target)
        if why is not None:
            raise ConfigError(f"{where}: {entry!r}: {why}")
        out.append((source, target))
    return tuple(out)


def _address_map(doc: _Doc, where: tuple[Any, ...], raw: Any) -> tuple[tuple[str, str], ...]:
    """A mapping of registered address to reachable address (see ClusterConfig.address_map)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise doc.error(
            where, 'expected a mapping of registered address to address ("10.1.2.3": "127.0.0.1")'
        )
    out = []
    for source, target in raw.items():
        text = str(target).strip() if isinstance(target, str | int) else ""
        why = map_error(str(source).strip(), text)
        if why is not None:
            raise doc.error((*where, source), why)
        out.append((str(source).strip(), text))
    return tuple(out)


def _tls(doc: _Doc, where: tuple[Any, ...], raw: Any) -> TlsRef | None:
    """`tls: true` (system CAs), `false` or absent (plaintext), or a mapping of _TLS_KEYS. A
    relative path is taken from the config file's directory."""
    if raw is None or raw is False:
        return None
    if raw is True:
        return TlsRef()
    if not isinstance(raw, dict):
        raise doc.error(where, f"expected true, false or a mapping of {', '.join(_TLS_KEYS)}")
    for key in raw:
        if key not in _TLS_KEYS:
            raise doc.error((*where, key), f"unknown TLS setting ({', '.join(_TLS_KEYS)})")

    def path(key: str) -> str | None:
        if raw.get(key) is None:
            return None
        text = _string(doc, (*where, key), raw[key])
        if text.startswith("~") or Path(text).is_absolute():
            return text
        return str(doc.path.parent.resolve() / text)

    cert, key = path("cert"), path("key")
    if (cert is None) != (key is None):
        missing = "key" if key is None else "cert"
        raise doc.error((*where, missing), "a client certificate needs both cert and key")
    server_name = raw.get("server_name")
    return TlsRef(
        ca=path("ca"),
        cert=cert,
        key=key,
        verify=_bool(doc, (*where, "verify"), raw.get("verify", True)),
        server_name=None
        if server_name is None
        else _string(doc, (*where, "server_name"), server_name),
    )


def _string(doc: _Doc, where: tuple[Any, ...], value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise doc.error(where, f"expected a non-empty string, got {value!r}")
    return value.strip()


def _number(doc: _Doc, where: tuple[Any, ...], value: Any, *, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise doc.error(where, f"expected a number, got {value!r}")
    if value < minimum:
        raise doc.error(where, f"must be at least {minimum:g}, got {value!r}")
    return float(value)


def _bool(doc: _Doc, where: tuple[Any, ...], value: Any) -> bool:
    if not isinstance(value, bool):
        raise doc.error(where, f"expected true or false, got {value!r}")
    return value


def _addr(doc: _Doc, where: tuple[Any, ...], value: Any) -> str:
    text = str(value).strip()
    if not is_address(text):
        raise doc.error(where, f"not a host:port address: {text!r}")
    return text


def _url(doc: _Doc, where: tuple[Any, ...], value: Any) -> str:
    text = str(value).strip()
    if not text.startswith(("http://", "https://")):
        raise doc.error(where, f"not an http(s) URL: {text!r}")
    return text


def _reference(doc: _Doc, where: tuple[Any, ...], value: Any) -> str:
    text = _string(doc, where, value)
    if not text.startswith(("env:", "file:")):
        # A literal secret in a config file ends up in backups and screenshots.
        raise doc.error(where, "must be a reference, env:VARIABLE or file:/path (not the value)")
    return text


def _deref(ref: str) -> str:
    kind, _, target = ref.partition(":")
    if kind == "env":
        value = os.environ.get(target)
        if value is None:
            raise ConfigError(f"credentials: environment variable {target} is not set")
        return value
    try:
        return read_text(Path(target).expanduser()).strip()
    except BadFile as exc:
        raise ConfigError(f"credentials: {exc}") from None
