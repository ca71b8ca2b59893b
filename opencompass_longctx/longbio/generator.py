"""LongBioBench sample generator: needles, haystack filled to a token budget, needle placement, prompts.

Determinism. Every sample has a seed derived with sha256 from (base seed, task family, n, sample index);
its needles (people, queried attribute, templates, questions) come from ``Random('<seed>:needles')`` and do
not depend on the tier, so the same questions are asked at every tier; the haystack comes from
``Random('<seed>:haystack:<tier>:...')`` and the needle slots from ``Random('<seed>:placement:...')``.
Python's ``random.Random`` seeded with a string is independent of PYTHONHASHSEED and of the machine; pools
and templates are read in file order. Standard, multi-standard, citation and IDK share the family
'standard' (the authors derive citation and IDK from the standard data), so their needles coincide.

Length. A tier is a budget of ``tier_tokens`` (1k = 1024 tokens) of the data tokenizer for the whole prompt
text: system message + user message + assistant prefix (chat-template tokens and the answer are not
counted; ``reserve_tokens`` holds some back; ``max_prompt_tokens`` caps the budget whatever the tier: a model whose
window is below the tier gets prompts built to its window, as the authors size theirs to the model they evaluate).
The data tokenizer defaults to ``tiktoken:qwen2``: the authors'
(Qwen2.5-7B-Instruct's vocabulary, split pattern and NFC normaliser, offline), so tier lengths are the
authors'. A Hugging Face tokenizer directory is counted through its exact tiktoken twin when it has one
(``tokenizer.counting``), so every count below, the final check included, costs a tiktoken pass.

The user message is cut into pieces at word boundaries ("Context:", " " + each bio without its trailing space, " " + the rest of the user message) whose token
counts add up exactly to the count of the whole text for regex-pretokenized BPE tokenizers (tiktoken, and
byte-level BPE such as Qwen's or Llama 3's): no growing context is ever re-tokenized. A bio's count is itself
a sum of memoised word counts (' ' + word), which a per-tokenizer self-test validates; a tokenizer that fails
it has each bio encoded whole, and any non-tiktoken tokenizer (``verify_length``) also has the assembled
prompt encoded whole, with haystack bios removed until it fits. Haystack bios are added while they fit; if
the prompt then ends more than 1% below the budget, the last bios are exchanged for a subset of the next
ones whose token sum fills the room (subset-sum over 128 candidates). At 2k and above every sample lands
within 1%, and at 1k the n = 1 cells do; at 1k a bio (~100 tokens) is ten times the 1% window and the n = 2
cells end up to 9% short (8.5% over the authors' 800 samples). ``strict`` idk fills its two rows' shared
context so that both are within 1% where the tier leaves room: at 1k and 2k a row can end up to 2.5% short.
``compat`` idk's unanswerable row is exempt by design: it is the answerable row's context with the answer
sentence deleted, asked 0-shot (the authors derive it from the standard data that way), so it is shorter
than its answerable row by that sentence and by the demos (:data:`IDK_COMPAT_SHORTFALL`).
Each row records its exact ``prompt_tokens`` and the tokenizer engine that counted it. 0k = the needles only.

Layout (the authors'): 3n needle bios = the test group and two demo groups (1 + max(2, shots) groups),
whatever the shots. Needle slots are drawn with replacement among haystack positions whose depth is in the
depth window and sorted; ``compat`` gives the first n slots to the test group (the authors' position bias),
``strict`` interleaves the groups at random (keeping each group's order). ``compat`` draws haystack people
with replacement from a 10,000-person pool excluding the needles (the authors' repeats), ``strict`` never
repeats a person.
"""
import bisect
import itertools
import json
import random
from dataclasses import dataclass, fields
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from opencompass_longctx import __version__, parallel
from opencompass_longctx.tables.tier_table import STANDARD_TIERS
from opencompass_longctx.tiers import Tier, canonical_tier, parse_tier
from opencompass_longctx.tokenizer.counting import QWEN2_TOKENIZER
from opencompass_longctx.longbio.counting import Counter
from opencompass_longctx.longbio.pools import load_pools
from opencompass_longctx.longbio.sample import Sample, Unit, bio_label
from opencompass_longctx.longbio.cells import CONTEXT_HEAD, LongBioConfigError, Prompt, check_mode, check_shots, resolve_cell
GENERATOR_VERSION = 1
TIER_UNIT = 1024
DEFAULT_TOKENIZER = QWEN2_TOKENIZER   # the authors' data tokenizer (Qwen2.5's vocabulary), offline
LOOKAHEAD = 128           # candidate bios examined when the greedy fill ends more than 1% below budget
MAX_EXCHANGE = 4          # at most this many trailing greedy bios are exchanged for better-fitting ones
FILL_TOLERANCE = 0.01
# compat idk: at most this many tokens separate the unanswerable row from its answerable row (the deleted
# answer sentence plus the 2-shot demos, minus the idk instruction): 34-82 over the authors' 800 samples with
# tiktoken:qwen2, 34-73 with cl100k_base, at any tier
IDK_COMPAT_SHORTFALL = 100


