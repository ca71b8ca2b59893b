# The model abbr the nested-abbr run uses (a top-level config cannot import os).
import os

ABBR = os.environ.get('LONGCTX_REPORT_ABBR', 'org/.rule reader ü v1..2')
