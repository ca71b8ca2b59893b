"""The authors' assistant prefill (issue 12 item 6): LongBioBench's answer prefix reaches the model as the start of
the assistant message it continues, through the real OpenCompass wrappers (HF on the tiny model, TurboMind with a
test double of lmdeploy.pipeline), and every result says whether the prefix was used."""
import json
from types import SimpleNamespace

import pytest
from opencompass.models import HuggingFacewithChatTemplate
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
from opencompass_longctx.run.inferencer import LongCtxGenInferencer
from opencompass_longctx.longbio.dataset import LongBioDataset, load_longbio
from opencompass_longctx.longbio.evaluator import LongBioEvaluator
from opencompass_longctx.models.hf import LongCtxHFChatModel
from opencompass_longctx.models.prefill import PrefillError
# the prompt template of the LongBioBench dataset configs (configs/datasets/longbio/longbio_base.py)
LONGBIO_TEMPLATE = dict(
    begin=[dict(role='SYSTEM', fallback_role='HUMAN', prompt='{system}')],
    round=[dict(role='HUMAN', prompt='{user}'), dict(role='BOT', prompt='{prefix}')])
HF = dict(meta_template=LONGCTX_META_TEMPLATE, model_kwargs=dict(device_map='cpu', torch_dtype='float32'),
          generation_kwargs=dict(do_sample=False), max_seq_len=4096)


def longbio_row(cell='standard'):
    return load_longbio('0k', cell=cell, mode='compat', num_samples=1)[0]


def prompt_of(row):
    return PromptTemplate(LONGBIO_TEMPLATE).generate_item(row)


def chatml(row, prefix):
    return (f"<|im_start|>system\n{row['system']}<|im_end|>\n<|im_start|>user\n{row['user']}<|im_end|>\n"
            f'<|im_start|>assistant\n{prefix}')


def rendered_prompts(model, prompts, monkeypatch):
    """The exact strings the HF wrapper tokenizes for generation (and it really generates)."""
    seen = []
    encode = model.tokenizer.batch_encode_plus

    def spy(texts, **kw):
        seen.extend(texts)
        return encode(texts, **kw)
    monkeypatch.setattr(model.tokenizer, 'batch_encode_plus', spy)
    outputs = model.generate_from_template(prompts, max_out_len=3)
    assert len(outputs) == len(prompts) and all(isinstance(o, str) for o in outputs)
    return seen


def test_item6_opencompass_drops_the_bot_turn_in_its_template_parser(tiny_model_dir):
    """Where the prefix is lost: APITemplateParser stops before the meta template's generate=True role (BOT)."""
    row = longbio_row()
    plain = HuggingFacewithChatTemplate(path=tiny_model_dir, tokenizer_only=True, **HF)
    parsed = plain.parse_template(prompt_of(row), mode='gen')
    assert [m['role'] for m in parsed] == ['SYSTEM', 'HUMAN']
    ours = LongCtxHFChatModel(path=tiny_model_dir, tokenizer_only=True, **HF).parse_template(prompt_of(row), 'gen')
    assert [m['role'] for m in ours] == ['SYSTEM', 'HUMAN', 'BOT']
    assert ours[-1] == {'role': 'BOT', 'prompt': row['prefix'], 'prefill': True}
    # ppl mode and templates without a final BOT text are parsed as OpenCompass parses them
    assert ours[:2] == parsed
    no_prefix = dict(row, prefix='')
    assert LongCtxHFChatModel(path=tiny_model_dir, tokenizer_only=True, **HF).parse_template(
        prompt_of(no_prefix), 'gen') == plain.parse_template(prompt_of(no_prefix), 'gen')


def test_item6_hf_wrapper_continues_the_prefix_exact_prompt(tiny_model_dir, monkeypatch):
    row = longbio_row()
    prefix = row['prefix']
    assert prefix.startswith('Based on the provided context, ') and prefix == prefix.rstrip()
    ours = LongCtxHFChatModel(path=tiny_model_dir, **HF)
    assert rendered_prompts(ours, [prompt_of(row)], monkeypatch) == [chatml(row, prefix)]   # no <|im_end|> after it
    # the authors' trim: the prompt ends at the stripped prefix
    assert rendered_prompts(ours, [prompt_of(dict(row, prefix=prefix + '  '))], monkeypatch)[-1] == chatml(row, prefix)
    # off: exactly OpenCompass's prompt (a new assistant turn, no prefix)
    off = LongCtxHFChatModel(path=tiny_model_dir, continue_final_message=False, **HF)
    plain = HuggingFacewithChatTemplate(path=tiny_model_dir, **HF)
    assert rendered_prompts(off, [prompt_of(row)], monkeypatch) == [chatml(row, '')]
    assert rendered_prompts(plain, [prompt_of(row)], monkeypatch) == [chatml(row, '')]
    with pytest.raises(PrefillError, match='fastchat_template'):
        LongCtxHFChatModel(path=tiny_model_dir, tokenizer_only=True, fastchat_template='vicuna', **HF)


