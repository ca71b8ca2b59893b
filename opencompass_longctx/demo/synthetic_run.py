"""A finished OpenCompass run made up from known abilities, for the leaderboard's tests and its benchmark: no model
is run. :func:`write_run` writes what ``longctx-report`` reads from a real run (the config dump with the models and
datasets, ``results/<model>/<dataset>.json`` with per-sample details, ``predictions/<model>/<dataset>.json``), with
each sample's outcome drawn from the model's ability:

* BABILong qa1-qa5: ``samples`` independent stories per task and tier (a story is the same at every tier);
* NoLiMa main, copied per model (``nolima_main_<tier>@<model>``): ``entries`` needle entries x ``per_entry`` prompts,
  each entry's accuracy logit-normal around the model's (sd ``entry_sd``), so samples of an entry are a cluster;
* LongBioBench: the cells ``longbio_cells`` (by default one per category: standard, calculation, idk; the
  showcase writes all 15), ``samples`` seeds per cell, each seed one cluster across the cells and tiers.

``ability(model, bench, tier)`` gives the accuracy (0..1) the samples are drawn with. Deterministic for a seed.
"""
import json
import os
from typing import Callable, Dict, Sequence

import numpy as np

from opencompass_longctx import __version__
BABILONG_TASKS = tuple(f'qa{i}' for i in range(1, 6))
LONGBIO_CELLS = ('standard', 'calculation', 'idk')
EVALUATORS = {'babilong': 'opencompass_longctx.babilong.evaluator.BabilongEvaluator',
              'nolima': 'opencompass_longctx.nolima.evaluator.NoLiMaEvaluator',
              'longbio': 'opencompass_longctx.longbio.evaluator.LongBioEvaluator'}


def _logit(p):
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def _dump(path: str, obj) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(obj, f)


def _write_dataset(run: str, model: str, abbr: str, correct: Sequence[bool], extra: Sequence[dict],
                   prompts: Sequence[str]) -> None:
    details = [dict({'correct': [bool(c)], 'answer': [f'gold {i}'], 'over_length': [False]},
                    **{k: [v] for k, v in x.items()}) for i, (c, x) in enumerate(zip(correct, extra))]
    _dump(os.path.join(run, 'results', model, f'{abbr}.json'),
          {'accuracy': 100.0 * float(np.mean(correct)), 'details': details,
           'counts': [{'n': len(details), 'over_length': 0}], 'package_version': [__version__]})
    _dump(os.path.join(run, 'predictions', model, f'{abbr}.json'),
          {str(i): {'origin_prompt': prompts[i], 'prediction': 'x' if c else 'y', 'gold': f'gold {i}'}
           for i, c in enumerate(correct)})


