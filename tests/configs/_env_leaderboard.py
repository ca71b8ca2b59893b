# Values the leaderboard test config takes from the environment (a top-level config cannot import os).
import os

TINY = os.environ.get('LONGCTX_TINY_MODEL', 'outputs/longctx_demo/tiny-chat')
BABILONG = os.environ.get('LONGCTX_TEST_DATA', 'outputs/longctx_test/babilong')
NOLIMA = os.environ.get('NOLIMA_TEST_DATA', 'outputs/nolima_test/data')
GPT_OSS = os.environ.get('LONGCTX_GPT_OSS_DIR', 'outputs/longctx_test/gpt-oss')   # tests/harmony_tokenizer.py
