"""Consumers online, with their addresses, languages and versions."""

from __future__ import annotations

from console.domain.walkthrough import Evidence
from console.services.walkthrough.evidence.context import EvidenceContext
from console.services.walkthrough.evidence.titles import TITLES


async def provide(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    if not o.clients_known:
        return Evidence(
            "clients",
            TITLES["clients"],
            ("who is online could not be read",),
            {"online": None},
            ("clients",),
        )
    ids = [c.client_id for c in o.clients]
    if not ids:
        lines = ["no consumer online: offsets stay where they are put until one starts"]
    else:
        lines = [f"{len(ids)} consumer(s) online ({o.message_model or 'model unknown'}):"]
        lines += [f"  {c.client_id} {c.addr} {c.language} v{c.version}" for c in o.clients[:6]]
        if len(ids) > 6:
            lines.append(f"  … and {len(ids) - 6} more")
    return Evidence("clients", TITLES["clients"], tuple(lines), {"online": len(ids)})