def write_run(run: str, models: Sequence[str], ability: Callable[[str, str, str], float],
              tiers: Dict[str, Sequence[str]], samples: int = 100, entries: int = 58, per_entry: int = 26,
              entry_sd: float = 1.0, seed: int = 0, longbio_cells: Sequence[str] = LONGBIO_CELLS) -> str:
    """Write the run under ``run`` (a run directory: ``<work_dir>/<timestamp>``) and return it. ``tiers``:
    {benchmark: its tiers} for the benchmarks to write (babilong, nolima, longbio)."""
    rng = np.random.default_rng(seed)
    datasets = []
    for bench, bench_tiers in tiers.items():
        ev = dict(evaluator=dict(type=EVALUATORS[bench]))
        for tier in bench_tiers:
            if bench == 'babilong':
                datasets += [dict(abbr=f'babilong_{t}_{tier}', eval_cfg=ev) for t in BABILONG_TASKS]
            elif bench == 'longbio':
                datasets += [dict(abbr=f'longbio_{c}_{tier}', eval_cfg=ev) for c in longbio_cells]
            else:
                datasets += [dict(abbr=f'nolima_main_{tier}@{m}', eval_cfg=ev) for m in models]
    combos = []
    for m in models:
        mine = [d for d in datasets if '@' not in d['abbr'] or d['abbr'].endswith(f'@{m}')]
        combos.append(dict(models=[dict(abbr=m)], datasets=mine))
        entry_shift = rng.normal(0, entry_sd, entries)   # the same hard entries for every model
        for bench, bench_tiers in tiers.items():
            for tier in bench_tiers:
                p = ability(m, bench, tier)
                if bench == 'babilong':
                    for t in BABILONG_TASKS:
                        won = rng.random(samples) < p
                        _write_dataset(run, m, f'babilong_{t}_{tier}', won, [{}] * samples,
                                       [f'{t} story {i} at {tier}' for i in range(samples)])
                elif bench == 'longbio':
                    for c in longbio_cells:
                        won = rng.random(samples) < p
                        _write_dataset(run, m, f'longbio_{c}_{tier}', won, [{'seed': i} for i in range(samples)],
                                       [f'{c} bio {i} at {tier}' for i in range(samples)])
                else:
                    q = 1 / (1 + np.exp(-(_logit(p) + entry_shift)))
                    won = (rng.random((entries, per_entry)) < q[:, None]).ravel()
                    extra = [dict(entry_id=f'e{e}', pair=f'e{e}-onehop', test_id=f'e{e}_T{k}', haystack=f'book{k % 5}',
                                  depth=(k % 26) / 25, question_type='onehop')
                             for e in range(entries) for k in range(per_entry)]
                    _write_dataset(run, m, f'nolima_main_{tier}@{m}', won, extra,
                                   [f'{m} haystack {e}/{k} at {tier}' for e in range(entries) for k in range(per_entry)])
    model_cfgs = [dict(abbr=m, type='opencompass_longctx.demo.tiny_chat.TinyChatModel', path=f'synthetic/{m}',
                       max_seq_len=10 ** 7) for m in models]
    os.makedirs(os.path.join(run, 'configs'), exist_ok=True)
    with open(os.path.join(run, 'configs', 'synthetic.py'), 'w', encoding='utf-8') as f:
        f.write(f'models = {model_cfgs!r}\ndatasets = {datasets!r}\n'
                f'model_dataset_combinations = {[dict(models=[c for c in model_cfgs if c["abbr"] == x["models"][0]["abbr"]], datasets=x["datasets"]) for x in combos]!r}\n')
    return run


# The made-up leaderboard of ``python -m opencompass_longctx.demo.synthetic_run`` (the README's second picture):
# (name, accuracy at the shortest tier, points lost per doubling of the length).
SHOWCASE = (('steady-70b', 0.93, 0.02), ('fast-fader-70b', 0.96, 0.12), ('mid-32b', 0.85, 0.06),
            ('long-native-14b', 0.78, 0.02), ('mid-14b', 0.80, 0.08), ('small-8b', 0.72, 0.09),
            ('short-window-8b', 0.75, 0.25), ('tiny-1b', 0.45, 0.07))
SHOWCASE_TIERS = {'babilong': ['0k', '1k', '2k', '4k', '8k', '16k', '32k'],
                  'nolima': ['250', '500', '1k', '2k', '4k', '8k', '16k', '32k'],
                  'longbio': ['0k', '1k', '2k', '4k', '8k', '16k']}


def main(argv=None) -> int:
    """Write the showcase run under WORK_DIR and print its run directory (then: ``longctx-report RUN``)."""
    import argparse
    ap = argparse.ArgumentParser(description='Write a finished run of made-up models (no model is run) for '
                                             'longctx-report: the leaderboard at a glance.')
    ap.add_argument('work_dir')
    ap.add_argument('--samples', type=int, default=100)
    args = ap.parse_args(argv)
    shape = {name: (top, loss) for name, top, loss in SHOWCASE}

    def ability(model: str, bench: str, tier: str) -> float:
        top, loss = shape[model]
        return max(0.02, top - loss * SHOWCASE_TIERS[bench].index(tier))

    from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS as ALL_CELLS
    run = write_run(os.path.join(args.work_dir, '20260101_000000'), [m for m, _, _ in SHOWCASE], ability,
                    SHOWCASE_TIERS, samples=args.samples, longbio_cells=[c['cell'] for c in ALL_CELLS])
    print(run)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
