# Values the test configs take from the environment (a top-level config cannot import os: OpenCompass
# dumps every top-level name, and a module object cannot be dumped).
import os

DATA = os.environ.get('LONGCTX_TEST_DATA', 'outputs/longctx_test/babilong')
TIER = os.environ.get('LONGCTX_TEST_TIER', '0k')
