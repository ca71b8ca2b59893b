"""Caveat marks in the tier table: a cell at a tier its model runs beyond what the engine supports (the row's
``caveats``, :func:`opencompass_longctx.models.recipe.caveats`, the rule the plan uses too) shows its score with
a mark, and the reason is a note."""
from dataclasses import replace
from typing import Dict, List, Sequence

from opencompass_longctx.models.recipe import CAVEAT_MARK, caveats
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS
from opencompass_longctx.leaderboard.tier_report import RowResult


def mark_caveats(rows: Sequence[RowResult], model_cfgs: Dict[str, dict]) -> List[str]:
    """Mark the rows' cells (N/A cells stay unmarked) by ``model_cfgs`` ({model abbr: its config}); the notes: one
    per model and reason."""
    units = {b.name: b.tier_unit for b in BENCHMARKS}
    where: Dict = {}
    for r in rows:
        cfg = model_cfgs.get(r.model)
        for tier, cell in list(r.cells.items()):
            reasons = caveats(cfg, parse_tier(tier).tokens(units.get(r.bench, 1000))) if cfg else []
            if reasons and cell.status != 'n/a':
                r.cells[tier] = replace(cell, caveat=CAVEAT_MARK)
                for reason in reasons:
                    where.setdefault((r.model, reason), set()).add(tier)
    return [f"{CAVEAT_MARK} {model} at {', '.join(sort_tiers(tiers))}: {reason}"
            for (model, reason), tiers in where.items()]
