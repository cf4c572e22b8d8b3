"""The cluster banner: which cluster this is, in its configured colour, and whether it is read-only.

The colour comes from the operator's config (so prod never looks like staging); anything that does
not parse as a colour falls back to the theme's primary colour.
"""

from __future__ import annotations

from rich.text import Text
from textual.color import Color, ColorParseError
from textual.widgets import Static

from console.config import ClusterConfig


class ClusterBanner(Static):
    def __init__(self, cluster: ClusterConfig | None, *, id: str | None = "banner") -> None:
        super().__init__(id=id)
        self.cluster = cluster
        if cluster is not None and cluster.read_only:
            self.add_class("-read-only")

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
        namesrv = ";".join(c.namesrv)
        text = Text.assemble((f" {c.name} ", "bold"))
        if namesrv != c.name:  # --namesrv names the cluster after its address
            text.append(f" {namesrv}")
        if c.rocketmq_cluster:
            text.append(f"  cluster {c.rocketmq_cluster}")
        if c.read_only:
            text.append("  READ-ONLY", "bold reverse")
        return text
