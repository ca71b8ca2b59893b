import random

import pytest

from opencompass_longctx.prefix_reuse import BlockTrie, cached_share, common_prefix_chars, prefilled_tokens, reuse_order


def test_two_prompts_sharing_130_tokens_reuse_two_blocks():
    shared = list(range(130))
    a, b = shared + [900, 901], shared + [902] * 40
    assert prefilled_tokens([a, b]) == len(a) + len(b) - 128
    assert prefilled_tokens([a, b], same_batch=False, batch_size=2) == len(a) + len(b)
    assert prefilled_tokens([a, b], same_batch=False, batch_size=1) == len(a) + len(b) - 128


def test_the_share_read_from_texts_is_what_the_block_trie_serves():
    """With one token per character, the build record's text-only share equals the trie's count exactly."""
    rng = random.Random(5)
    heads = [''.join(rng.choice('abcd') for _ in range(300)) for _ in range(4)]
    texts = [rng.choice(heads)[:rng.randrange(0, 300)] + ''.join(rng.choice('abcd') for _ in range(rng.randrange(1, 200)))
             for _ in range(80)]
    texts += texts[:3]                                      # identical prompts: the last token is still computed
    ids = [[ord(c) for c in t] for t in texts]
    exact = 1 - prefilled_tokens(ids, reuse_order(texts)) / sum(map(len, ids))
    assert exact > 0.3 and cached_share(texts, [len(i) for i in ids]) == pytest.approx(exact)
    assert cached_share([], []) == 0.0 and cached_share(['a', 'a'], [0, 0]) == 0.0
    assert [common_prefix_chars(a, b) for a, b in (('abc', 'abd'), ('', 'x'), ('xy', 'xy'), ('x', 'xyz'))] == [2, 0, 2, 1]


def test_a_build_records_its_measured_share_and_the_plan_uses_it(tmp_path):
    from opencompass_longctx.cache import read_build_record
    from opencompass_longctx.demo.datasets import DemoBabilongDataset
    from opencompass_longctx.plan.loads import dataset_load
    from opencompass_longctx.spec import load_kwargs
    d = dict(type=DemoBabilongDataset, abbr='babilong_qa1_1k', tier='1k', task='qa1', path=str(tmp_path / 'b'),
             num_samples=5, infer_cfg=dict(inferencer=dict(max_out_len=20)))
    spec = DemoBabilongDataset.benchmark
    assert dataset_load(d).reuse == spec.prefix_reuse == 0.0            # not built: the spec's declared share
    ds = DemoBabilongDataset.load(**load_kwargs(d))
    rec = read_build_record(spec.dataset_type, load_kwargs(d))
    share = cached_share(list(ds['prompt']), list(ds['prompt_tokens']))
    assert rec['prefix_share'] == round(share, 4) and 0 < share < 0.2    # the shared instruction, nothing more
    assert dataset_load(d).reuse == rec['prefix_share']


def test_match_stops_before_the_last_token():
    trie = BlockTrie()
    seq = list(range(128))
    trie.insert(seq)
    assert len(trie) == 2
    assert trie.match(seq) == 1          # the whole prompt is cached, its last block is still computed
    assert trie.match(seq + [5]) == 2
    assert trie.match([7] + seq) == 0    # same blocks under another prefix are other nodes


def test_blocks_are_keyed_by_their_prefix():
    trie = BlockTrie(block=4)
    trie.insert([1, 2, 3, 4, 5, 6, 7, 8])
    assert trie.match([9, 9, 9, 9, 5, 6, 7, 8, 0]) == 0
    assert trie.match([1, 2, 3, 4, 5, 6, 7, 0, 0]) == 1


def test_order_is_a_deterministic_permutation_grouping_shared_prefixes():
    rng = random.Random(3)
    heads = [[rng.randrange(50) for _ in range(70)] for _ in range(3)]
    prompts = [heads[i % 3] + [rng.randrange(50) for _ in range(rng.randrange(1, 30))] for i in range(12)]
    order = reuse_order(prompts)
    assert sorted(order) == list(range(12))
    assert order == reuse_order(prompts)
    groups = [prompts[i][:70] for i in order]
    changes = sum(1 for x, y in zip(groups, groups[1:]) if x != y)
    assert changes == 2


def test_prefix_of_another_prompt_comes_first():
    long, short = list(range(200)), list(range(100))
    assert reuse_order([long, short]) == [1, 0]


@pytest.mark.parametrize('seed', range(8))
def test_ordering_never_costs_more_than_dataset_order(seed):
    rng = random.Random(seed)
    bases = [[rng.randrange(20) for _ in range(rng.randrange(64, 400))] for _ in range(4)]
    prompts = []
    for _ in range(30):
        base = rng.choice(bases)
        cut = rng.randrange(len(base) + 1)
        prompts.append(base[:cut] + [rng.randrange(20) for _ in range(rng.randrange(1, 120))])
    for batch_size in (1, 4, 16):
        plain = prefilled_tokens(prompts, batch_size=batch_size)
        ordered = prefilled_tokens(prompts, reuse_order(prompts), batch_size=batch_size)
        assert ordered <= plain
    assert prefilled_tokens(prompts, reuse_order(prompts)) < sum(map(len, prompts))


