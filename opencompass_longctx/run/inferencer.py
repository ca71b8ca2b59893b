"""``LongCtxGenInferencer``: OpenCompass's GenInferencer with an explicit over-length policy.

Before a batch goes to the model, each prompt's length is measured with the model's own tokenizer *after* its
chat template, as the wrapper renders it (each message, the answer prefix continued). A prompt whose length plus ``max_out_len`` exceeds the
model's ``max_seq_len`` is not sent (OpenCompass's HF wrapper would cut its start, TurboMind's ``drop_middle``
its middle, where the needle is): its prediction is :data:`~opencompass_longctx.overlength.OVER_LENGTH` and
the evaluators count it as over-length. ``overlength='skip'`` is the only policy, and the default; it is
recorded in the log with the counts.

``model_window`` (set by :class:`~opencompass_longctx.run.partitioner.LongCtxPartitioner` when it gives a tier band an
engine smaller than the model's window): a prompt over the band's ``max_seq_len`` that the model's own window
would hold is an engine-sizing miss, not an over-length prompt. It is not sent either, but its prediction is
:data:`~opencompass_longctx.overlength.ENGINE_TOO_SMALL`, the log says so at ERROR level, and the evaluators and
the tier table report the dataset as incomplete with the reason.
"""
import copy
import inspect
import json

from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.utils import get_logger

from opencompass_longctx.models.responses import ChecksPrompts, PromptCheck
from opencompass_longctx.overlength import ENGINE_TOO_SMALL, OVER_LENGTH
POLICIES = ('skip',)


class LongCtxGenInferencer(GenInferencer):

    def __init__(self, *args, overlength: str = 'skip', model_window: int = None, reuse_order: bool = True,
                 **kwargs):
        if overlength not in POLICIES:
            raise ValueError(f'unknown over-length policy {overlength!r}; choose one of {POLICIES}')
        super().__init__(*args, **kwargs)
        self.overlength, self.model_window = overlength, model_window
        self.reuse_order = reuse_order

    def inference(self, *args, **kwargs):
        """Issue the dataset's prompts in prefix-reuse order (``reuse_order=True``), answer in dataset order.

        GenInferencer runs on a view of the dataset permuted by :func:`issue_order`; its output handler files each
        prediction under the sample's dataset index, so the saved ``tmp_*.jsonl`` holds the first ``k`` samples of
        the issue order under their own indices, a resume (OpenCompass continues at position ``len(tmp)``) goes on
        with the rest, and the finished predictions file and the returned list are in dataset order, the same as
        an unordered run's. The order is a function of the prompt texts, so a resumed run and
        :mod:`~opencompass_longctx.run.resume_check` find the same one."""
        if not self.reuse_order:
            return self._measured_inference(*args, **kwargs)
        args_ = inspect.signature(GenInferencer.inference).bind(self, *args, **kwargs)
        args_.apply_defaults()
        call = {k: v for k, v in args_.arguments.items() if k != 'self'}
        retriever = call['retriever']
        order = issue_order(retriever, call['ice_template'], call['prompt_template'], self.gen_field_replace_token)
        if order == sorted(order):
            return self._measured_inference(**call)
        call['retriever'] = _permuted(retriever, order)
        from opencompass.openicl.icl_inferencer import icl_gen_inferencer
        plain = icl_gen_inferencer.GenInferencerOutputHandler
        icl_gen_inferencer.GenInferencerOutputHandler = type('InDatasetOrder', (_InDatasetOrder, plain),
                                                             {'order': order})
        try:
            return self._measured_inference(**call)
        finally:
            icl_gen_inferencer.GenInferencerOutputHandler = plain

    def _measured_inference(self, *args, **kwargs):
        model = self.model
        limit = self.max_seq_len or getattr(model, 'max_seq_len', None)
        if not limit:
            return super().inference(*args, **kwargs)
        window = self.model_window if self.model_window and self.model_window > limit else None
        measured = MeasuredModel(model, limit, window)
        expects = isinstance(model, ChecksPrompts)   # the LMDeploy wrapper judges its engine's responses by it
        if expects:
            model.expect_prompts(measured.check)
        self.model = measured
        try:
            return super().inference(*args, **kwargs)
        finally:
            self.model = model
            if expects:
                model.expect_prompts(None)
            _log_counts(self.overlength, measured.stats, limit, window)


def _log_counts(overlength, stats, limit, window):
    """The over-length policy's counts in the log (the engine-sizing misses at ERROR level)."""
    total = stats['over'] + stats['engine'] + stats['sent']
    get_logger().info(f'over-length policy {overlength!r}: {stats["over"]} of {total} prompts longer '
                      f'than max_seq_len {limit} minus max_out_len were not sent to the model')
    if stats['engine']:
        get_logger().error(
            f'{stats["engine"]} of {total} prompts fit the model (window {window}) but not the engine '
            f'LongCtxPartitioner sized for this tier band (max_seq_len {limit}); they were not sent and the '
            'dataset is reported as incomplete. Delete its predictions and rerun it with -r and '
            'LongCtxPartitioner(headroom=...) larger, or a band of its own.')


