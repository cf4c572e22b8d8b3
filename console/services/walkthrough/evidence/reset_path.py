"""How an apply would move the group's offsets now (the brokers' reset path)."""

from __future__ import annotations

from console.domain.reset_paths import choose_reset_path
from console.domain.spec import is_one_time, strategy_kind
from console.domain.walkthrough import Evidence
from console.services.read.broker_facts import broker_facts
from console.services.walkthrough.evidence.context import EvidenceContext
from console.services.walkthrough.evidence.titles import TITLES


async def provide(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    routes = await ctx.reader.routes()
    brokers = sorted({q.broker for q in o.queues})
    facts = await broker_facts(
        ctx.reader.admin, {b: routes[b].master_addr if b in routes else None for b in brokers}
    )
    spec = ctx.run.draft_spec()
    if spec is not None:
        one_time = spec.one_time_per_topic
    else:
        # Answers still to come: the kind the walkthrough names, when it names one.
        one_time = is_one_time(strategy_kind(ctx.run.walkthrough.spec.get("strategy")))
    path = choose_reset_path(
        list(facts.values()),
        consumers_online=len(o.clients),
        broadcasting=o.client_local,
        per_queue=not one_time,
    )
    lines = [f"{path.kind}: {path.reason}"]
    if path.blocker:
        lines.append(f"before applying: {path.blocker}")
    unknown = [f.name for f in facts.values() if f.version is None]
    if unknown:
        lines.append(f"version unknown for {', '.join(unknown)}: the apply asks again")
    return Evidence(
        "reset-path", TITLES["reset-path"], tuple(lines), {"kind": str(path.kind)}, tuple(unknown)
    )