def test_eviction_drops_least_recently_used_leaves():
    trie = BlockTrie(block=2, capacity=3)
    trie.insert([1, 1, 2, 2])        # blocks A, A/B
    trie.insert([3, 3])              # block C
    assert len(trie) == 3
    trie.match([1, 1, 2, 2, 0])      # touches A and A/B: C is least recently used
    trie.insert([4, 4])              # evicts C
    assert trie.match([3, 3, 0]) == 0
    assert trie.match([1, 1, 2, 2, 0]) == 2
    trie.insert([5, 5])              # LRU leaf now is [4,4]
    assert trie.match([4, 4, 0]) == 0
    assert trie.match([1, 1, 2, 2, 0]) == 2


def test_inner_blocks_are_not_evicted_before_their_children():
    trie = BlockTrie(block=2, capacity=2)
    trie.insert([1, 1, 2, 2])
    trie.insert([3, 3])              # leaf A/B goes first (A has a child), then A is a leaf
    assert trie.match([1, 1, 9]) == 1
    assert trie.match([1, 1, 2, 2, 9]) == 1


def test_small_cache_loses_reuse():
    shared = list(range(256))
    prompts = [shared + [1000 + i] for i in range(4)]
    assert prefilled_tokens(prompts) == 4 * 257 - 3 * 256
    assert prefilled_tokens(prompts, capacity=1) > prefilled_tokens(prompts)


def test_order_must_be_a_permutation():
    with pytest.raises(ValueError):
        prefilled_tokens([[1], [2]], order=[0, 0])


# ---- the inferencer: issued in reuse order, answered in dataset order ------------------------------------------

import json
from types import SimpleNamespace

from opencompass.models.base import BaseModel
from opencompass.openicl import DatasetReader, PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from datasets import Dataset

from opencompass_longctx.run import resume_check
from opencompass_longctx.run.inferencer import LongCtxGenInferencer, issue_order


class _Echo(BaseModel):
    def __init__(self):
        super().__init__(path='echo', max_seq_len=4096)
        self.sent = []

    def get_token_len(self, prompt):
        return len(prompt.split())

    def generate(self, inputs, max_out_len, **kwargs):
        self.sent.extend(inputs)
        return [f'answer to {p[-12:]}' for p in inputs]


def _retriever(questions):
    data = Dataset.from_dict({'question': questions, 'answer': [str(i) for i in range(len(questions))]})
    reader = DatasetReader(data, input_columns=['question'], output_column='answer')
    return ZeroRetriever(SimpleNamespace(reader=reader, train=reader.dataset['train'], test=reader.dataset['test']))


def _questions():
    rng = random.Random(0)
    heads = ['hay ' * 40 + f'depth {d} ' for d in range(3)]
    return [rng.choice(heads) + f'needle {i} question {i % 2}' for i in range(9)]


def _run(tmp_path, name, reuse, save_every=None):
    model = _Echo()
    inf = LongCtxGenInferencer(model=model, max_out_len=4, batch_size=2, output_json_filepath=str(tmp_path / name),
                               reuse_order=reuse, save_every=save_every)
    returned = inf.inference(_retriever(_questions()), prompt_template=PromptTemplate('{question}'))
    return returned, (tmp_path / name / 'predictions').read_bytes(), model.sent


def test_ordered_run_writes_the_unordered_predictions(tmp_path):
    ordered, plain = _run(tmp_path, 'a', True), _run(tmp_path, 'b', False)
    assert ordered[:2] == plain[:2]                     # returned list and predictions file, byte for byte
    assert ordered[2] != plain[2] and sorted(ordered[2]) == sorted(plain[2])
    assert ordered[2] == sorted(plain[2])               # issued in text order: shared prefixes adjacent
    order = issue_order(_retriever(_questions()), prompt_template=PromptTemplate('{question}'))
    assert [ordered[2].index(q) for q in _questions()] == [order.index(i) for i in range(9)]


