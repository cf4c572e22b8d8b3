"""The cluster banner: which cluster this is, in its configured colour, whether it is read-only,
whether its TLS is unverified (`tls: {verify: false}`: the servers' certificates are not
checked, so the console may be talking to anyone), and how it is reached when not directly
("via SOCKS HOST:PORT", "addresses mapped").

The colour comes from the operator's config (so prod never looks like staging); anything that does
not parse as a colour falls back to the theme's primary colour.
"""

from __future__ import annotations

from rich.text import Text
from textual.color import Color, ColorParseError
from textual.widgets import Static

from console.config import ClusterConfig, split_namesrv


class ClusterBanner(Static):
    def __init__(self, cluster: ClusterConfig | None, *, id: str | None = "banner") -> None:
        super().__init__(id=id)
        self.cluster = cluster
        if cluster is not None and cluster.read_only:
            self.add_class("-read-only")
        if cluster is not None and unverified_tls(cluster):
            self.add_class("-unverified-tls")

    def on_mount(self) -> None:
        if self.cluster is None:
            return
        try:
            self.styles.background = Color.parse(self.cluster.colour)
        except ColorParseError:
            self.add_class("-unknown-colour")

    def render(self) -> Text:
        if self.cluster is None:
            return Text("rmq-console")
        c = self.cluster
        text = Text.assemble((f" {c.name} ", "bold"))
        if not named_after_namesrv(c):
            text.append(f" {';'.join(c.namesrv)}")
        if c.rocketmq_cluster and c.rocketmq_cluster != c.name:
            text.append(f"  cluster {c.rocketmq_cluster}")
        if c.read_only:
            text.append("  READ-ONLY", "bold reverse")
        if unverified_tls(c):
            text.append("  UNVERIFIED TLS", "bold reverse")
        if c.reach_note:
            # Its addresses are not reached where the cluster says: an operator should know.
            text.append(f"  {c.reach_note}", "italic")
        return text


def unverified_tls(cluster: ClusterConfig) -> bool:
    """TLS without checking the servers' certificates."""
    return cluster.tls is not None and not cluster.tls.verify


def named_after_namesrv(cluster: ClusterConfig) -> bool:
    """`--namesrv a;b` (or `a,b`) names the cluster after its name servers: its name says them."""
    return split_namesrv(cluster.name) == tuple(cluster.namesrv)
