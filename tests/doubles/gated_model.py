"""The project's tiny chat model with a gate, for the preemption tests: a task stops in the middle of a dataset,
at a batch the test chooses, and waits there to be killed.

``GatedTinyChatModel`` is :class:`~opencompass_longctx.demo.tiny_chat.TinyChatModel` (its answers are the same,
token for token). With ``$LONGCTX_GATE_DIR`` set, the first model process (of all the run's tasks) that is about to
generate its ``$LONGCTX_GATE_AT``-th batch takes the gate (creates ``<gate dir>/held`` holding its pid, its Slurm
job id and the batches it finished: OpenCompass has saved each of them to ``tmp_<dataset>.jsonl``) and waits to be
killed. It never waits longer than ``$LONGCTX_GATE_TIMEOUT`` seconds (300): then it fails, so a test that does not
kill it fails instead of hanging. Without ``$LONGCTX_GATE_DIR`` it is the tiny model unchanged.
"""
import json
import os
import time

from opencompass_longctx.demo.tiny_chat import TinyChatModel
class GatedTinyChatModel(TinyChatModel):
    _batches = 0

    def generate(self, inputs, max_out_len, *args, **kwargs):
        gate = os.environ.get('LONGCTX_GATE_DIR')
        if gate and self._batches + 1 == int(os.environ.get('LONGCTX_GATE_AT', '1')):
            _hold(gate, self._batches)
        self._batches += 1
        return super().generate(inputs, max_out_len, *args, **kwargs)


def _hold(gate: str, done: int):
    try:
        fd = os.open(os.path.join(gate, 'held.tmp'), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return                                  # another task holds the gate: this one runs on
    with os.fdopen(fd, 'w') as f:
        json.dump({'pid': os.getpid(), 'slurm_job_id': os.environ.get('SLURM_JOB_ID'), 'batches_done': done}, f)
    os.rename(os.path.join(gate, 'held.tmp'), os.path.join(gate, 'held'))
    timeout = float(os.environ.get('LONGCTX_GATE_TIMEOUT', '300'))
    time.sleep(timeout)
    raise RuntimeError(f'gated model: not killed within {timeout:.0f} s at batch {done + 1}')
