# Values the NoLiMa test configs take from the environment (a top-level config cannot import os).
import os

DATA = os.environ.get('NOLIMA_TEST_DATA', 'outputs/nolima_test/data')
TIERS = os.environ.get('NOLIMA_TEST_TIERS', '250').split(',')
PAIRS = int(os.environ.get('NOLIMA_TEST_PAIRS', '2'))