class MeasuredModel:
    """The model as GenInferencer sees it while :class:`LongCtxGenInferencer` runs: each prompt measured once, as
    the wrapper sends it; a prompt whose length plus ``max_out_len`` exceeds ``limit`` is answered with its marker
    and never sent; every other attribute is the model's own. ``check`` holds what the wrapper is told
    (:class:`~opencompass_longctx.models.responses.PromptCheck`), ``stats`` the prompts sent and held back."""

    def __init__(self, model, limit: int, window=None):
        self.model, self.limit, self.window = model, limit, window
        self.check = PromptCheck(window=window)
        self.stats = {'sent': 0, 'over': 0, 'engine': 0}
        self._memo = {}

    def __getattr__(self, name):
        return getattr(self.model, name)

    def get_token_len(self, prompt):  # GenInferencer measures every prompt too: tokenize each one once
        key = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
        if key not in self._memo:
            self._memo[key] = self.model.get_token_len(prompt)
        return self._memo[key]

    def get_token_len_from_template(self, templates, mode='ppl'):
        """The model's own method, measuring with :meth:`get_token_len`."""
        return type(self.model).get_token_len_from_template(self, templates, mode=mode)

    def measure(self, template):
        """The prompt's tokens as the wrapper sends it: its messages through the chat template (OpenCompass's
        get_token_len_from_template joins them into one user message, a few tokens short per message)."""
        parsed = self.model.parse_template(template, mode='gen')
        if not isinstance(parsed, str):
            try:
                return self.get_token_len(parsed)
            except (TypeError, AttributeError, KeyError):  # a model that measures strings only
                pass
        return self.get_token_len(str(parsed))

    def generate_from_template(self, templates, max_out_len, **kw):
        # the model returns num_return_sequences outputs per prompt, one after another; GenInferencer groups
        # them again (it reads the count the same way): an unsent prompt gets as many markers
        per_prompt = getattr(self.model, 'generation_kwargs', {}).get('num_return_sequences', 1)
        need = [self.measure(t) + max_out_len for t in templates]
        fits = [n <= self.limit for n in need]
        unsent = [None if ok else ENGINE_TOO_SMALL if self.window and n <= self.window else OVER_LENGTH
                  for n, ok in zip(need, fits)]
        keep = [t for t, ok in zip(templates, fits) if ok]
        # the count each sent prompt was judged by: the LMDeploy wrapper compares it with the engine's own
        self.check.counts = [n - max_out_len for n, ok in zip(need, fits) if ok]
        outs = iter(self.model.generate_from_template(keep, max_out_len=max_out_len, **kw) if keep else [])
        self.stats['sent'] += len(keep)
        self.stats['engine'] += unsent.count(ENGINE_TOO_SMALL)
        self.stats['over'] += unsent.count(OVER_LENGTH)
        return [next(outs) if ok else marker for ok, marker in zip(fits, unsent) for _ in range(per_prompt)]


def issue_order(retriever, ice_template=None, prompt_template=None, replace_token='') -> list:
    """The order the dataset's prompts are issued in: :func:`~opencompass_longctx.prefix_reuse.reuse_order` of each
    prompt's text, rendered as GenInferencer renders it (retriever and prompt template; the model's meta template
    adds the same text to every prompt, so it does not change the order)."""
    from opencompass_longctx.prefix_reuse import reuse_order
    from opencompass_longctx.run.resume_check import prompt_pieces
    texts = []
    for idx, ice_idx in enumerate(retriever.retrieve()):
        ice = retriever.generate_ice(ice_idx, ice_template=ice_template)
        prompt = retriever.generate_prompt_for_generate_task(idx, ice, gen_field_replace_token=replace_token,
                                                             ice_template=ice_template, prompt_template=prompt_template)
        texts.append('\n'.join(prompt_pieces(prompt)))
    return reuse_order(texts)


def _permuted(retriever, order):
    """A shallow copy of ``retriever`` whose test split is the dataset's samples in ``order``."""
    view, reader = copy.copy(retriever), copy.copy(retriever.dataset_reader)
    splits = copy.copy(reader.dataset)
    splits['test'] = splits['test'].select(order)
    reader.dataset = splits
    view.dataset_reader, view.test_ds = reader, splits['test']
    return view


class _InDatasetOrder:
    """Mixin for OpenCompass's GenInferencerOutputHandler: the ``idx`` GenInferencer passes is the position in
    issue order (``order``); the prediction is filed under the sample's dataset index, and the finished file lists
    them by index."""
    order = ()

    def save_results(self, origin_prompt, prediction, idx, *args, **kwargs):
        return super().save_results(origin_prompt, prediction, self.order[idx], *args, **kwargs)

    def write_to_json(self, save_dir, filename):
        self.results_dict = {k: self.results_dict[k] for k in sorted(self.results_dict, key=int)}
        return super().write_to_json(save_dir, filename)