def test_item6_every_result_says_whether_the_prefix_was_used(tiny_model_dir, tmp_path):
    """Real inference (LongCtxGenInferencer, tiny model) then the evaluator, with OpenCompass's origin_prompt."""
    ds = LongBioDataset(reader_cfg=dict(input_columns=['system', 'user', 'prefix'], output_column='answer'),
                        abbr='longbio_standard_0k', tier='0k', cell='standard', num_samples=2)
    retriever = ZeroRetriever(ds)

    def run(model):
        out = tmp_path / type(model).__name__ / str(getattr(model, 'continue_final_message', ''))
        LongCtxGenInferencer(model=model, max_out_len=3, batch_size=2, output_json_filepath=str(out)).inference(
            retriever, prompt_template=PromptTemplate(LONGBIO_TEMPLATE))
        preds = json.loads((out / 'predictions').read_text())
        preds = [preds[str(i)] for i in range(len(preds))]
        return LongBioEvaluator().score([p['prediction'] for p in preds], list(ds.test['answer']), ds.test,
                                        origin_prompt=[p['origin_prompt'] for p in preds])

    used = run(LongCtxHFChatModel(path=tiny_model_dir, **HF))
    assert used['scoring']['answer_prefix'] == 'continued'
    assert [d['answer_prefix'] for d in used['details']] == [True, True]
    for model in (HuggingFacewithChatTemplate(path=tiny_model_dir, **HF),
                  LongCtxHFChatModel(path=tiny_model_dir, continue_final_message=False, **HF)):
        dropped = run(model)
        assert dropped['scoring']['answer_prefix'] == 'dropped'
        assert [d['answer_prefix'] for d in dropped['details']] == [False, False]
    # a base model's plain-text prompt ends with the prefix; a direct score() call knows no prompt
    row = ds.test[0]
    base = LongBioEvaluator().score(['x', 'y'], list(ds.test['answer']), ds.test,
                                    origin_prompt=[f"{r['user']}\n{r['prefix']}" for r in ds.test])
    assert base['scoring']['answer_prefix'] == 'continued' and row['prefix']
    assert LongBioEvaluator().score(['x', 'y'], list(ds.test['answer']), ds.test)['scoring']['answer_prefix'] == \
        'unknown'


def test_item6_lmdeploy_wrapper_continues_the_prefix(tiny_model_dir, monkeypatch):
    """A test double of lmdeploy.pipeline receives the rendered prompt (LMDeploy itself does not run)."""
    from test_lmdeploy import real_lmdeploy
    real_lmdeploy()
    import lmdeploy
    from lmdeploy.messages import Response

    from opencompass_longctx.models.lmdeploy import LongCtxTurboMindModel
    seen = []

    def fake_pipeline(path, backend_config=None, **kw):
        def pipe(messages, gen_config=None, do_preprocess=None):
            seen.append((messages, do_preprocess))
            return [Response(text=' dancing.<|im_end|>', generate_token_len=2, input_token_len=9) for _ in messages]
        return pipe
    monkeypatch.setattr(lmdeploy, 'pipeline', fake_pipeline)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    row = longbio_row()
    kw = dict(path=tiny_model_dir, engine_config=dict(tp=1, max_batch_size=1), max_seq_len=4096, gpu_memory_gib=80,
              meta_template=LONGCTX_META_TEMPLATE)
    m = LongCtxTurboMindModel(**kw)
    assert m.generate_from_template([prompt_of(row)], max_out_len=8) == [' dancing.']
    assert seen[-1] == ([chatml(row, row['prefix'])], False)
    assert m.parse_template(prompt_of(row), 'gen')[-1]['prefill'] is True
    off = LongCtxTurboMindModel(continue_final_message=False, **kw)
    off.generate_from_template([prompt_of(row)], max_out_len=8)
    assert seen[-1][0] == [chatml(row, '')]


def test_the_over_length_check_measures_the_prompt_as_the_wrapper_renders_it(tiny_model_dir, tmp_path):
    """LongCtxGenInferencer measures each prompt with its messages through the chat template and the prefix
    continued (OpenCompass's get_token_len_from_template joins them into one user message, a few tokens short), so
    a prompt that fits max_seq_len exactly is sent and one token less is not."""
    from datasets import Dataset
    from opencompass.openicl.icl_dataset_reader import DatasetReader
    from opencompass_longctx.overlength import OVER_LENGTH
    row = longbio_row()
    model = LongCtxHFChatModel(path=tiny_model_dir, **HF)
    sent = len(model.tokenizer(chatml(row, row['prefix'].rstrip()), add_special_tokens=False)['input_ids'])
    data = Dataset.from_dict({k: [row[k]] for k in ('system', 'user', 'prefix', 'answer')})
    reader = DatasetReader(data, input_columns=['system', 'user', 'prefix'], output_column='answer')
    retriever = ZeroRetriever(SimpleNamespace(reader=reader, train=reader.dataset['train'],
                                              test=reader.dataset['test']))
    for limit, expect_sent in ((sent + 3, True), (sent + 2, False)):
        out = tmp_path / str(limit)
        LongCtxGenInferencer(model=model, max_out_len=3, max_seq_len=limit, batch_size=1,
                             output_json_filepath=str(out)).inference(
            retriever, prompt_template=PromptTemplate(LONGBIO_TEMPLATE))
        pred = json.loads((out / 'predictions').read_text())['0']['prediction']
        assert (pred != OVER_LENGTH) is expect_sent, (limit, sent, pred)
