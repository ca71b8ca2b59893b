"""What a model row is: the settings of its config that decide its answers and what identifies its weights, so that
a merge tells a model from another one that happens to share its abbr, and names each one it keeps apart.

A model's settings are read from its run's config dump (``<run>/configs/*.py``: the model config exactly as
OpenCompass ran it, written by OpenCompass itself for every run, old ones included), not from a copy a summarizer
would store beside the results: a second copy could disagree with what ran, and runs made before it existed would
have none. Every key of the config counts (type, path or hub id, revision, generation settings, engine and RoPE
settings, meta template, post-processing, max_seq_len, max_out_len, ...) except those that only say where and how
fast it runs (:data:`SCHEDULING`: batch size, run_cfg, device map, tensor parallelism, KV-cache share). A key one
config leaves out takes its class's default; a key only one config has and whose class gives no default is not
compared (an older config may not have had it), and the merge notes name it.

Where a model lives (``path``, ``tokenizer_path``) is not a name: checkpoints are called ``final``, ``latest``,
``hf`` or ``checkpoint-1000`` in many folders. A run records, for each model directory it can reach, its full
resolved path and a fingerprint of its weights (:mod:`opencompass_longctx.weights`, ``<run>/longctx_models.json``).
Two places are the same model when both runs recorded a fingerprint and the fingerprints are equal (the same
weights under another root, on another cluster), and otherwise when their full paths are equal (resolved where
recorded), never by a path's last component. Two different models under one abbr are kept apart as two rows, each
named by :func:`labels`.
"""
import hashlib
import functools
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.weights import PLACES

# Keys that decide where and how fast a model runs, not what it answers.
SCHEDULING = frozenset({'abbr', 'batch_size', 'run_cfg', 'max_num_workers', 'caveats', 'declared_geometry'})
NESTED_SCHEDULING = {
    'model_kwargs': {'device_map'},
    'engine_config': {'max_batch_size', 'cache_max_entry_count', 'tp', 'dp', 'device_num', 'max_prefill_token_num',
                      'num_tokens_per_iter', 'max_prefill_iters'},
}


def _plain(v):
    return json.loads(json.dumps(v, sort_keys=True, default=str))


def _dotted(typ) -> str:
    return typ if isinstance(typ, str) or typ is None else f'{typ.__module__}.{typ.__qualname__}'


def init_defaults(dotted: str) -> Dict[str, object]:
    """The literal default arguments of a class's own ``__init__``, read from its source file without importing
    it (an evaluator's module pulls in OpenCompass's model stack: seconds per report); {} when not found. Read once
    per class and report (a leaderboard asks for each of its thousands of result files)."""
    return dict(_init_defaults(dotted))


@functools.lru_cache(maxsize=None)
def _init_defaults(dotted: str) -> Dict[str, object]:
    import ast
    import importlib.util
    mod, _, name = dotted.rpartition('.')
    top, *rest = mod.split('.')
    try:
        spec = importlib.util.find_spec(top)  # a top-level package is found without being imported
    except (ImportError, ValueError):
        return {}
    for root in (spec.submodule_search_locations or []) if spec else []:
        base = os.path.join(root, *rest)
        src = next((f for f in (base + '.py', os.path.join(base, '__init__.py')) if os.path.isfile(f)), None)
        if src is None:
            continue
        try:
            tree = ast.parse(open(src, encoding='utf-8').read())
        except (OSError, SyntaxError, ValueError):
            return {}
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == '__init__'):
                args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
                out = {}
                for a, d in zip(args, fn.args.defaults):
                    try:
                        out[a.arg] = ast.literal_eval(d)
                    except ValueError:
                        pass
                return out
        return {}
    return {}


def model_identity(cfg: Dict, recorded: Optional[Dict] = None) -> Dict[str, object]:
    """The answer-deciding fields of a model config (JSON-plain, the class's literal defaults filled in) and, under
    :data:`WHERE`, each place (``path``, ``tokenizer_path``) as its run recorded it (``recorded``: the model's entry of
    :func:`read_recorded`) or as the config writes it."""
    typ = _dotted(cfg.get('type'))
    out = dict(init_defaults(typ)) if typ else {}
    out.update({k: v for k, v in dict(cfg).items() if k not in SCHEDULING})
    out['type'] = typ
    for key, drop in NESTED_SCHEDULING.items():
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k not in drop}
    out[WHERE] = {key: _place(out.get(key), (recorded or {}).get(key)) for key in PLACES if out.get(key)}
    return _plain(out)


WHERE = '@where'   # in an identity: {place key: {'path': full path, 'weights': fingerprint or None}}


def _place(given, recorded: Optional[Dict]) -> Dict[str, Optional[str]]:
    if isinstance(recorded, dict) and recorded.get('given') == given and recorded.get('path'):
        return {'path': recorded['path'], 'weights': recorded.get('weights')}
    return {'path': os.path.normpath(given) if isinstance(given, str) else given, 'weights': None}


def same_place(a: Optional[Dict], b: Optional[Dict]) -> bool:
    """The same weights (both fingerprinted) or, where one run has no fingerprint, the same full path."""
    a, b = a or {}, b or {}
    if a.get('weights') and b.get('weights'):
        return a['weights'] == b['weights']
    return a.get('path') == b.get('path')


def _same(key: str, a, b) -> bool:
    return True if key in PLACES else a == b   # (the places are compared by same_place)