def test_an_ordered_partial_run_resumes_to_the_same_file(tmp_path):
    reference = _run(tmp_path, 'ref', True)[1]
    qs = _questions()
    order = issue_order(_retriever(qs), prompt_template=PromptTemplate('{question}'))
    ref = json.loads(reference)
    # an interrupted run saved the first k samples it issued, under their dataset indices (not the first k of the
    # dataset)
    k = next(k for k in range(1, 9) if set(order[:k]) != set(range(k)))
    out = tmp_path / 'part'
    out.mkdir()
    lines = [json.dumps({'idx': str(i), **ref[str(i)]}) for i in order[:k]]
    (out / 'tmp_predictions.jsonl').write_text('\n'.join(lines) + '\n')
    saved = resume_check.read_saved(str(out / 'tmp_predictions.jsonl'))
    current = [resume_check.Sample.of(q, str(i)) for i, q in enumerate(qs)]
    assert resume_check.mismatch(saved, current, False, resume_check.reuse_issue_order(current)) == ''
    assert f'not the first {k}' in resume_check.mismatch(saved, current, finished=False)
    _, resumed, sent = _run(tmp_path, 'part', True)
    assert resumed == reference
    assert sorted(sent) == sorted(qs[i] for i in order[k:])    # only the samples not saved were sent again
    assert resume_check.issued_in_reuse_order({'infer_cfg': {'inferencer': {'type': LongCtxGenInferencer}}})
    assert not resume_check.issued_in_reuse_order(
        {'infer_cfg': {'inferencer': {'type': LongCtxGenInferencer, 'reuse_order': False}}})


# ---- where prefix caching is on ----------------------------------------------------------------------------------

from opencompass_longctx.models import engine_plan as EP
from opencompass_longctx.models.backend import PREFIX_CACHING_KEY as KEY, prefix_caching_supported


def _with(cfg, backend, config, **kw):
    return EP.with_prefix_caching(prefix_caching_supported(cfg, backend), config, **kw)


def test_prefix_caching_is_on_for_full_attention_and_off_where_lmdeploy_does_not_reuse_exactly():
    qwen = {'architectures': ['Qwen2ForCausalLM'], 'use_sliding_window': False, 'sliding_window': 32768}
    mistral = {'architectures': ['MistralForCausalLM'], 'sliding_window': 4096}
    nxt = {'architectures': ['Qwen3NextForCausalLM'], 'layer_types': ['linear_attention', 'full_attention']}
    mla = {'architectures': ['DeepseekV3ForCausalLM'], 'kv_lora_rank': 512}
    gemma = {'architectures': ['Gemma3ForCausalLM'], 'sliding_window': 1024}
    vlm = {'architectures': ['LlavaForConditionalGeneration'], 'vision_config': {}}
    for backend in ('pytorch', 'turbomind'):
        assert _with(qwen, backend, {})[KEY] is True
        assert _with(mistral, backend, {})[KEY] is False
        assert _with(nxt, backend, {})[KEY] is False
        assert _with(vlm, backend, {})[KEY] is False
    assert _with(mla, 'pytorch', {})[KEY] is True
    assert _with(mla, 'turbomind', {})[KEY] is False
    assert _with(gemma, 'pytorch', {})[KEY] is True
    assert _with(gemma, 'turbomind', {})[KEY] is False
    # the user's word: prefix_caching=False, or the engine key given by hand
    assert _with(qwen, 'pytorch', {}, prefix_caching=False)[KEY] is False
    assert _with(mistral, 'pytorch', {KEY: True})[KEY] is True
    said = EP.prefix_caching_text(prefix_caching_supported(qwen, 'pytorch'), {KEY: False})
    assert said.startswith('off (set in the model config')


def test_a_cache_of_no_blocks_reuses_nothing():
    prompts = [list(range(200)) + [i] for i in range(3)]
    assert prefilled_tokens(prompts, capacity=0) == sum(map(len, prompts))


# ---- the plan's cost with prefix reuse ---------------------------------------------------------------------------

def test_the_cost_counts_only_the_tokens_after_the_cached_prefix_when_caching_is_on():
    from opencompass_longctx.models import geometry
    from dataclasses import replace

    from opencompass_longctx.models.engine_plan import EnginePlan
    from opencompass_longctx.plan.cost import cost_model, task_seconds
    from opencompass_longctx.plan.loads import DatasetLoad
    from opencompass_longctx.spec import all_specs
    cm = cost_model()
    engine = EnginePlan(session_len=32768, layers=28, weights=15e9, tp=1, hidden=3584, kv_bytes_per_token=57344,
                        max_batch_size=8)
    load = DatasetLoad('n', 'nolima', '32k', 32000, 100, 3_200_000, True, 64, 32000, reuse=0.65)
    on = task_seconds([load], replace(engine, prefix_caching='on (full attention)'), cm)
    off = task_seconds([load], replace(engine, prefix_caching='off (set in the model config)'), cm)
    assert off['prefill'] == off['prefill_without_reuse'] == on['prefill_without_reuse']
    prof = geometry.dense_profile(engine.weights / 2.0, engine.layers, engine.hidden,
                                  engine.kv_bytes_per_token)
    flops_per_s = cm['gpu_spec']['bf16_tflops'] * 1e12 * cm['prefill_mfu']
    expected = 100 * (geometry.prefill_flops(prof, 32000) - geometry.prefill_flops(prof, 0.65 * 32000)) / flops_per_s
    assert abs(on['prefill'] - expected) < 1e-6 * expected
    assert on['decode'] == off['decode']
    reuse = {spec.name: spec.prefix_reuse for spec in all_specs()}
    assert reuse['nolima'] > 0.6 and all(0 <= r < 1 for r in reuse.values())
