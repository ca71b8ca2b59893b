"""OpenCompass's ``LocalRunner`` with a console line each time a task starts its next dataset.

``LocalRunner`` sends each task's output to the task's log file and shows on the console only how many tasks are
done. With :class:`~opencompass_longctx.run.partitioner.LongCtxPartitioner` a task holds every dataset of one model
and tier band, so the console would show ``0/2`` for as long as a whole model runs. The tasks of
:mod:`opencompass_longctx.run.tasks` log ``The Progress of This Task --> Models: 1/1, Datasets: k/n`` before each
dataset; :class:`LongCtxLocalRunner` reads each running task's log file every few seconds and prints one line per
new dataset (the stage, the model, k/n, the dataset and the minutes since the task started):

    infer = dict(partitioner=dict(type=LongCtxPartitioner),
                 runner=dict(type=LongCtxLocalRunner, max_num_workers=2, task=dict(type=LongCtxInferTask)))
"""
import os
import re
import threading
import time

from opencompass.registry import RUNNERS
from opencompass.runners import LocalRunner
from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg
from tqdm import tqdm

PROGRESS = re.compile(r'The Progress of This Task --> Models: \d+/\d+, Datasets: (\d+)/(\d+)')


def progress_steps(text):
    """The (k, n) pairs of the progress lines in ``text``, in order."""
    return [(int(k), int(n)) for k, n in PROGRESS.findall(text)]


def progress_line(stage, task, k, n, seconds):
    """The console line for dataset ``k`` of ``n`` of ``task``."""
    abbrs = [dataset_abbr_from_cfg(d) for d in task.dataset_cfgs[0]]
    name = abbrs[k - 1] if 0 < k <= len(abbrs) else '?'
    return f'  {stage} {model_abbr_from_cfg(task.model_cfgs[0])}: dataset {k}/{n} {name} ({seconds / 60:.1f} min)'


class _LogWatcher(threading.Thread):
    """Prints a progress line for each new progress entry of one task's log file until stopped."""

    def __init__(self, task, path, stage, interval):
        super().__init__(daemon=True)
        self.task, self.path, self.stage, self.interval = task, path, stage, interval
        self.stop = threading.Event()
        self.offset, self.start_time = 0, time.time()

    def poll(self):
        try:
            with open(self.path, encoding='utf-8', errors='replace') as f:
                f.seek(self.offset)
                text = f.read()
        except OSError:
            return
        cut = text.rfind('\n') + 1   # a line still being written is read on the next poll
        self.offset += len(text[:cut].encode('utf-8', errors='replace'))
        for k, n in progress_steps(text[:cut]):
            tqdm.write(progress_line(self.stage, self.task, k, n, time.time() - self.start_time))

    def run(self):
        while not self.stop.wait(self.interval):
            self.poll()


@RUNNERS.register_module()
class LongCtxLocalRunner(LocalRunner):
    """``LocalRunner`` that prints each task's dataset progress on the console (``interval``: seconds between
    reads of a task's log file)."""

    def __init__(self, task, interval: float = 5.0, **kwargs):
        super().__init__(task=task, **kwargs)
        self.interval = interval

    def _launch(self, task, gpu_ids, index):
        path = task.get_log_path(file_extension='out')
        if os.path.exists(path):
            os.remove(path)   # LocalRunner rewrites it; an earlier attempt's lines are not this run's progress
        watcher = _LogWatcher(task, path, getattr(task, 'stage', '') or 'task', self.interval)
        watcher.start()
        try:
            return super()._launch(task, gpu_ids, index)
        finally:
            watcher.stop.set()
            watcher.join()
            watcher.poll()
