import io
import json
import shutil

import pytest

from opencompass_longctx.babilong import data as bdata
from opencompass_longctx.babilong.dataset import load_babilong
from opencompass_longctx.babilong.scoring import TASK_LABELS
from opencompass_longctx.data_files import DataNotFoundError
from opencompass_longctx.tiers import TierError, parse_tier
def test_loads_hf_json_layout_as_plain_strings(demo_babilong):
    ds = load_babilong(tier='1k', task='qa3', path=str(demo_babilong))
    assert len(ds) == 5
    row = ds[0]
    for k in ('prompt', 'target', 'question', 'task', 'tier'):
        assert isinstance(row[k], str)
    assert not row['prompt'].startswith('[') and '\\n' not in row['prompt']
    assert row['prompt'].startswith('I give you context') and '<context>\n' in row['prompt']
    assert row['prompt'].endswith('Question: ' + row['question'].strip())
    assert row['target'] in TASK_LABELS['qa3']
    assert (row['task'], row['tier'], row['tier_tokens']) == ('qa3', '1k', 1000)
    assert row['count_tokenizer'] == 'tiktoken:gpt2'
    assert 950 <= row['prompt_tokens'] <= 1100  # 700 tokens of input + the qa3 prompt (~290)
    assert ds['index'] == list(range(5))


def test_tier_names_are_case_insensitive(demo_babilong):
    src = demo_babilong / 'data' / 'qa1' / '1k.json'
    shutil.copy(src, demo_babilong / 'data' / 'qa1' / '1M.json')
    a = load_babilong(tier='1m', task='qa1', path=str(demo_babilong))   # the file '1M.json' is found for '1m'
    assert a[0]['tier'] == '1m' and len(a) == len(json.loads(src.read_text()))
    with pytest.raises(TierError, match="write '1m'"):   # a dataset's tier is written canonically (its abbr)
        load_babilong(tier='1M', task='qa1', path=str(demo_babilong))


def test_parquet_layout_and_official_sample_source(tmp_path, demo_babilong):
    import pyarrow as pa
    import pyarrow.parquet as pq
    recs = json.loads((demo_babilong / 'data' / 'qa2' / '1k.json').read_text())
    (tmp_path / 'p' / '1k').mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(recs), tmp_path / 'p' / '1k' / 'qa2-00000-of-00001.parquet')
    ds = load_babilong(tier='1k', task='qa2', path=str(tmp_path / 'p'), sample_source='1000')
    assert ds['target'] == [r['target'] for r in recs]
    assert ds[0]['sample_source'] == 'RMT-team/babilong-1k-samples'
    ds = load_babilong(tier='1k', task='qa2', path=str(tmp_path / 'p'), sample_source='official')
    assert len(ds) == len(recs)
    assert bdata.source_for('official', parse_tier('32k')) is bdata.SOURCE_1000
    assert bdata.source_for('official', parse_tier('64k')) is bdata.SOURCE_100


def test_legacy_opencompass_cache_layout(tmp_path, monkeypatch, demo_babilong):
    legacy = tmp_path / 'cc' / 'data' / 'babilong' / 'data' / 'qa4'
    legacy.mkdir(parents=True)
    shutil.copy(demo_babilong / 'data' / 'qa4' / '0k.json', legacy / '0k.json')
    monkeypatch.setenv('COMPASS_DATA_CACHE', str(tmp_path / 'cc'))
    assert len(load_babilong(tier='0k', task='qa4')) == 5


def test_json_lines_and_list_wrapped_rows(tmp_path):
    d = tmp_path / 'data' / 'qa1'
    d.mkdir(parents=True)
    rows = [{'input': ['Mary went to the kitchen.'], 'question': ['Where is Mary? '], 'target': ['kitchen']},
            {'input': 'John went to the garden.', 'question': 'Where is John? ', 'target': 'garden'}]
    (d / '0k.json').write_text('\n'.join(json.dumps(r) for r in rows) + '\n')
    ds = load_babilong(tier='0k', task='qa1', path=str(tmp_path))
    assert ds['target'] == ['kitchen', 'garden']
    assert "['" not in ds[0]['prompt'] and ds[0]['prompt'].endswith('Question: Where is Mary?')


REC = '{"input": "Mary went to the kitchen.", "question": "Where is Mary?", "target": "kitchen"}'