def _leaves(a, b, prefix: str) -> List[str]:
    """The dotted keys under which two values differ (a dict is opened, anything else compared whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [k for key in sorted(set(a) | set(b), key=str)
                for k in _leaves(a.get(key, '<absent>'), b.get(key, '<absent>'), f'{prefix}.{key}')]
    return [] if a == b else [prefix]


def _get(d: Dict, dotted: str):
    for part in dotted.split('.'):
        d = d.get(part, '<absent>') if isinstance(d, dict) else '<absent>'
    return d


def _shown(values: Sequence, limit: int = 80) -> List[str]:
    """Values as JSON texts of at most ``limit`` characters that keep where they first differ in sight: a prefix
    they all share is cut to its last few characters (``...``) before the tail is cut, so two long values that
    differ only near their ends never read the same."""
    texts = [json.dumps(v, sort_keys=True, ensure_ascii=False, default=str) for v in values]
    if all(len(t) <= limit for t in texts):
        return texts
    out = []
    for i, t in enumerate(texts):   # each from a little before where it parts from the value most like it
        shared = max((len(os.path.commonprefix([t, u])) for j, u in enumerate(texts) if j != i and u != t), default=0)
        start = max(0, shared - 16)
        cut = ('...' if start else '') + t[start:]
        out.append(cut if len(cut) <= limit else cut[:limit - 3] + '...')
    return out


def compare(a: Dict, b: Dict) -> Tuple[List[str], List[str]]:
    """(the differing fields as ``key: A-value / B-value`` texts, the keys only one identity has: not compared). A
    place differs as its full path (and its weights' fingerprint, where both runs recorded one)."""
    shared = sorted((k for k in a if k in b and k != WHERE), key=lambda k: (k not in ('type', 'path'), k))
    keys = [leaf for k in shared if not _same(k, a[k], b[k]) for leaf in _leaves(a[k], b[k], k)]
    wa, wb = a.get(WHERE) or {}, b.get(WHERE) or {}
    places = []
    for key in PLACES:
        if (key in wa or key in wb) and not same_place(wa.get(key), wb.get(key)):
            pa, pb = wa.get(key) or {}, wb.get(key) or {}
            # a place is shown whole: its full path is what tells the two apart and where to look
            whole = [json.dumps(p.get('path'), ensure_ascii=False) for p in (pa, pb)]
            places.append(f'{key}: {whole[0]} / {whole[1]}' + (
                f' (weights {pa["weights"][:12]} / {pb["weights"][:12]})' if pa.get('weights') and pb.get('weights')
                else ''))
    texts = places + ['{}: {} / {}'.format(k, *_shown([_get(a, k), _get(b, k)])) for k in keys if k not in PLACES]
    return texts, sorted((set(a) ^ set(b)) - set(PLACES))


def moved(a: Dict, b: Dict) -> List[str]:
    """The places at another full path with the same weights (one model under another root), as texts."""
    wa, wb = a.get(WHERE) or {}, b.get(WHERE) or {}
    return [f'{key} {wa[key]["path"]} and {wb[key]["path"]} hold the same weights ({wa[key]["weights"][:12]})'
            for key in PLACES if key in wa and key in wb and wa[key].get('weights')
            and wa[key]['path'] != wb[key]['path'] and same_place(wa[key], wb[key])]


# ---------------------------------------------------------------------------------------------- naming
def labels(identities: Sequence[Dict]) -> List[str]:
    """What tells each of several models under one abbr apart, shown after the abbr (``final [exp1]``): the shortest
    distinguishing part of their paths (the components they share at the end dropped, then as few trailing ones as
    tell them all apart), else the first setting whose values all differ (``max_out_len=100``), else their weights'
    fingerprints, else their order by content. The same identities give the same labels in any order."""
    paths = [((i.get(WHERE) or {}).get('path') or {}).get('path') for i in identities]
    if all(isinstance(p, str) for p in paths) and len(set(paths)) == len(paths):
        return path_parts(paths)
    keys = sorted({k for i in identities for k in i if k not in (WHERE,) + PLACES},
                  key=lambda k: (k != 'type', k))
    for key in keys:
        values = [json.dumps(i.get(key, '<absent>'), default=str).strip('"').rpartition('.')[2]
                  for i in identities] if key == 'type' else _shown([i.get(key, '<absent>') for i in identities], 40)
        if len(set(values)) == len(values):
            return values if key == 'type' else [f'{key}={v}' for v in values]
    weights = [(((i.get(WHERE) or {}).get('path') or {}).get('weights') or '')[:12] for i in identities]
    if all(weights) and len(set(weights)) == len(weights):
        return [f'weights {w}' for w in weights]
    digests = [hashlib.sha256(json.dumps(i, sort_keys=True, default=str).encode()).hexdigest() for i in identities]
    rank = {d: n for n, d in enumerate(sorted(digests), 1)}
    return [f'#{rank[d]}' for d in digests]


def path_parts(paths: Sequence[str]) -> List[str]:
    """The shortest trailing parts that tell distinct paths apart, after the components all of them end with:
    ``/ckpt/exp1/final``, ``/ckpt/exp2/final`` -> ``exp1``, ``exp2``."""
    parts = [[c for c in p.replace('\\', '/').split('/') if c] for p in paths]
    common = 0
    while all(len(x) > common for x in parts) and len({x[len(x) - 1 - common] for x in parts}) == 1:
        common += 1
    rest = [x[:len(x) - common] for x in parts]
    for k in range(1, max(len(x) for x in rest) + 1):
        tails = ['/'.join(x[-k:]) for x in rest]
        if len(set(tails)) == len(tails) and all(tails):
            return tails
    return list(paths)
