"""NoLiMa (Modarressi et al., ICML 2025): needle sets, book haystacks, 26 depths, base score and effective length.

Modules: ``needles`` (variants, schema, expansion), ``haystack`` (book tokens cached per tokenizer, the
authors' placement), ``data`` (finding the files), ``prompts``, ``dataset`` (OpenCompass dataset),
``scoring`` (per-test metrics), ``evaluator`` (OpenCompass evaluator), ``metrics`` (base score, threshold,
effective length), ``summarizer`` (OpenCompass summarizer with the NoLiMa report). The project's
stand-in data in the real layout: :mod:`opencompass_longctx.demo.nolima_data`.
"""
