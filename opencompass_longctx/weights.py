"""What identifies a model's weights, recorded by the run that evaluates it (read by the merge's identities,
:mod:`opencompass_longctx.leaderboard.identity`).

A checkpoint's directory name says little (``final``, ``latest``, ``hf``), and a report may be made on a machine
that cannot reach the weights. So the run, where it can, writes ``<run>/longctx_models.json``: for each model and
each of its places (``path``, ``tokenizer_path``) the path as the config gives it, its full resolved path and a
fingerprint of the directory (:func:`weights_fingerprint`): a sha256 over ``config.json`` and the tokenizer files
(whole) and, for each weight file, its name, its size and three 64 KiB samples of its bytes (start, middle, end:
two fine-tunes of one architecture differ there, and a 70B model is read in a second; hashing every byte would take
minutes). ``LongCtxPartitioner``, ``LongCtxEvalPartitioner`` and ``LongCtxSummarizer`` write it in OpenCompass's
main process; a model already recorded keeps its first record (a resumed run does not rewrite it).
"""
import hashlib
import json
import os
from typing import Dict, Optional, Sequence, Tuple

from opencompass_longctx.util import atomic_write_text, sha256_file

PLACES = ('path', 'tokenizer_path')
MODELS_FILE = 'longctx_models.json'
_SAMPLE = 1 << 16
_WEIGHTS = ('.safetensors', '.bin', '.pt', '.pth', '.gguf', '.ckpt', '.msgpack', '.h5', '.npz')
_WHOLE = ('config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer.model', 'tokenizer_config.json',
          'vocab.json', 'merges.txt', 'special_tokens_map.json', '.tiktoken', '.index.json')


def _sampled(path: str, size: int) -> str:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for at in sorted({0, max(size // 2 - _SAMPLE // 2, 0), max(size - _SAMPLE, 0)}):
            f.seek(at)
            h.update(f.read(_SAMPLE))
    return h.hexdigest()


def weights_fingerprint(directory: str) -> Optional[str]:
    """A sha256 of what identifies a model directory (see the module docstring), or None when it is not a
    directory or holds neither a config.json nor a weight or tokenizer file."""
    if not isinstance(directory, str) or not os.path.isdir(directory):
        return None
    entries = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        for name in sorted(files):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, directory).replace(os.sep, '/')
            try:
                if name.endswith(_WEIGHTS):
                    size = os.path.getsize(full)
                    entries.append([rel, size, _sampled(full, size)])
                elif name.endswith(_WHOLE):
                    entries.append([rel, os.path.getsize(full), sha256_file(full)])
            except OSError:
                return None
    if not entries:
        return None
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def record_models(work_dir: str, models: Sequence[Tuple[str, Dict]]) -> Optional[str]:
    """Add to ``<work_dir>/longctx_models.json`` each model (``(abbr, config)``) it does not hold yet: for each place
    the path as given, its full resolved path and the weights' fingerprint (None where the place is no local
    directory, e.g. a hub id). The first record of a model is kept (a resumed run does not rewrite it). Returns the
    file, or None when there is no such directory or nothing could be written (a record is never worth stopping a
    run for)."""
    if not os.path.isdir(work_dir):      # (OpenCompass makes the run's directory first: a call without one records nothing)
        return None
    path = os.path.join(work_dir, MODELS_FILE)
    known = read_recorded(work_dir)
    added = False
    for abbr, cfg in models:
        if abbr in known or not isinstance(cfg, dict):
            continue
        entry = {}
        for key in PLACES:
            given = cfg.get(key)
            if isinstance(given, str) and given:
                local = os.path.isdir(given)
                entry[key] = {'given': given, 'path': os.path.realpath(given) if local else os.path.normpath(given),
                              'weights': weights_fingerprint(given) if local else None}
        known[abbr] = entry
        added = True
    if added:
        try:
            atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True))
        except OSError:
            return None
    return path


def read_recorded(work_dir: str) -> Dict[str, Dict]:
    """``{model abbr: {place key: {'given', 'path', 'weights'}}}`` of a run ({} for a run that recorded none)."""
    try:
        with open(os.path.join(work_dir, MODELS_FILE), encoding='utf-8') as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_run_models(cfg) -> Optional[str]:
    """:func:`record_models` for a run's config (its ``work_dir`` and ``models``, each under OpenCompass's abbr)."""
    from opencompass.utils import model_abbr_from_cfg
    if not cfg.get('work_dir'):
        return None
    return record_models(cfg['work_dir'], [(model_abbr_from_cfg(m), m) for m in cfg.get('models') or []])