@pytest.mark.parametrize('content,match', [
    ('[{"input": "a", "question": "b", "target": "c"}, {"input": "a", "quest', 'corrupt JSON'),
    ('[{"input": "a", "question": "b", "target": "c"},', 'corrupt JSON'),
    ('{"input": "a", "question": "b", "target": "c"}\n{broken\n', 'corrupt JSON on line 2'),
    ('[{"input": "a", "target": "c"}]', "lacks \\['question'\\]"),
    ('[{"input": 3, "question": "b", "target": "c"}]', 'not a string'),
    ('[1, 2]', 'expected objects'),
    # empty, without records, not UTF-8, data after the array (issue 12 item 16)
    (b'', 'the file is empty'),
    (b'[]', 'the file holds no records'),
    (b' [\n ]\n', 'the file holds no records'),
    (b'\n\n', 'the file holds no records'),
    (('[' + REC + ', {"input": "caf\xe9 ').encode('latin-1') + b'"}]',
     rf'not UTF-8 text \(invalid continuation byte at byte {len(REC) + 17}\)'),
    ('[' + REC + '] trailing', 'after the closing "]"|does not end with the closing "]"'),
    ('[' + REC + '] ' + REC + ']',
     rf'unexpected data after the closing "\]" of the array \(near character {len(REC) + 3}: .{{"input'),
    ('[' + REC + ']]', 'unexpected data after the closing'),
])
def test_corrupt_files_give_a_clear_error(tmp_path, content, match):
    d = tmp_path / 'data' / 'qa1'
    d.mkdir(parents=True)
    (d / '2k.json').write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(bdata.BabilongDataError, match=match) as e:
        load_babilong(tier='2k', task='qa1', path=str(tmp_path))
    assert str(d / '2k.json') in str(e.value)


def test_stream_parser_agrees_with_json_load_across_chunk_boundaries():
    recs = [{'input': 'x' * (i * 37 % 200) + ' "quoted" ] , [ {', 'question': f'q{i}', 'target': 't'}
            for i in range(50)]
    text = json.dumps(recs, indent=1)
    for chunk in (1, 7, 64, 4096):
        assert list(bdata._stream_json_array(io.StringIO(text), 'mem', chunk=chunk)) == recs


@pytest.mark.parametrize('kwargs,match', [
    (dict(tier='1k', task='qa11'), 'qa1-qa10'),
    (dict(tier='192k', task='qa1'), 'no 192k tier'),
    (dict(tier='4k', task='qa6', sample_source='1000'), 'qa1-qa5'),
    (dict(tier='10m', task='qa7'), 'qa1-qa5'),
    (dict(tier='1k', task='qa21'), 'qa1..qa20'),
    (dict(tier='1k', task='qa1', sample_source='500'), 'sample_source'),
    (dict(tier='1k', task='qa1', num_samples=0), 'num_samples'),
])
def test_tasks_and_tiers_the_source_lacks(demo_babilong, kwargs, match):
    with pytest.raises(bdata.BabilongDataError, match=match):
        load_babilong(path=str(demo_babilong), **kwargs)


def test_unknown_tier(demo_babilong):
    with pytest.raises(TierError, match='accepted'):
        load_babilong(tier='12q', task='qa1', path=str(demo_babilong))


def test_missing_or_partial_data_directory(tmp_path, demo_babilong):
    with pytest.raises(DataNotFoundError, match='huggingface-cli download RMT-team/babilong'):
        load_babilong(tier='1k', task='qa1', path=str(tmp_path / 'missing'))
    (demo_babilong / 'data' / 'qa2' / '1k.json').unlink()  # partial download
    with pytest.raises(DataNotFoundError, match='qa2 at 1k'):
        load_babilong(tier='1k', task='qa2', path=str(demo_babilong))
    with pytest.raises(DataNotFoundError):  # nothing under $COMPASS_DATA_CACHE or ~/.cache either
        load_babilong(tier='1k', task='qa1')


def test_sample_selection(tmp_path, demo_babilong):
    assert load_babilong(tier='1k', task='qa1', path=str(demo_babilong), num_samples=2)['index'] == [0, 1]
    assert load_babilong(tier='1k', task='qa1', path=str(demo_babilong), sample_indices=[4, 1])['index'] == [1, 4]
    idx = tmp_path / 'idx.json'
    idx.write_text(json.dumps({'qa1': [3], 'qa2': [0, 2]}))
    assert load_babilong(tier='1k', task='qa2', path=str(demo_babilong), sample_indices=str(idx))['index'] == [0, 2]
    with pytest.raises(bdata.BabilongDataError, match='does not have'):
        load_babilong(tier='1k', task='qa1', path=str(demo_babilong), sample_indices=[1, 99])


