"""Copy-a-config, outside the repository: copying <bench>_128k_gen.py into a user's workspace as
<bench>_192k_gen.py and changing only TIER gives a working 192k dataset (the tier files import their base by the
package path), which runs through the real opencompass pipeline and appears in the tier table. A LongBioBench tier
between the standard ones (3k) holds the cells that fit it."""
import glob
import json
import os

import pytest

from conftest import REPO, run_opencompass

pytestmark = pytest.mark.e2e

CONFIGS = REPO / 'opencompass_longctx' / 'configs'
RUN = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
from opencompass_longctx.demo.rule_reader import BabiRuleReader
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_2k_gen import babilong_datasets as babilong_2k
    from opencompass_longctx.configs.models.longctx_tiny_chat import models as tiny
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from .babilong_192k_gen import babilong_datasets as babilong_192k     # tiers copied into this workspace
    from .longbio_192k_gen import longbio_datasets as longbio_192k
    from .longbio_3k_gen import longbio_datasets as longbio_3k
    from .nolima_192k_gen import nolima_datasets as nolima_192k

common = [dict(d, num_samples=2) for d in [*babilong_2k[:5], *babilong_192k[:5]]]
common += [dict(d, num_samples=1) for d in longbio_192k if d['cell'] in ('standard', 'calculation', 'idk')]
common += [dict(d, type=DemoNoLiMaDataset, path=NOLIMA, sample_book_tokens=200000, pairs=1, haystacks=[0],
                depth_indices=[0, 5]) for d in nolima_192k]
longbio_3k = [dict(d, num_samples=1) for d in longbio_3k]
rule_reader = dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=400000, max_out_len=20, batch_size=4,
                   run_cfg=dict(num_gpus=0))
datasets = [*common, *longbio_3k]
models = [*tiny, rule_reader]
model_dataset_combinations = [dict(models=tiny, datasets=common), dict(models=[rule_reader], datasets=datasets)]
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLEvalTask)))
'''


def copy_tier(workspace, bench, new_tier):
    """The README's "Add a tier": copy a tier file and change TIER (nothing else)."""
    text = (CONFIGS / 'datasets' / bench / f'{bench}_128k_gen.py').read_text()
    assert text.count("TIER = '128k'") == 1
    (workspace / f'{bench}_{new_tier}_gen.py').write_text(text.replace("TIER = '128k'", f"TIER = '{new_tier}'"))


def test_tiers_copied_into_a_workspace_outside_the_repository(tmp_path, babi_inputs):
    ws = tmp_path / 'workspace'
    ws.mkdir()
    for bench in ('babilong', 'longbio', 'nolima'):
        copy_tier(ws, bench, '192k')
    copy_tier(ws, 'longbio', '3k')
    (ws / 'run.py').write_text(RUN.replace('NOLIMA', repr(str(tmp_path / 'nolima'))))
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'data'), tiers=('2k',), tasks=[f'qa{i}' for i in range(1, 6)], samples=2)
    env = {'BABI_DIR': babi_inputs[0], 'PG19_DIR': babi_inputs[1], 'BABILONG_DATA': str(tmp_path / 'data'),
           'LONGCTX_TINY_MODEL': str(tmp_path / 'tiny'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(ws / 'run.py'), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    for log in glob.glob(os.path.join(run, 'logs', '**', '*.out'), recursive=True):
        assert 'Traceback' not in open(log).read(), log
    (js,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    rep = json.load(open(js))
    assert rep['tiers'] == ['2k', '3k', '192k']  # the new columns, with no edit of the summarizer
    table = {(r['model'], r['bench'], r['row']): r for r in rep['rows']}
    for bench, row in (('longbio', 'mean'), ('nolima', 'main')):  # the copied tiers are there too
        assert table[('tiny-chat', bench, row)]['cells']['192k']['status'] == 'n/a'  # 16k window: never cut
        assert table[('rule-reader', bench, row)]['cells']['192k']['status'] == 'ok'  # read, answered, scored
    # 3k: every cell whose needles fit ran (multi_standard_10 does not fit and is left out, not failed)
    from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS, LONGBIO_NEED_TOKENS
    fit = {c['cell'] for c in LONGBIO_CELLS if LONGBIO_NEED_TOKENS[c['cell']] <= 3 * 1024}
    assert 'multi_standard_10' not in fit and len(fit) >= 12
    ran = {os.path.basename(p)[len('longbio_'):-len('_3k.json')]
           for p in glob.glob(os.path.join(run, 'results', 'rule-reader', 'longbio_*_3k.json'))}
    assert ran == fit
    assert table[('rule-reader', 'longbio', 'mean')]['cells']['3k']['status'] == 'ok'
    rows = {r['model']: r for r in rep['rows'] if r['bench'] == 'babilong'}
    rule = rows['rule-reader']['cells']['192k']
    assert rule['status'] == 'ok' and rule['tasks']['qa1'] == 100.0 and rule['n'] == 10  # generated, then read
    # the tiny model's 16k window cannot hold 192k: N/A, never a truncated prompt or a 0
    assert rows['tiny-chat']['cells']['192k']['status'] == 'n/a'
    preds = json.load(open(os.path.join(run, 'predictions', 'rule-reader', 'babilong_qa1_192k.json')))
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    n = get_tokenizer('tiktoken:gpt2').count(preds['0']['origin_prompt'])  # a plain string for a base model
    assert 192000 - 300 < n < 192000 + 50  # 191700 tokens of input + the prompt (qa1 ~ 200 tokens)
