"""Scaffolding for the demo, the CPU example, the tests and the benchmarks: nothing here is a benchmark or a
model worth scoring, and no production module imports it.

* ``datasets``: ``DemoBabilongDataset`` and ``DemoNoLiMaDataset``, the production loaders with one step in
  front (write the project's stand-in files under ``path=`` when missing), so a demo config stays one command;
* ``babilong_data``, ``nolima_data``: the stand-in files themselves, made up by the project in the real
  layouts (not the licensed BABILong or NoLiMa data); deterministic, byte-identical for the same arguments;
* ``tiny_model`` (the builder of the tiny random-weight chat model) and ``tiny_chat`` (its OpenCompass
  wrapper, ``TinyChatModel``); ``rule_reader`` (``BabiRuleReader``, a rule-based bAbI reader for long tiers).

Configs name the classes by their modules (OpenCompass re-imports a class by its dotted path in each task
process), e.g. ``from opencompass_longctx.demo.datasets import DemoBabilongDataset``.
"""
