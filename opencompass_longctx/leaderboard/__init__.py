"""The report model: what ``longctx-report`` and the summarizer show, as data. A run's (or several merged runs')
result files become one typed tier report (:mod:`.tier_report`, built by :mod:`.build` through :mod:`.units`,
:mod:`.failures`, :mod:`.caveats`; :mod:`.merge` and :mod:`.runs` for several runs), and :mod:`.compare` makes its
paired comparisons and ranks. It calls the statistics (:mod:`opencompass_longctx.stats`); the writers
(:mod:`opencompass_longctx.writers`) read it; it imports neither the writers nor OpenCompass's summarizer.
"""
