"""examples/eval_longctx_cpu.py before and after `longctx-smollm2`: one line that names the command, or the config."""
import pytest
from conftest import REPO
from mmengine.config import Config

EXAMPLE = str(REPO / 'examples' / 'eval_longctx_cpu.py')


def test_a_missing_smollm2_stops_the_example_with_one_line_naming_longctx_smollm2(tmp_path, monkeypatch):
    monkeypatch.setenv('LONGCTX_SMOLLM2_DIR', str(tmp_path / 'not-converted'))
    with pytest.raises(SystemExit) as stop:
        Config.fromfile(EXAMPLE, format_python_code=False)
    message = str(stop.value)
    assert '`longctx-smollm2`' in message and str(tmp_path / 'not-converted') in message and '\n' not in message


def test_a_converted_smollm2_directory_gives_the_two_models_and_the_progress_runner(tmp_path, monkeypatch):
    from opencompass_longctx.run.progress import LongCtxLocalRunner
    (tmp_path / 'config.json').write_text('{}')
    monkeypatch.setenv('LONGCTX_SMOLLM2_DIR', str(tmp_path))
    cfg = Config.fromfile(EXAMPLE, format_python_code=False)
    assert [m['abbr'] for m in cfg.models] == ['smollm2-135m-instruct', 'rule-reader']
    assert cfg.infer.runner.type is LongCtxLocalRunner and cfg.eval.runner.type is LongCtxLocalRunner
