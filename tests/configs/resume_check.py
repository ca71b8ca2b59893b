# Test config: BABILong qa1-qa4 at 0k (two samples each) for the rule reader, the prompt variant from
# LONGCTX_TEST_PROMPTS ('official' or 'cleaned': qa2's and qa4's prompts differ between them, qa1's and qa3's do
# not); LongCtxPartitioner.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.rule_reader import BabiRuleReader
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from ._env_resume import DATA, INSTRUCTION, PROMPTS

models = [dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=100000, max_out_len=20, batch_size=1,
               run_cfg=dict(num_gpus=0))]
datasets = [dict(BABILONG_BASE[i], tier='0k', abbr=f"{BABILONG_BASE[i]['abbr']}_0k", path=DATA, num_samples=2,
                 prompt_variant=PROMPTS, use_instruction=INSTRUCTION) for i in range(4)]
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
