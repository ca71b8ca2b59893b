"""What a resume (``opencompass ... -r``) checks before it reuses anything.

Saved predictions. OpenCompass reuses every finished predictions file (``predictions/<model>/<dataset>.json``) and
continues an interrupted dataset at ``len(tmp)`` of its saved batches (``tmp_<dataset>.jsonl``); it never looks at
what they hold. A run resumed under another config (another prompt variant, other samples) would mix two datasets
under one name, and a saved index outside the dataset ends the task with ``KeyError``. :func:`stale_predictions`
compares each saved entry with the current dataset: its indices must be ``0..n-1`` of the current dataset (all of
them for a finished file), its whole ``origin_prompt`` must be exactly the prompt the model would receive now (a
sha256 of each, compared: the dataset's prompt template as GenInferencer applies it, then the model's meta template
as OpenCompass's own template parser renders it, a chat model's messages or a plain model's text, as the saved entry
is), and the saved ``gold`` must equal the current one. A prompt that only lost or gained text (``use_instruction=False``:
the new prompt is part of the old one) is another prompt. A file that differs is set aside (renamed to
``<file>.set-aside-<time>``, with the dataset's results file, so its evaluation runs again) and the dataset is redone
from its first sample; the plan (``--dry-run -r`` too) lists each one with the first sample that differs and
where.

Nothing to resume. ``-r`` in a directory no run has used (a mistyped ``-w`` or timestamp) makes OpenCompass log
"No previous results to reuse!" and start the whole run. :func:`check_reuse` stops it with one line that names the
directory: it asks on a terminal, and otherwise refuses unless ``LONGCTX_START_FRESH=1``.
"""
import dataclasses
import hashlib
import json
import os
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple
from opencompass_longctx.errors import LongCtxError, opencompass_args
from opencompass_longctx.util import plural

START_FRESH_ENV = 'LONGCTX_START_FRESH'
SET_ASIDE = '.set-aside-'


class NothingToResume(LongCtxError, RuntimeError):
    """``-r`` names a directory that holds no earlier run."""


@dataclasses.dataclass
class Stale:
    """Saved predictions of one (model, dataset) that do not belong to the current dataset."""
    model: str
    dataset: str
    path: str          # the saved file (a finished predictions file or OpenCompass's tmp_*.jsonl)
    reason: str
    results: str = ''  # the dataset's results file, set aside with it when present
    moved_to: str = ''


# ---- the current dataset, as GenInferencer renders it -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Sample:
    """One sample of the current dataset as the model would receive it: its prompt rendered the ways OpenCompass
    renders one (``messages``: a chat model's, by ``APITemplateParser``; ``prefilled``: the same with a final answer
    prefix kept, as the package's chat wrappers send LongBioBench's (:mod:`opencompass_longctx.models.prefill`);
    ``text``: a model without a chat template's, by ``LMTemplateParser``; each with the model's meta template), the
    texts of its messages and its gold answer."""
    messages: object
    text: object
    pieces: Tuple[str, ...]
    gold: object
    prefilled: object = None

    @classmethod
    def of(cls, prompt, gold=None, meta_template: Optional[Dict] = None) -> 'Sample':
        """The sample of a prompt (a string or a PromptList) for a model with ``meta_template``."""
        from opencompass.models.base import LMTemplateParser
        from opencompass.models.base_api import APITemplateParser

        from opencompass_longctx.models.prefill import PrefillTemplateParser
        chat = meta_template or dict(round=[dict(role='HUMAN', api_role='HUMAN'), dict(role='SYSTEM', api_role='HUMAN'),
                                            dict(role='BOT', api_role='BOT', generate=True)])  # OpenCompass's default
        try:
            messages = APITemplateParser(chat).parse_template(prompt, mode='gen')
            prefilled = PrefillTemplateParser(chat).parse_template(prompt, mode='gen')
        except (TypeError, KeyError, IndexError, AssertionError, ValueError):   # a prompt no chat model takes
            messages = prefilled = None
        text = LMTemplateParser(meta_template).parse_template(prompt, mode='gen')
        return cls(_plain(messages), _plain(text), tuple(prompt_pieces(prompt)), gold,
                   None if prefilled == messages else _plain(prefilled))

    def differs(self, saved) -> Optional[str]:
        """None when the saved ``origin_prompt`` is this sample's prompt exactly (their sha256 are equal); else
        where they first differ."""
        now = self.text if isinstance(saved, str) else self.messages
        if saved is not None and prompt_digest(saved) == prompt_digest(now):
            return None
        if not isinstance(saved, str) and self.prefilled is not None:   # sent with its answer prefix
            if saved is not None and prompt_digest(saved) == prompt_digest(self.prefilled):
                return None
            if saved and isinstance(saved[-1], dict) and saved[-1].get('prefill'):
                now = self.prefilled
        return first_difference(saved, now)


