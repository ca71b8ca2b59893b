# Values the cluster and resume test configs take from the environment (a top-level config cannot import os).
import os

TINY = os.environ.get('LONGCTX_TINY_MODEL', 'outputs/longctx_demo/tiny-chat')
BABILONG = os.environ.get('LONGCTX_TEST_DATA', 'outputs/longctx_test/babilong')
NOLIMA = os.environ.get('NOLIMA_TEST_DATA', 'outputs/nolima_test/data')
MODELS = os.environ.get('LONGCTX_TEST_MODELS', 'tiny-chat,rule-reader').split(',')
TIERS = os.environ.get('LONGCTX_TEST_TIERS', '0k,250,1k').split(',')
PARTITION = os.environ.get('LONGCTX_SLURM_PARTITION', 'longctx')
RETRY = int(os.environ.get('LONGCTX_SLURM_RETRY', '0'))
