"""BABILong dataset rows: from file records or from the generator, in one process or several (no OpenCompass
import, so a build worker starts quickly). :func:`..dataset.load_split` caches what these yield."""
import json
from typing import Dict, Iterable, Iterator, List, Tuple

from opencompass_longctx import parallel
from opencompass_longctx.tiers import Tier
from opencompass_longctx.babilong.prompts import format_prompt
def build_rows(records: Iterable[Tuple[int, Dict]], task: str, tier: Tier, parts: Dict[str, str], tokenizer,
               source_name: str, variant: str) -> Iterator[Dict]:
    """Dataset rows from ``(index, {input, question, target[, generation]})`` records."""
    tier_tokens = tier.tokens(1000)
    for i, r in records:
        prompt = format_prompt(r['input'], r['question'], parts)
        row = {
            'prompt': prompt, 'target': r['target'], 'question': r['question'], 'task': task, 'tier': tier.name,
            'tier_tokens': tier_tokens, 'index': i,
            'prompt_tokens': tokenizer.count(prompt), 'count_tokenizer': tokenizer.name,
            'count_engine': tokenizer.engine,
            'prompt_variant': variant, 'sample_source': source_name,
        }
        if 'generation' in r:
            row['generation'] = json.dumps(r['generation'], sort_keys=True)
        yield row


class _GeneratedRows:
    """Generated samples made into dataset rows, in one process (a build worker or this one)."""

    def __init__(self, gen, task: str, tier: Tier, parts: Dict[str, str], tokenizer, fingerprint: str,
                 variant: str):
        self.gen, self.task, self.tier, self.parts, self.variant = gen, task, tier, parts, variant
        self.tok = parallel.same_tokenizer(tokenizer, fingerprint)

    def rows(self, chunk: List[Tuple[int, int]]) -> List[Dict]:
        records = ((i, self.gen.make(self.task, self.tier, i, story)) for i, story in chunk)
        return list(build_rows(records, self.task, self.tier, self.parts, self.tok, 'generated', self.variant))


def _generated_chunk(state: _GeneratedRows, chunk) -> List[Dict]:
    return state.rows(chunk)


def generated_rows(gen, task: str, tier: Tier, samples: int, parts: Dict[str, str], tokenizer, variant: str,
                   num_proc: int = 1) -> Iterator[Dict]:
    """Rows of ``samples`` generated samples, made by up to ``num_proc`` processes (the same rows for any
    ``num_proc``)."""
    items = list(enumerate(gen.questions(task, tier, samples)))
    startup = max(parallel.startup_factor(gen.tok), parallel.startup_factor(tokenizer))
    for rows in parallel.map_chunks(_generated_chunk, items, _GeneratedRows,
                                    (gen, task, tier, parts, tokenizer, tokenizer.fingerprint, variant), num_proc,
                                    max(tier.tokens(1000), 1000), startup, f'BABILong {task} {tier.name} (generating)'):
        yield from rows
