# Values the report-merge test config takes from the environment (a top-level config cannot import os).
import os

MODEL = os.environ.get('LONGCTX_REPORT_MODEL', 'tiny')        # tiny | rule
TINY = os.environ.get('LONGCTX_TINY_MODEL', 'outputs/longctx_demo/tiny-chat')
BABILONG = os.environ.get('LONGCTX_TEST_DATA', 'outputs/longctx_test/babilong')
NOLIMA = os.environ.get('NOLIMA_TEST_DATA', 'outputs/nolima_test/data')
SAMPLES = int(os.environ.get('LONGCTX_REPORT_SAMPLES', '3'))
TIERS = os.environ.get('LONGCTX_REPORT_TIERS', '0k,1k').split(',')
LONGBIO_CELLS = os.environ.get('LONGCTX_REPORT_LONGBIO', 'standard,idk').split(',')
