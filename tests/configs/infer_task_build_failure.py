# Test config: one inference task as OpenCompass writes it (models, datasets of the task, work_dir): an LMDeploy
# model (the engine double) whose build fails in its KV-cache preflight (a 1 KiB "GPU"), and three datasets.
# LongCtxInferTask builds the model once; every dataset fails with that reason.
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
    from ._env_leaderboard import BABILONG, TINY

models = [dict(type='lmdeploy_double.RecordingTurboMindModel', abbr='double-unbuildable', path=TINY,
               meta_template=LONGCTX_META_TEMPLATE, engine_config=dict(tp=1, max_batch_size=1), max_seq_len=8192,
               max_out_len=16, batch_size=1, gpu_memory_gib=1 / 1024 ** 2, run_cfg=dict(num_gpus=1))]
datasets = [[dict(BABILONG_BASE[0], tier=t, abbr=f"{BABILONG_BASE[0]['abbr']}_{t}", path=BABILONG, num_samples=1)
             for t in ('0k', '1k', '2k')]]
work_dir = 'out'
