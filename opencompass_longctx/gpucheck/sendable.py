"""Whether every row of the check's datasets will be sent: each prompt measured as ``LongCtxGenInferencer`` measures
it (the wrapper's chat template, the model's own tokenizer: a tokenizer-only ``LongCtxTurboMindModel``), plus the
dataset's ``max_out_len``, against the ``session_len`` of the engine the plan gives its band and the model's window.

A row over its band's engine is held back as engine-too-small, a row over the window as over-length: either way it is
never answered, so the check reports it here, before any GPU time is spent, and the data stage fails on it.
"""
from dataclasses import asdict, dataclass
from typing import Dict, List


@dataclass
class RowsFit:
    """One dataset's rows against its engine: the longest prompt + answer, how many rows do not fit and why."""
    dataset: str
    band: str
    rows: int
    longest_prompt: int          # model tokens, chat template included
    max_out_len: int
    session_len: int             # the band's engine (the plan's)
    window: int                  # the model's max_seq_len
    over_engine: int             # rows whose prompt + answer exceed session_len (but fit the window)
    over_window: int             # rows whose prompt + answer exceed the window

    @property
    def fits(self) -> bool:
        return not (self.over_engine or self.over_window)

    def as_dict(self) -> Dict:
        return dict(asdict(self), fits=self.fits)

    def problem(self) -> str:
        limit = self.session_len if self.over_engine else self.window
        return (f'{self.dataset}: {self.over_engine + self.over_window} of {self.rows} prompts + {self.max_out_len} '
                f'new tokens exceed {"the " + self.band + " engine" if self.over_engine else "the window"} '
                f'({limit} tokens; longest prompt {self.longest_prompt}): set reserve_tokens, or a band of its own')


def plan_engines(cfg) -> Dict[str, Dict]:
    """dataset abbr -> its band, the band engine's session_len, the model's window and max_out_len, as the
    partitioner of ``cfg`` plans them (one model)."""
    from opencompass_longctx import plan as P
    from opencompass_longctx.combinations import combinations_of, expand
    part = dict(cfg['infer']['partitioner'])
    combos, _ = expand(combinations_of(cfg))
    plan = P.make_plan(combos, part.get('bands'), cost=part.get('cost_model'))
    out = {}
    for t in plan['tasks']:
        window = int(t.model_cfg.get('max_seq_len') or 0)
        for d in t.dataset_cfgs:
            out[d['abbr']] = {'band': t.band, 'session_len': t.engine.session_len if t.engine else window,
                              'window': int(d['infer_cfg']['inferencer'].get('model_window') or window),
                              'max_out_len': int(d['infer_cfg']['inferencer'].get('max_out_len') or 0)}
    return out


def measure(model, dataset_cfg: Dict, dataset) -> List[int]:
    """Each row's prompt in the model's tokens as the inferencer measures it (retriever, prompt template, the
    wrapper's chat template)."""
    from opencompass.registry import ICL_PROMPT_TEMPLATES, ICL_RETRIEVERS

    from opencompass_longctx.run.inferencer import MeasuredModel
    infer = dataset_cfg['infer_cfg']
    retriever = ICL_RETRIEVERS.build(dict(infer['retriever'], dataset=dataset))
    template = ICL_PROMPT_TEMPLATES.build(infer['prompt_template'])
    measured = MeasuredModel(model, 10 ** 9)
    out = []
    for idx, ice_idx in enumerate(retriever.retrieve()):
        ice = retriever.generate_ice(ice_idx, ice_template=None)
        prompt = retriever.generate_prompt_for_generate_task(idx, ice, gen_field_replace_token='', ice_template=None,
                                                             prompt_template=template)
        out.append(measured.measure(prompt))
    return out


def rows_fit(abbr: str, engine: Dict, lengths: List[int]) -> RowsFit:
    need = [n + engine['max_out_len'] for n in lengths]
    return RowsFit(abbr, engine['band'], len(lengths), max(lengths, default=0), engine['max_out_len'],
                   engine['session_len'], engine['window'],
                   over_engine=sum(engine['session_len'] < x <= engine['window'] for x in need),
                   over_window=sum(x > engine['window'] for x in need))


def tokenizer_model(model_cfg: Dict):
    """The model config's wrapper with its tokenizer only (no engine, no GPU)."""
    from opencompass.utils import build_model_from_cfg

    from opencompass_longctx.combinations import without_run_options
    return build_model_from_cfg(without_run_options(dict(model_cfg, tokenizer_only=True)))
