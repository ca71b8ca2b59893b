"""The writers: the tier report (:mod:`opencompass_longctx.leaderboard`) and its comparison as files a reader
opens: Markdown, CSV and JSON (:mod:`.formats`, :mod:`.comparison`), PNG plots (:mod:`.plots`) and the leaderboard
page (:mod:`.html` with :mod:`.heatmaps`; :mod:`.browser` renders it). They read the report by attribute and
compute no statistic of their own.
"""
