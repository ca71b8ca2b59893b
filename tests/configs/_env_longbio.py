# Values the LongBioBench test configs take from the environment (a top-level config cannot import os).
import os

NUM_SAMPLES = int(os.environ.get('LONGBIO_TEST_SAMPLES', '2'))
MAX_SEQ_LEN = int(os.environ.get('LONGBIO_TEST_MAX_SEQ_LEN', '16384'))
