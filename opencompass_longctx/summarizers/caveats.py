"""Caveat marks in the tier table: a cell at a tier its model runs beyond what the engine supports (the row's
``caveats``, :func:`opencompass_longctx.models.recipe.caveats`, the rule the plan uses too) shows its score with
a mark, and the reason is a footnote."""
import dataclasses
from typing import Dict, Sequence

from opencompass.utils import model_abbr_from_cfg

from opencompass_longctx.models.recipe import CAVEAT_MARK, caveats
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.summarizers.rows import BENCHMARKS, Cell
@dataclasses.dataclass
class MarkedCell(Cell):
    mark: str = ''

    def text(self, with_ci: bool = False) -> str:
        return super().text(with_ci) + self.mark


def mark_caveats(report: Dict, model_cfgs: Sequence[Dict]) -> Dict:
    """Mark the report's cells in place (N/A cells stay unmarked) and add one footnote per model and reason."""
    units = {b.name: b.tier_unit for b in BENCHMARKS}
    cfgs = {model_abbr_from_cfg(m): m for m in model_cfgs}
    where: Dict = {}
    for r in report['rows']:
        cfg = cfgs.get(r.model)
        for tier, cell in list(r.cells.items()):
            reasons = caveats(cfg, parse_tier(tier).tokens(units.get(r.bench, 1000))) if cfg else []
            if reasons and cell.status != 'n/a':
                fields = {f.name: getattr(cell, f.name) for f in dataclasses.fields(Cell)}
                r.cells[tier] = MarkedCell(**fields, mark=CAVEAT_MARK)
                for reason in reasons:
                    where.setdefault((r.model, reason), set()).add(tier)
    report['notes'] = list(report['notes']) + [
        f"{CAVEAT_MARK} {model} at {', '.join(sort_tiers(tiers))}: {reason}"
        for (model, reason), tiers in where.items()]
    return report
