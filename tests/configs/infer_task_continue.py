# Test config: one inference task (one band) whose second dataset fails to build (an unknown LongBioBench cell, which
# the plan reports and on_problem='warn' lets run); LongCtxInferTask and LongCtxEvalTask log it and run the
# others. The rule reader answers the BABILong datasets.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.rule_reader import BabiRuleReader
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from ._env_leaderboard import BABILONG

models = [dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=100000, max_out_len=20, batch_size=4,
               run_cfg=dict(num_gpus=0))]
datasets = [dict(BABILONG_BASE[0], tier='0k', abbr='babilong_qa1_0k', path=BABILONG, num_samples=2),
            dict(LONGBIO_BASE[0], tier='1k', abbr='longbio_no_such_cell_1k', cell='no_such_cell', num_samples=1),
            dict(BABILONG_BASE[1], tier='1k', abbr='babilong_qa2_1k', path=BABILONG, num_samples=2)]
infer = dict(partitioner=dict(type=LongCtxPartitioner, on_problem='warn'),  # the plan sees the bad cell: run anyway
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
