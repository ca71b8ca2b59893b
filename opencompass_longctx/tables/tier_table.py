# The one table of context tiers. Pure data: the package imports it and configs can
# `read_base()` it, so tiers are defined in exactly one place.
#
# A tier name is a number of "k" (thousand) or "m" (million) units, or a plain token count; the value here is
# its size with 1k = 1000 tokens. What one unit is in a given benchmark's tokens is said in
# opencompass_longctx/tiers.py (BABILong and NoLiMa: 1k = 1000; LongBioBench: 1k = 1024).
TIERS = {'0k': 0, '1k': 1000, '2k': 2000, '4k': 4000, '8k': 8000, '16k': 16000, '32k': 32000, '64k': 64000,
         '128k': 128000, '256k': 256000, '512k': 512000, '1m': 1000000}
STANDARD_TIERS = list(TIERS)

# Tier bands: the tiers one engine serves (LongCtxPartitioner loads each model once per band, sized for the band's
# largest tier). Each entry is a band's largest tier; a tier goes to the first band that holds it (by size, as
# STANDARD_TIERS orders them), tiers above the last one to a band of their own.
TIER_BANDS = ['32k', '128k', '1m']
