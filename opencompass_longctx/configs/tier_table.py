# The one table of context tiers. Pure data: the package imports it and configs can
# `read_base()` it, so tiers are defined in exactly one place.
#
# A tier name is a number of "k" (thousand) or "m" (million) units, or a plain token count.
# What one unit is in tokens depends on the benchmark (see opencompass_longctx/tiers.py):
# BABILong and NoLiMa count 1k = 1000 tokens; LongBioBench's authors count 1k = 1024.
STANDARD_TIERS = ['0k', '1k', '2k', '4k', '8k', '16k', '32k', '64k', '128k',
                  '256k', '512k', '1m']
