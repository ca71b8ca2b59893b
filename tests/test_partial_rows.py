"""A row whose datasets are partly run says which are missing, in every benchmark alike (issue 27, item 8): the
real `opencompass` command on BABILong qa1 and qa2 only (the qa1-qa5 row needs all five), then the table's files."""
import glob
import json
import os

import pytest

from conftest import run_opencompass

pytestmark = pytest.mark.e2e

RUN_CONFIG = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.demo.datasets import DemoBabilongDataset
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_0k_gen import babilong_datasets as b0
    from opencompass_longctx.configs.models.longctx_tiny_chat import models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
datasets = [dict(d, type=DemoBabilongDataset, path=DATA, num_samples=2) for d in b0[:2]]   # qa1 and qa2 only
summarizer = dict(summarizer, plots=False)
infer = dict(partitioner=dict(type=NaivePartitioner, n=2),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=100),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLEvalTask)))
'''


def test_a_row_with_some_of_its_datasets_names_the_missing_ones(tmp_path, tiny_model_dir):
    cfg = tmp_path / 'run.py'
    cfg.write_text(RUN_CONFIG.replace('DATA', repr(str(tmp_path / 'data'))))
    env = {'LONGCTX_TINY_MODEL': tiny_model_dir, 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(cfg), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (md,) = glob.glob(str(tmp_path / 'out' / '*' / 'summary' / 'longctx_*.md'))
    text = open(md, encoding='utf-8').read()
    # the row is there (before: a header with no rows and no note), marked with how many of its datasets ran
    (line,) = [ln for ln in text.splitlines() if ln.startswith('| tiny-chat | babilong | qa1-qa5 |')]
    assert line.split(' | ')[3] == '- (2/5)', line
    assert ('babilong qa1-qa5 at 0k: 2 of its 5 datasets were run (not run at this tier: qa3, qa4, qa5)'
            in text.split('Partial rows:')[1])
    assert 'qa1-qa10' not in text.split('How to read')[0]   # the longer row adds nothing the first does not show
    rep = json.load(open(md[:-3] + '.json', encoding='utf-8'))
    (row,) = [r for r in rep['rows'] if r['row'] == 'qa1-qa5']
    cell = row['cells']['0k']
    assert (cell['status'], cell['cells_used'], cell['cells_total']) == ('missing', 2, 5)
    assert cell['reason'] == 'not run at this tier: qa3, qa4, qa5'
    assert os.path.isfile(md[:-3] + '.csv')