def test_second_load_is_served_by_the_cache(demo_babilong, monkeypatch):
    first = load_babilong(tier='1k', task='qa5', path=str(demo_babilong))
    monkeypatch.setattr(bdata, 'iter_records', lambda *a, **k: pytest.fail('file re-read'))
    assert load_babilong(tier='1k', task='qa5', path=str(demo_babilong)).to_list() == first.to_list()


def test_prompt_options_change_the_data(demo_babilong):
    base = load_babilong(tier='0k', task='qa10', path=str(demo_babilong))
    clean = load_babilong(tier='0k', task='qa10', path=str(demo_babilong), prompt_variant='cleaned')
    bare = load_babilong(tier='0k', task='qa10', path=str(demo_babilong), use_instruction=False,
                         use_examples=False, use_post_prompt=False)
    assert '</example>\n<context>\n\n\n' in base[0]['prompt']
    assert clean[0]['prompt'].count('<context>') == 1 and clean[0]['prompt_variant'] == 'cleaned'
    assert bare[0]['prompt'].startswith('<context>\n')



def test_a_file_cut_short_is_refused_even_when_only_its_first_records_are_read(tmp_path):
    d = tmp_path / 'data' / 'qa1'
    d.mkdir(parents=True)
    (d / '2k.json').write_text('[' + ', '.join([REC] * 3) + ', {"input": "Mary', encoding='utf-8')
    with pytest.raises(bdata.BabilongDataError, match='does not end with the closing'):
        load_babilong(tier='2k', task='qa1', path=str(tmp_path), num_samples=2)
    (d / '2k.json').write_text('[' + ', '.join([REC] * 3) + ']\n', encoding='utf-8')
    assert len(load_babilong(tier='2k', task='qa1', path=str(tmp_path), num_samples=2)) == 2


def test_sample_indices_outside_the_file_are_named(demo_babilong):
    with pytest.raises(bdata.BabilongDataError, match=r'1k.json: sample_indices ask for rows the file does not '
                                                      r'have \(0 of 2 found\)'):
        load_babilong(tier='1k', task='qa1', path=str(demo_babilong), sample_indices=[50, 99])


def test_the_tier_is_parsed_once_per_load(demo_babilong, babi_inputs, monkeypatch):
    from opencompass_longctx import tiers
    calls = []
    real = tiers._parse
    monkeypatch.setattr(tiers, '_parse', lambda text: calls.append(text) or real(text))
    load_babilong(tier='1k', task='qa2', path=str(demo_babilong))
    assert calls == ['1k']
    calls.clear()
    load_babilong(tier='3k', task='qa2', babi_dir=babi_inputs[0], background_dir=babi_inputs[1], num_samples=2)
    assert calls == ['3k']


def test_the_demo_type_writes_its_stand_in_file_and_the_loader_refuses_the_old_flag(tmp_path, demo_babilong):
    from opencompass_longctx.babilong.dataset import BabilongDataset
    from opencompass_longctx.demo.datasets import DemoBabilongDataset
    root = tmp_path / 'demo'
    ds = DemoBabilongDataset.load(tier='1k', task='qa3', path=str(root), num_samples=2)
    assert len(ds) == 2 and (root / 'data' / 'qa3' / '1k.json').is_file()
    assert not (root / 'data' / 'qa1').exists()                     # only the file this load needs
    # the same bytes as the fixture's files (deterministic), read by the production loader unchanged
    assert (root / 'data' / 'qa3' / '1k.json').read_bytes() == (demo_babilong / 'data' / 'qa3' / '1k.json').read_bytes()
    assert BabilongDataset.load(tier='1k', task='qa3', path=str(root), num_samples=2)['prompt'] == ds['prompt']
    with pytest.raises(bdata.BabilongDataError, match='DemoBabilongDataset needs path='):
        DemoBabilongDataset.load(tier='1k', task='qa3')
    with pytest.raises(bdata.BabilongDataError, match=r"has no option 'demo_data'"):
        BabilongDataset.load(tier='1k', task='qa3', path=str(root), demo_data=True)   # the loaders read real files
