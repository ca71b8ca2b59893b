# Values the resume-check test config takes from the environment (a top-level config cannot import os).
import os

DATA = os.environ.get('LONGCTX_TEST_DATA', 'outputs/longctx_test/babilong')
PROMPTS = os.environ.get('LONGCTX_TEST_PROMPTS', 'official')
INSTRUCTION = os.environ.get('LONGCTX_TEST_INSTRUCTION', '1') == '1'