class TierTooSmallError(LongBioConfigError):
    """The needles and prompt alone do not fit the tier."""


def _check_unit_interval(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise LongBioConfigError(f'{name} must be a number in [0, 1], got {value!r}')
    return float(value)


@dataclass(frozen=True)
class CellSettings:
    """Everything that makes a cell's samples (validated)."""
    cell: str
    task: str
    n: int
    mode: str
    shots: int
    tier: str
    tier_tokens: int
    budget: int
    seed: int
    density: float
    depth: Tuple[float, float]
    reserve_tokens: int
    tokenizer: object
    verify: bool
    max_prompt_tokens: Optional[int] = None    # a cap on the budget whatever the tier (the model's window)

    @property
    def groups(self) -> int:
        return 1 + max(2, self.shots)

    def public(self) -> Dict:
        return dict(cell=self.cell, task=self.task, n=self.n, mode=self.mode, shots=self.shots, tier=self.tier,
                    tier_tokens=self.tier_tokens, budget_tokens=self.budget, seed=self.seed,
                    density=self.density, depth=list(self.depth), reserve_tokens=self.reserve_tokens,
                    tokenizer=self.tokenizer.name, tokenizer_fingerprint=self.tokenizer.fingerprint,
                    verify_length=self.verify, pools_sha256=load_pools().sha256,
                    **({'max_prompt_tokens': self.max_prompt_tokens} if self.max_prompt_tokens else {}),
                    generator_version=GENERATOR_VERSION, package_version=__version__)

    def __reduce__(self):
        """Sent to a build worker with the tokenizer's fingerprint: the tokenizer travels as its name and must
        load to the same fingerprint there."""
        return _settings_in_worker, ({f.name: getattr(self, f.name) for f in fields(self)}, self.tokenizer.fingerprint)


def _settings_in_worker(state: Dict, fingerprint: str) -> CellSettings:
    parallel.same_tokenizer(state['tokenizer'], fingerprint)
    return CellSettings(**state)


def cell_settings(tier, cell=None, task=None, n=None, mode='compat', shots=None, seed=2024, density=1.0,
              depth=(0.0, 1.0), reserve_tokens=0, tokenizer=None, verify_length=None,
              max_prompt_tokens=None) -> CellSettings:
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    c = resolve_cell(cell, task, n)
    check_mode(mode)
    shots = check_shots(c['task'], shots)
    t = tier if isinstance(tier, Tier) else canonical_tier(tier, TIER_UNIT)   # its one name (1024k is 1m)
    density = _check_unit_interval('density', density)
    if not isinstance(depth, (list, tuple)) or len(depth) != 2:
        raise LongBioConfigError(f'depth must be a (start, end) pair of fractions, got {depth!r}')
    d0, d1 = (_check_unit_interval('depth start', depth[0]), _check_unit_interval('depth end', depth[1]))
    if d0 > d1:
        raise LongBioConfigError(f'depth window start {d0} is after its end {d1}')
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise LongBioConfigError(f'seed must be an integer, got {seed!r}')
    if isinstance(reserve_tokens, bool) or not isinstance(reserve_tokens, int) or reserve_tokens < 0:
        raise LongBioConfigError(f'reserve_tokens must be a non-negative integer, got {reserve_tokens!r}')
    tok = get_tokenizer(DEFAULT_TOKENIZER if tokenizer in (None, '', 'default') else tokenizer)
    if max_prompt_tokens is not None and (isinstance(max_prompt_tokens, bool) or not isinstance(max_prompt_tokens, int)
                                          or max_prompt_tokens < 1):
        raise LongBioConfigError(f'max_prompt_tokens must be a positive integer (the longest prompt the evaluated '
                                 f'model takes, in the data tokenizer) or None, got {max_prompt_tokens!r}')
    tier_tokens = t.tokens(TIER_UNIT)
    if tier_tokens and reserve_tokens >= tier_tokens:
        raise LongBioConfigError(f'reserve_tokens={reserve_tokens} leaves nothing of tier {t.name} ({tier_tokens})')
    budget = max(tier_tokens - reserve_tokens, 0) if tier_tokens else 0
    if budget and max_prompt_tokens:
        budget = min(budget, max_prompt_tokens)
    verify = (tok.kind != 'tiktoken') if verify_length is None else bool(verify_length)
    return CellSettings(cell=c['cell'], task=c['task'], n=c['n'], mode=mode, shots=shots, tier=t.name,
                tier_tokens=tier_tokens, budget=budget, seed=seed, density=density, depth=(d0, d1),
                reserve_tokens=reserve_tokens, tokenizer=tok, verify=verify, max_prompt_tokens=max_prompt_tokens)


def _subset_sum(costs: Sequence[int], lo: int, hi: int) -> Optional[List[int]]:
    """Indices (ascending) of a subset of ``costs`` with the largest sum in [lo, hi], or None.

    Bitset dynamic programming: bit s of ``masks[i]`` says that sum s is reachable with items < i."""
    if hi < 0:
        return None
    lo = max(lo, 0)
    full = (1 << (hi + 1)) - 1
    masks = [1]
    for c in costs:
        masks.append((masks[-1] | (masks[-1] << c)) & full)
    reach = masks[-1] >> lo
    if not reach:
        return None
    target = lo + reach.bit_length() - 1
    picked = []
    for i in range(len(costs), 0, -1):
        if not (masks[i - 1] >> target) & 1:   # not reachable without item i-1: take it
            picked.append(i - 1)
            target -= costs[i - 1]
    return sorted(picked) if target == 0 else None


def _smallest_fitting_tier(needed: int, reserve: int) -> Optional[str]:
    for t in STANDARD_TIERS:
        if parse_tier(t).tokens(TIER_UNIT) - reserve >= needed:
            return t
    return None


class Generator:
    """Samples of one cell: ``rows(index)`` returns the dataset rows of sample ``index``."""

    def __init__(self, settings: CellSettings):
        self.settings = settings
        self.count = Counter(settings.tokenizer)
        self.params_json = json.dumps(settings.public(), sort_keys=True)

    # The prompt that the fill is computed for, and the extra rows derived from the same context.
    def _plan(self, s: Sample):
        settings = self.settings
        if settings.task == 'idk':
            if settings.mode == 'compat':   # the answer half is the standard cell's own 2-shot prompt
                return ('standard', check_shots('standard', None))
            return ('idk', 0)
        return (settings.task, settings.shots)

    def _budgeter(self, s: Sample, needles: List[Unit], task: str, shots: int):
        """total(hay_tokens, n_units): prompt tokens of a context of n_units bios (needles + haystack bios
        holding hay_tokens). Citation numbers in the demos are counted at the widest width they can have
        (all nines: an upper bound for digit-chunking tokenizers); the exact count is taken after placement."""
        needle_body = sum(u.tokens for u in needles)
        fixed_by_width, labels = {}, [0]

        def fixed(nunits: int) -> int:
            w = len(str(max(nunits - 1, 0))) if s.cite else 0
            if w not in fixed_by_width:
                wide = [[int('9' * max(w, 1))] * self.settings.n for _ in range(self.settings.groups)]
                fixed_by_width[w] = s.fixed_tokens(s.prompt(task, shots, wide)) + needle_body
            return fixed_by_width[w]

        def label_sum(nunits: int) -> int:
            if not s.cite:
                return 0
            while len(labels) <= nunits:
                labels.append(labels[-1] + s.label_tokens(len(labels) - 1))
            return labels[nunits]

        return lambda hay_tokens, nunits: fixed(nunits) + hay_tokens + label_sum(nunits)

    def needed_tokens(self, index: int) -> int:
        """Prompt tokens of sample ``index`` with no haystack (the least any tier must hold)."""
        s = Sample(self.settings, index, self.count)
        s.needles()
        task, shots = self._plan(s)
        needles = [s.needle_unit(g, k) for g in range(self.settings.groups) for k in range(self.settings.n)]
        return self._budgeter(s, needles, task, shots)(0, len(needles))

    def _cites(self, units: List[Unit]) -> List[List[int]]:
        """Citation numbers per group and question: the needle's 0-based index in the context."""
        out = [[0] * self.settings.n for _ in range(self.settings.groups)]
        for i, u in enumerate(units):
            if u.needle:
                g, k = u.needle
                out[g][k] = i
        return out

    def rows(self, index: int) -> List[Dict]:
        settings = self.settings
        s = Sample(settings, index, self.count)
        s.needles()
        task, shots = self._plan(s)
        needles = [s.needle_unit(g, k) for g in range(settings.groups) for k in range(settings.n)]
        total = self._budgeter(s, needles, task, shots)
        hay: List[Unit] = []
        if settings.budget:
            needle_only = total(0, len(needles))
            if needle_only > settings.budget:
                raise TierTooSmallError(needle_only)
            shift = 0
            if settings.task == 'idk' and settings.mode == 'strict':
                # both rows share the context; fill so that the unanswerable one (the answer sentence deleted)
                # is within 1% of the budget too, where the budget leaves room for that
                shift = needles[0].tokens - s.needle_unit(0, 0, delete_answer=True).tokens
            hay = self._fill(s, needles, total, shift)
        while True:
            built = self._assemble(s, needles, hay, task, shots)
            if not settings.budget or not hay or max(r['prompt_tokens'] for r in built) <= settings.budget:
                return built
            hay = hay[:-1]   # over budget (citation numbers or a non-additive tokenizer): drop a bio, rebuild

    # ------------------------------------------------------------------------------------------- fill
    def _fill(self, s: Sample, needles: List[Unit], total, shift: int = 0) -> List[Unit]:
        settings = self.settings
        N = len(needles)
        stream = s.haystack_stream()
        cand: List[Unit] = []
        rendered_tokens = 0

        def render(k: int):
            nonlocal rendered_tokens
            new = list(itertools.islice(stream, k))
            rendered_tokens += sum(u.tokens for u in new)
            cand.extend(new)

        # greedy: add bios in stream order while the whole prompt fits; render about as many as needed
        body, H = 0, 0
        while True:
            if H >= len(cand):
                if not cand:
                    render(32)
                else:
                    avg = rendered_tokens / len(cand)
                    render(max(16, int((settings.budget - total(body, N + H)) / avg * 1.02) + 8))
            u = cand[H]
            if total(body + u.tokens, N + H + 1) > settings.budget:
                break
            body += u.tokens
            H += 1
        lo = settings.budget - int(FILL_TOLERANCE * settings.budget)
        if s.cite:   # the citation numbers may take fewer tokens than their widest stand-in
            lo = min(lo + total(body, N + H) - total(body, 1), settings.budget)
        want = min(lo + shift, settings.budget)   # idk strict: the unanswerable row within 1% too, where possible
        if total(body, N + H) >= want:
            return cand[:H]
        # exchange the last m greedy bios for a subset of the following ones whose token sum fills the room:
        # a subset-sum over the lookahead bios (bitset dynamic programming, fullest sum first)
        if len(cand) < H + LOOKAHEAD:
            render(H + LOOKAHEAD - len(cand))
        look = list(range(H, H + LOOKAHEAD))
        best = (total(body, N + H), cand[:H])
        for m in range(0, min(MAX_EXCHANGE, H) + 1):
            kept = H - m
            b = body - sum(cand[i].tokens for i in range(kept, H))
            lab = s.label_tokens(N + kept) if s.cite else 0
            rest = total(b, N + kept)
            pick = _subset_sum([cand[i].tokens + lab for i in look], lo - rest, settings.budget - rest)
            if pick is None:
                continue
            chosen = [look[j] for j in pick]
            t = total(b + sum(cand[i].tokens for i in chosen), N + kept + len(chosen))
            if best[0] < t <= settings.budget:
                best = (t, cand[:kept] + [cand[i] for i in chosen])
            if best[0] >= want:
                break
        return best[1]   # the fullest prompt found (within the 1% window unless no exchange lands there)

    # ---------------------------------------------------------------------------------------- placement
    def _place(self, s: Sample, needles: List[Unit], hay: List[Unit]) -> List[Unit]:
        settings = self.settings
        N = len(needles)
        key = f'{s.seed}:placement:{settings.tier_tokens}:{settings.reserve_tokens}:{settings.density}:{settings.depth}'
        rng = random.Random(key)
        cum = [0]
        for u in hay:
            cum.append(cum[-1] + u.tokens)
        T = cum[-1]
        lo, hi = settings.depth[0] * T, settings.depth[1] * T
        a, b = bisect.bisect_left(cum, lo), bisect.bisect_right(cum, hi)
        cands = list(range(a, b))
        if not cands:   # no bio boundary inside the window: the boundary nearest to its middle
            mid = (lo + hi) / 2
            cands = [min(range(len(cum)), key=lambda i: (abs(cum[i] - mid), i))]
        slots = sorted(rng.choices(cands, k=N))
        owners = [g for g in range(settings.groups) for _ in range(settings.n)]
        if settings.mode == 'strict':      # random interleaving of the groups, each group kept in order
            random.Random(key + ':order').shuffle(owners)
        nxt = [0] * settings.groups
        order = []
        for g in owners:
            order.append(needles[g * settings.n + nxt[g]])
            nxt[g] += 1
        out, j = [], 0
        for i in range(len(hay) + 1):
            while j < N and slots[j] == i:
                out.append(order[j])
                j += 1
            if i < len(hay):
                out.append(hay[i])
        return out

    # ----------------------------------------------------------------------------------------- assembly
    def _assemble(self, s: Sample, needles: List[Unit], hay: List[Unit], task: str, shots: int) -> List[Dict]:
        settings = self.settings
        units = self._place(s, needles, hay)
        cites = self._cites(units)
        depths_at = []
        pos = 0
        piece_tokens = [u.tokens + s.label_tokens(i) for i, u in enumerate(units)]
        ctx_tokens = sum(piece_tokens)
        starts = {}
        for i, u in enumerate(units):
            starts[id(u)] = pos
            pos += piece_tokens[i]
        test_units = [u for u in units if u.needle and u.needle[0] == 0]
        test_units.sort(key=lambda u: u.needle[1])
        depths_at = [round(starts[id(u)] / ctx_tokens, 4) for u in test_units]
        base = dict(cell=settings.cell, task=settings.task, n=settings.n, mode=settings.mode, shots=settings.shots, tier=settings.tier,
                    tier_tokens=settings.tier_tokens, budget_tokens=settings.budget, sample=s.index,
                    seed=str(s.seed), attribute=s.attr, num_bios=len(units), needle_depths=depths_at,
                    tokenizer_engine=settings.tokenizer.engine,
                    needle_groups=[u.needle[0] for u in units if u.needle], params=self.params_json)
        rows = []
        if settings.task == 'idk':
            test = test_units[0]
            deleted = s.needle_unit(0, 0, delete_answer=True)
            deleted_units = [deleted if u is test else u for u in units]
            ans_prompt = s.prompt(task, shots, cites)
            rows.append(self._row(base, s, 'answerable', units, ans_prompt, self._label(s, 'answer'),
                                  str(s.groups[0].answer[0])))
            rows.append(self._row(base, s, 'unanswerable', deleted_units, s.prompt('idk', 0),
                                  {'kind': 'refusal'}, 'not stated'))
            return rows
        prompt = s.prompt(task, shots, cites)
        label, answer = self._main_label(s, units, cites)
        rows.append(self._row(base, s, 'main', units, prompt, label, answer))
        return rows

    def _label(self, s: Sample, kind: str) -> Dict:
        return {'kind': kind, 'items': list(s.groups[0].answer)}

    def _main_label(self, s: Sample, units: List[Unit], cites) -> Tuple[Dict, str]:
        g, task = s.groups[0], self.settings.task
        if task in ('standard', 'multi_standard', 'paraphrase', 'pronoun'):
            return {'kind': 'list', 'items': list(g.answer)}, '; '.join(g.answer)
        if task == 'rank':
            return ({'kind': 'rank', 'items': list(g.answer), 'names': [p.name for p in g.people]},
                    ', '.join(g.answer))
        if task == 'calculation':
            return {'kind': 'int', 'value': g.answer}, str(g.answer)
        if task == 'multihop':
            return {'kind': 'str', 'value': g.answer}, g.answer
        if task == 'twodiff':
            ages = {}
            for u in units:
                if u.age is not None:
                    ages.setdefault(u.name, u.age)
            roster, seen = [], set()
            for u in units:
                if u.name not in seen:
                    seen.add(u.name)
                    roster.append([u.name, ages.get(u.name)])
            d = g.answer['age_difference']
            return ({'kind': 'twodiff', 'diff': d, 'ref_names': g.answer['ref_names'], 'roster': roster},
                    f"{' and '.join(g.answer['ref_names'])} (age difference {d})")
        if task == 'citation':
            c = [f'[{k}]' for k in cites[0]]
            return ({'kind': 'cite', 'items': list(g.answer), 'cites': c},
                    '; '.join(f'{a} {k}' for a, k in zip(g.answer, c)))
        raise LongBioConfigError(task)

    def _row(self, base: Dict, s: Sample, kind: str, units: List[Unit], prompt: Prompt, label: Dict,
             answer: str) -> Dict:
        if self.settings.task == 'citation':
            ctx = ''.join(bio_label(i) + u.text for i, u in enumerate(units))
        else:
            ctx = ''.join(u.text for u in units)
        user = CONTEXT_HEAD + ctx + prompt.tail
        if self.settings.verify:
            count = self.settings.tokenizer.count
            tokens = count(prompt.system) + count(user) + count(prompt.prefix)
        else:
            tokens = (s.fixed_tokens(prompt) + sum(u.tokens for u in units)
                      + sum(s.label_tokens(i) for i in range(len(units))))
        return dict(base, row=kind, system=prompt.system, user=user, prefix=prompt.prefix, answer=answer,
                    label=json.dumps(label, ensure_ascii=False), prompt_tokens=tokens)


def _rows_of_range(gen: Generator, span: range) -> List[Dict]:
    return [row for i in span for row in gen.rows(i)]


def generate(settings: CellSettings, num_samples: int, start: int = 0, num_proc: int = 1) -> Iterator[Dict]:
    """All rows of samples start..start+num_samples-1 (a sample is one row; IDK samples are two), in order,
    made by up to ``num_proc`` processes (the same rows for any ``num_proc``; see :mod:`..parallel`)."""
    end = start + num_samples
    try:
        for rows in parallel.map_chunks(_rows_of_range, range(start, end), Generator, (settings,), num_proc,
                                        max(settings.tier_tokens, 1024), parallel.startup_factor(settings.tokenizer),
                                        f'LongBioBench {settings.cell} {settings.tier}'):
            yield from rows
    except TierTooSmallError:
        gen = Generator(settings)
        needed = max(gen.needed_tokens(j) for j in range(start, end))
        raise TierTooSmallError(
            f'LongBioBench cell {settings.cell!r} does not fit tier {settings.tier} ({settings.budget} tokens): its '
            f'{settings.groups * settings.n} needle bios (the test question and {settings.groups - 1} demo groups of '
            f'n={settings.n}) and the prompt need up to {needed} tokens with {settings.tokenizer.name} over these '
            f'{num_samples} samples. Smallest standard tier that fits: '
            f'{_smallest_fitting_tier(needed, settings.reserve_tokens) or "none"}.') from None