def prompt_digest(prompt) -> str:
    """The sha256 of a prompt, a text or a list of messages, as JSON reads it back."""
    return hashlib.sha256(json.dumps(_plain(prompt), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def first_difference(saved, now) -> str:
    """Where two prompts first differ, in a few words (their texts compared: a list of messages as their texts)."""
    a, b = ('\n'.join(prompt_pieces(x)) if isinstance(x, (str, list)) else json.dumps(_plain(x)) for x in (saved, now))
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return (f'from character {at:,} of {len(a):,} saved / {len(b):,} now: saved {a[at:at + 30]!r}, '
            f'now {b[at:at + 30]!r}')


def current_samples(dataset_cfg: Dict, model_cfg: Optional[Dict] = None) -> List[Sample]:
    """Each sample of the dataset as OpenCompass's GenInferencer makes it (the same retriever and prompt template)
    for ``model_cfg`` (its meta template; no model: none)."""
    from opencompass.registry import ICL_PROMPT_TEMPLATES, ICL_RETRIEVERS
    from opencompass.utils import build_dataset_from_cfg
    dataset = build_dataset_from_cfg(dataset_cfg)
    infer_cfg = dataset_cfg['infer_cfg']
    retriever = ICL_RETRIEVERS.build(dict(infer_cfg['retriever'], dataset=dataset))
    ice_template, prompt_template = (ICL_PROMPT_TEMPLATES.build(infer_cfg[k]) if k in infer_cfg else None
                                     for k in ('ice_template', 'prompt_template'))
    replace = infer_cfg.get('inferencer', {}).get('gen_field_replace_token', '')
    reader = retriever.dataset_reader
    golds = reader.dataset['test'][reader.output_column] if reader.output_column else None
    meta = (model_cfg or {}).get('meta_template')
    out = []
    for idx, ice_idx in enumerate(retriever.retrieve()):
        ice = retriever.generate_ice(ice_idx, ice_template=ice_template)
        prompt = retriever.generate_prompt_for_generate_task(idx, ice, gen_field_replace_token=replace,
                                                             ice_template=ice_template, prompt_template=prompt_template)
        out.append(Sample.of(prompt, None if golds is None else golds[idx], meta))
    return out


def issued_in_reuse_order(dataset_cfg: Dict) -> bool:
    """Whether the dataset's inferencer issues its prompts in prefix-reuse order (LongCtxGenInferencer's
    ``reuse_order``, on by default): its saved batches then hold samples in that order."""
    inferencer = dataset_cfg.get('infer_cfg', {}).get('inferencer', {})
    kind = inferencer.get('type')
    name = kind if isinstance(kind, str) else getattr(kind, '__name__', '')
    return name.rsplit('.', 1)[-1] == 'LongCtxGenInferencer' and inferencer.get('reuse_order', True) is not False


def reuse_issue_order(current: Sequence[Sample]) -> List[int]:
    """The dataset indices of :func:`current_samples` in LongCtxGenInferencer's issue order (the same texts, the same
    sort): a tmp file of an ordered run holds the first samples of this list."""
    from opencompass_longctx.prefix_reuse import reuse_order
    return list(reuse_order(['\n'.join(s.pieces) for s in current]))


def prompt_pieces(prompt) -> List[str]:
    """The text of a prompt: a string, or each message of a PromptList / chat list (section markers skipped)."""
    if isinstance(prompt, str):
        return [prompt]
    texts = []
    for item in prompt:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict):
            text = item.get('prompt', item.get('content'))
            if isinstance(text, str):
                texts.append(text)
    return [t for t in texts if t]


def _plain(value):
    """A gold answer as it reads back from JSON (tuples are lists, other objects their str)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


# ---- saved entries -----------------------------------------------------------------------------------------------

def read_saved(path: str) -> Dict[str, Dict]:
    """``{idx: entry}`` of a finished predictions file or of OpenCompass's tmp_*.jsonl (raises ValueError)."""
    with open(path, encoding='utf-8') as f:
        if path.endswith('.jsonl'):
            entries = {}
            for line in f:
                if line.strip():
                    item = json.loads(line)
                    entries[str(item.pop('idx'))] = item
            return entries
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError('not a JSON object keyed by sample index')
    return data


def mismatch(saved: Dict[str, Dict], current: Sequence[Sample], finished: bool,
             order: Optional[Sequence[int]] = None) -> str:
    """Why saved entries do not belong to the current dataset ('' when each one does). Each entry is compared with
    the current sample of its own index first (a changed prompt or gold answer is named as such); then the saved
    indices must be the first ones issued: those of ``order`` (:func:`reuse_issue_order`), or 0, 1, ... when None."""
    n = len(current)
    outside = sorted(k for k in saved if not (k.isdigit() and int(k) < n))
    if outside:
        return (f"sample index {', '.join(outside[:3])}{' ...' if len(outside) > 3 else ''} is outside the current "
                f'dataset of {plural(n, "sample")}')
    for key in sorted(saved, key=int):   # the first sample that differs is named
        entry, sample = saved[key], current[int(key)]
        if not isinstance(entry, dict):
            return f'sample {key} is not a saved prediction'
        if 'gold' in entry and sample.gold is not None and entry['gold'] != _plain(sample.gold):
            return f'sample {key}: the saved gold answer differs from the current dataset\'s'
        where = sample.differs(entry.get('origin_prompt'))
        if where:
            return f'sample {key}: the saved prompt differs from the current dataset\'s (another prompt or config; {where})'
    first = [str(i) for i in (range(n) if order is None else order)][:len(saved)]
    missing = [k for k in first if k not in saved]
    if missing:
        issued = '' if order is None else ' issued'
        return f"the saved samples are not the first {len(saved)}{issued} (missing index {', '.join(missing[:3])})"
    if finished and len(saved) != n:
        return f'the finished predictions hold {plural(len(saved), "sample")}, the current dataset has {n}'
    return ''


def stale_predictions(combinations: Sequence[Dict], out_dir: str) -> Tuple[List[Stale], List[str]]:
    """Every saved predictions file (finished or tmp) of the run that does not match its current dataset, and a note
    for each one that could not be checked (its dataset does not build: the file is kept and reused as before)."""
    from opencompass.utils import get_infer_output_path, model_abbr_from_cfg

    from opencompass_longctx.run.resume import tmp_path
    results_dir = os.path.join(os.path.dirname(os.path.normpath(out_dir)), 'results')
    stale: List[Stale] = []
    unchecked: List[str] = []
    for comb in combinations:
        for model in comb['models']:
            for d in comb['datasets']:
                final = get_infer_output_path(model, d, out_dir)
                path = final if os.path.exists(final) else tmp_path(final)
                if not os.path.exists(path):
                    continue
                try:
                    saved = read_saved(path)
                except (OSError, ValueError, KeyError, TypeError, AttributeError):
                    continue        # unreadable: OpenCompass moves a tmp file aside itself (resume.saved_samples)
                if not saved:
                    continue
                try:
                    current = current_samples(d, model)
                except Exception as e:  # noqa: BLE001 - the run's own checks and the task report the dataset
                    unchecked.append(f'{model_abbr_from_cfg(model)}/{d.get("abbr", "")}: {os.path.basename(path)} '
                                     f'not checked against the dataset, which does not build ({type(e).__name__}: '
                                     f'{str(e).splitlines()[0] if str(e) else ""})')
                    continue
                ordered = path != final and issued_in_reuse_order(d)   # a tmp file holds the first samples issued
                reason = mismatch(saved, current, path == final, reuse_issue_order(current) if ordered else None)
                if reason:
                    stale.append(Stale(model_abbr_from_cfg(model), d.get('abbr', ''), path, reason,
                                       get_infer_output_path(model, d, results_dir)))
    return stale, unchecked


def set_aside(stale: Sequence[Stale], logger=None) -> None:
    """Rename each stale file (and its dataset's results file) to ``<file>.set-aside-<time>``: kept, never reused."""
    stamp = time.strftime('%Y%m%d_%H%M%S')
    for s in stale:
        s.moved_to = s.path + SET_ASIDE + stamp
        os.replace(s.path, s.moved_to)
        if s.results and os.path.exists(s.results):
            os.replace(s.results, s.results + SET_ASIDE + stamp)
        if logger is not None:
            logger.warning(f'resume: {s.model}/{s.dataset} starts from zero: {s.reason}; {s.path} set aside as '
                           f'{s.moved_to}')


# ---- -r where nothing was run --------------------------------------------------------------------------------------

def reuse_requested() -> Optional[str]:
    """The ``-r/--reuse`` value of the running ``opencompass`` command (read with its own parser), or None."""
    return getattr(opencompass_args(), 'reuse', None)


def nothing_to_resume(work_dir: str) -> bool:
    """No predictions, results or task logs of an earlier run in the run directory."""
    for sub in ('predictions', 'results', 'logs'):
        for _, _, files in os.walk(os.path.join(work_dir, sub)):
            if files:
                return False
    return True


_confirmed: List[str] = []   # run directories the user agreed to start from zero (asked once per process)


def check_reuse(work_dir: str, dry: bool) -> str:
    """'' unless ``-r`` was given for a directory with nothing to resume; then the plan's line, after asking on a
    terminal (raises :class:`NothingToResume` on no, or without a terminal unless ``LONGCTX_START_FRESH=1``)."""
    if not reuse_requested() or not nothing_to_resume(work_dir) or work_dir in _confirmed:
        return ''
    line = f'-r: nothing to resume in {work_dir} (no predictions, results or logs of an earlier run there)'
    if dry:
        return line + '; the run would start from zero.'
    if os.environ.get(START_FRESH_ENV) == '1':
        _confirmed.append(work_dir)
        return line + f'; starting from zero ({START_FRESH_ENV}=1).'
    if sys.stdin is not None and sys.stdin.isatty():
        answer = input(line + '. Start the whole run from zero there? [y/N] ')
        if answer.strip().lower() in ('y', 'yes'):
            _confirmed.append(work_dir)
            return line + '; starting from zero (confirmed).'
        raise NothingToResume(line + '; stopped. Check -w and the -r timestamp.')
    raise NothingToResume(line + f'. Check -w and the -r timestamp, or set {START_FRESH_ENV}=1 (or drop -r) to '
                                 'start from zero.')
