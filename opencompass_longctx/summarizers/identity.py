"""What a model row is: the settings of its config that decide its answers, so that a merge tells a model from
another one that happens to share its abbr.

A model's identity is read from its run's config dump (``<run>/configs/*.py``: the model config exactly as
OpenCompass ran it, written by OpenCompass itself for every run, old ones included), not from a copy a summarizer
would store beside the results: a second copy could disagree with what ran, and runs made before it existed would
have none. Every key of the config counts (type, path or hub id, revision, generation settings, engine and RoPE
settings, meta template, post-processing, max_seq_len, max_out_len, ...) except those that only say where and how
fast it runs (:data:`SCHEDULING`: batch size, run_cfg, device map, tensor parallelism, KV-cache share). A key one
config leaves out takes its class's default; a key only one config has and whose class gives no default is not
compared (an older config may not have had it), and the merge notes name it. A path is compared by its last
component, so the same model directory under another root (another cluster) is the same model.
"""
import json
import os
from typing import Dict, List, Tuple

# Keys that decide where and how fast a model runs, not what it answers.
SCHEDULING = frozenset({'abbr', 'batch_size', 'run_cfg', 'max_num_workers', 'caveats', 'declared_geometry'})
NESTED_SCHEDULING = {
    'model_kwargs': {'device_map'},
    'engine_config': {'max_batch_size', 'cache_max_entry_count', 'tp', 'dp', 'device_num', 'max_prefill_token_num',
                      'num_tokens_per_iter', 'max_prefill_iters'},
}
PLACES = ('path', 'tokenizer_path')


def _plain(v):
    return json.loads(json.dumps(v, sort_keys=True, default=str))


def _dotted(typ) -> str:
    return typ if isinstance(typ, str) or typ is None else f'{typ.__module__}.{typ.__qualname__}'


def init_defaults(dotted: str) -> Dict[str, object]:
    """The literal default arguments of a class's own ``__init__``, read from its source file without importing
    it (an evaluator's module pulls in OpenCompass's model stack: seconds per report); {} when not found."""
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


def model_identity(cfg: Dict) -> Dict[str, object]:
    """The answer-deciding fields of a model config (JSON-plain, the class's literal defaults filled in)."""
    typ = _dotted(cfg.get('type'))
    out = dict(init_defaults(typ)) if typ else {}
    out.update({k: v for k, v in dict(cfg).items() if k not in SCHEDULING})
    out['type'] = typ
    for key, drop in NESTED_SCHEDULING.items():
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k not in drop}
    return _plain(out)


def _place(v):
    return os.path.basename(os.path.normpath(v)) if isinstance(v, str) and v else v


def _same(key: str, a, b) -> bool:
    return _place(a) == _place(b) if key in PLACES else a == b


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


def _short(v, limit: int = 80) -> str:
    text = json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def compare(a: Dict, b: Dict) -> Tuple[List[str], List[str]]:
    """(the differing fields as ``key: A-value / B-value`` texts, the keys only one identity has: not compared)."""
    shared = sorted((k for k in a if k in b), key=lambda k: (k not in ('type', 'path'), k))
    keys = [leaf for k in shared if not _same(k, a[k], b[k]) for leaf in _leaves(a[k], b[k], k)]
    return ([f'{k}: {_short(_get(a, k))} / {_short(_get(b, k))}' for k in keys],
            sorted(set(a) ^ set(b)))
