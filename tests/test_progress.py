"""LongCtxLocalRunner: a console line each time a task starts its next dataset (opencompass_longctx/run/progress.py)."""
from pathlib import Path
from types import SimpleNamespace

from opencompass_longctx.run.progress import LongCtxLocalRunner, progress_line, progress_steps

LINE = '12/02 21:36:51 - OpenCompass - INFO - The Progress of This Task --> Models: 1/1, Datasets: {k}/{n}'


class _Cfg:
    def dump(self, path):
        with open(path, 'w') as f:
            f.write('x = 1\n')


def _task(tmp_path, datasets, script):
    """A task as LocalRunner sees one: its command prints the progress lines the package's tasks log."""
    log = tmp_path / 'logs' / 'infer' / 'm' / 'a.out'
    return SimpleNamespace(
        name='OpenICLInfer[m/a]', stage='infer', cfg=_Cfg(), model_cfgs=[dict(abbr='m')],
        dataset_cfgs=[[dict(abbr=a) for a in datasets]], get_log_path=lambda file_extension='json': str(log),
        get_command=lambda cfg_path, template: template.format(task_cmd=script))


def test_progress_steps_are_read_from_the_task_log_lines():
    text = '\n'.join([LINE.format(k=1, n=3), 'Start inferencing', LINE.format(k=2, n=3)]) + '\n'
    assert progress_steps(text) == [(1, 3), (2, 3)]
    task = _task(Path('.'), ['qa1_0k', 'qa2_0k', 'qa3_0k'], '')
    assert progress_line('infer', task, 2, 3, 90) == '  infer m: dataset 2/3 qa2_0k (1.5 min)'


def test_each_dataset_of_a_running_task_gets_a_console_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    lines = [LINE.format(k=k, n=3) for k in (1, 2, 3)]
    script = '; '.join(f"echo '{line}'; sleep 0.3" for line in lines)
    runner = LongCtxLocalRunner(task=dict(type='LongCtxInferTask'), interval=0.05)
    name, rc = runner._launch(_task(tmp_path, ['qa1_0k', 'qa2_0k', 'qa3_0k'], script), [], 0)
    assert (name, rc) == ('OpenICLInfer[m/a]', 0)
    out = [ln.rsplit(' (', 1)[0] for ln in capsys.readouterr().out.splitlines() if 'dataset' in ln]
    assert out == ['  infer m: dataset 1/3 qa1_0k', '  infer m: dataset 2/3 qa2_0k', '  infer m: dataset 3/3 qa3_0k']
    assert (tmp_path / 'logs' / 'infer' / 'm' / 'a.out').read_text().splitlines() == lines   # the log is unchanged
