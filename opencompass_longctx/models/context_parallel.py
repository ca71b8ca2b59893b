"""TurboMind's context parallelism (``cp``) for the longest band: whether the plan uses it, and why (not).

LMDeploy 0.18's ``TurbomindEngineConfig`` has ``cp`` ("context parallelism size in attention for turbomind
backend, tp must be a multiple of cp", lmdeploy/cli/utils.py): the ``tp`` GPUs form ``cp`` groups of ``tp / cp``
for attention (lmdeploy/turbomind/parallel_config.py: ``attn_tp = tp / cp``, the MLP still split over ``tp``), each
group holding its KV heads for 1 / cp of a sequence's tokens. It uses no more GPUs than ``tp``; what it changes is
the memory per GPU (:func:`opencompass_longctx.models.engine.kv_plan`): a KV head that tensor parallelism would
replicate (``tp`` above the KV heads) is split over the sequence instead, and each group keeps its own copy of the
attention weights. The PyTorch engine has no ``cp`` (``PytorchEngineConfig`` has no such field).

:func:`choose` tries every ``cp`` that divides ``tp`` for a TurboMind engine of the band that holds 1m, and takes one
only when it gives the engine more sequences (or makes one fit at all), at the row's ``tp`` or, for a row whose
``tp`` cannot hold one sequence, says which smaller ``tp`` with cp would not either; its note says why in every case.
TurboMind's cache allocator is compiled code: that cp splits each sequence's KV over its ranks is read from the
0.18 Python (the flags and the parallel layout), not from the allocator itself.
"""
import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from opencompass_longctx.models import geometry


@dataclass(frozen=True)
class CpChoice:
    cp: int            # 1: not used
    note: str          # why (or why not), for the plan
    batch: int         # sequences the engine holds with that cp


def available(backend: str) -> Tuple[bool, str]:
    """(whether LMDeploy's engine config for ``backend`` has ``cp``, why not). Read from the installed LMDeploy's
    config classes where it is installed, else from 0.18's (TurboMind has it, the PyTorch engine not)."""
    try:
        import lmdeploy
        cls = lmdeploy.TurbomindEngineConfig if backend == 'turbomind' else lmdeploy.PytorchEngineConfig
        has = 'cp' in {f.name for f in dataclasses.fields(cls)}
        where = f'{cls.__name__} of LMDeploy {lmdeploy.__version__}'
    except (ImportError, AttributeError):
        has, where = backend == 'turbomind', f"LMDeploy 0.18's {'Turbomind' if backend == 'turbomind' else 'Pytorch'}" \
            'EngineConfig'
    if has:
        return True, ''
    return False, f'{where} has no cp (context parallelism is a TurboMind feature in 0.18)'


def choose(cfg, backend: str, tp: int, batch_at: Callable[[int], int], cap: int) -> CpChoice:
    """The cp for an engine of ``tp`` GPUs. ``batch_at(cp)``: the sequences it holds with that cp (the preflight's
    arithmetic); the one with the most is taken, ties keep cp=1."""
    base = batch_at(1)
    ok, why = available(backend)
    if not ok:
        return CpChoice(1, f'not available: {why}', base)
    if tp < 2:
        return CpChoice(1, 'not used: tp=1 (TurboMind needs tp to be a multiple of cp)', base)
    if base >= cap:
        return CpChoice(1, f'not needed: {cap} sequences (the batch cap) fit without it', base)
    options = [(batch_at(cp), cp) for cp in range(2, tp + 1) if tp % cp == 0]
    best, cp = max(options, default=(0, 1), key=lambda x: (x[0], -x[1]))
    kv_heads = geometry.kv_heads_and_dim(geometry.text_config(cfg))[0]
    if best > base:
        return CpChoice(cp, f'cp={cp} chosen: {min(best, cap)} sequences instead of {base} on {tp} GPUs '
                            f'({kv_heads} KV heads: without cp tp={tp} would replicate them)', min(best, cap))
    reason = (f'{kv_heads} KV heads >= tp={tp}: cp splits the same KV as tp does and copies the attention weights'
              if kv_heads and kv_heads >= tp else 'it holds no more sequences')
    return CpChoice(1, f'considered, not chosen: {reason} ({base} sequence(s) either way)', base)


def fewer_gpus(tp: int, fits_at: Callable[[int, int], bool]) -> Optional[str]:
    """A note when a smaller tp with some cp would hold one sequence of the band (``fits_at(tp, cp)``), else None."""
    for t in (x for x in range(1, tp) if tp % x == 0):
        for cp in (c for c in range(1, t + 1) if t % c == 0):
            if fits_at(t, cp):
                return f'one sequence also fits on {t} GPU(s)' + (f' with cp={cp}' if cp > 1 else '')
    return None
