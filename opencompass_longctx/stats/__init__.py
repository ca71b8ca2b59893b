"""The statistics of the tier table and the leaderboard, in plain numpy and scipy (no OpenCompass, no report):

* :mod:`.intervals`: the 95% interval of a score bounded by 0 and 100 (Wilson for independent samples, the bounded
  cluster-robust form where samples share text);
* :mod:`.paired`: the paired test of two models on the same samples (exact McNemar, the sign-flip test over
  clusters: exact enumeration for few clusters, its normal approximation for many);
* :mod:`.ranks`: Holm's step-down correction and the rank intervals of a leaderboard;
* :mod:`.effective`: the effective-length rule, its thresholds and the interval of an effective length over
  resampled tier scores.

The report model (:mod:`opencompass_longctx.leaderboard`) calls these; they call nothing of it.
"""
