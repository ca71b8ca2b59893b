"""What a resume checks (opencompass_longctx.run.resume_check), through the real `opencompass` command with the rule
reader: `-r` where nothing ran stops with one line naming the directory (LONGCTX_START_FRESH=1 starts from zero);
a run made under the official BABILong prompts and resumed with `-r` under the cleaned ones keeps the saved
predictions whose prompts did not change, sets aside (renamed, kept) those whose prompts changed, finished or saved
batches, and a saved batch with an index outside the dataset, and redoes those datasets from zero; the dry run
says which restart and why, and moves nothing."""
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from opencompass_longctx.run import resume_check
CONFIG = REPO / 'tests' / 'configs' / 'resume_check.py'
MODEL = 'rule-reader'


def _opencompass(cwd, env, *args, stdin=subprocess.DEVNULL):
    exe = Path(sys.executable).with_name('opencompass')
    return subprocess.run([str(exe), str(CONFIG), '-w', 'out', *args], cwd=cwd, env=dict(os.environ, **env),
                          stdin=stdin, capture_output=True, text=True, timeout=900)


def _saved_line(entries, idx, as_idx=None):
    return json.dumps({'idx': as_idx or idx, **entries[idx]}, ensure_ascii=False) + '\n'


@pytest.mark.e2e
def test_resume_under_other_prompts_redoes_what_changed(tmp_path):
    from opencompass_longctx.babilong.prompts import prompt_parts
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k',), tasks=['qa1', 'qa2', 'qa3', 'qa4'], samples=2)
    env = {'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'),
           'LONGCTX_TEST_PROMPTS': 'official'}
    env.pop(resume_check.START_FRESH_ENV, None)

    # -r in a directory where nothing ran: one line naming it, and no task starts
    empty = _opencompass(tmp_path, env, '-r')
    assert empty.returncode != 0
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    text = empty.stdout + empty.stderr
    assert f'-r: nothing to resume in {os.path.join("out", os.path.basename(run))}' in text
    assert f'set {resume_check.START_FRESH_ENV}=1 (or drop -r) to start from zero' in text
    assert not os.path.exists(os.path.join(run, 'predictions')) and not os.path.exists(os.path.join(run, 'logs'))

    # ... and with LONGCTX_START_FRESH=1 it starts from zero there (the official prompts)
    first = _opencompass(tmp_path, dict(env, **{resume_check.START_FRESH_ENV: '1'}), '-r')
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert 'starting from zero (LONGCTX_START_FRESH=1)' in first.stdout
    pred, res = Path(run, 'predictions', MODEL), Path(run, 'results', MODEL)
    official = {t: json.loads((pred / f'babilong_{t}_0k.json').read_text()) for t in ('qa1', 'qa2', 'qa3', 'qa4')}
    kept = (pred / 'babilong_qa1_0k.json').read_bytes()

    # an interrupted state: qa2 has one saved batch and qa3 one whose index is outside the dataset (both official),
    # qa1 and qa4 are finished
    for t, line in (('qa2', _saved_line(official['qa2'], '0')), ('qa3', _saved_line(official['qa3'], '0', '5'))):
        (pred / f'babilong_{t}_0k.json').unlink()
        (res / f'babilong_{t}_0k.json').unlink()
        (pred / f'tmp_babilong_{t}_0k.jsonl').write_text(line)
    env['LONGCTX_TEST_PROMPTS'] = 'cleaned'

    dry = _opencompass(tmp_path, env, '-r', '--dry-run')
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    plan = json.loads(Path(run, 'plan', 'longctx_plan.json').read_text())
    restarted = {r['dataset']: r for r in plan['resume']['restarted']}
    assert sorted(restarted) == ['babilong_qa2_0k', 'babilong_qa3_0k', 'babilong_qa4_0k']
    assert 'the saved prompt differs' in restarted['babilong_qa2_0k']['reason']
    assert 'sample index 5 is outside the current dataset of 2 samples' in restarted['babilong_qa3_0k']['reason']
    assert 'the saved prompt differs' in restarted['babilong_qa4_0k']['reason']
    assert 'Restarting from zero' in dry.stdout and 'will be set aside' in dry.stdout
    assert sorted(plan['task_list'][0]['datasets']) == ['babilong_qa2_0k', 'babilong_qa3_0k', 'babilong_qa4_0k']
    assert (pred / 'tmp_babilong_qa2_0k.jsonl').exists() and (pred / 'babilong_qa4_0k.json').exists()  # not moved

    resumed = _opencompass(tmp_path, env, '-r')
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    logs = '\n'.join(p.read_text() for p in Path(run, 'logs').rglob('*.out'))
    assert 'Traceback' not in logs and 'KeyError' not in logs
    aside = sorted(p.name.split(resume_check.SET_ASIDE)[0] for p in pred.glob(f'*{resume_check.SET_ASIDE}*'))
    assert aside == ['babilong_qa4_0k.json', 'tmp_babilong_qa2_0k.jsonl', 'tmp_babilong_qa3_0k.jsonl']
    assert [p.name.split(resume_check.SET_ASIDE)[0] for p in res.glob(f'*{resume_check.SET_ASIDE}*')] == \
        ['babilong_qa4_0k.json']
    assert (pred / 'babilong_qa1_0k.json').read_bytes() == kept          # same prompts: reused as it was
    cleaned = {t: prompt_parts(t, 'cleaned')['instruction'] for t in ('qa2', 'qa4')}
    old = {t: prompt_parts(t, 'official')['instruction'] for t in ('qa2', 'qa4')}
    for t in ('qa2', 'qa4'):                                             # every sample under the cleaned prompts
        final = json.loads((pred / f'babilong_{t}_0k.json').read_text())
        assert sorted(final) == ['0', '1']
        for entry in final.values():
            prompt = json.dumps(entry['origin_prompt'], ensure_ascii=False)
            assert json.dumps(cleaned[t], ensure_ascii=False)[1:-1] in prompt
            assert json.dumps(old[t], ensure_ascii=False)[1:-1] not in prompt
        assert (res / f'babilong_{t}_0k.json').exists()
    assert sorted(json.loads((pred / 'babilong_qa3_0k.json').read_text())) == ['0', '1']
    assert (res / 'babilong_qa3_0k.json').exists()


@pytest.mark.e2e
def test_resume_without_the_instruction_redoes_every_dataset_naming_its_first_sample(tmp_path):
    """Issue 41: `use_instruction=False` after a run with it. Each new prompt is a part of the old one, and the old
    check (every current message found in the saved prompt) reused the saved predictions; the whole prompts are
    compared now, so the dry run of `-r` restarts every dataset, each with its first differing sample."""
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k',), tasks=['qa1', 'qa2', 'qa3', 'qa4'], samples=2)
    env = {'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    first = _opencompass(tmp_path, env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    dry = _opencompass(tmp_path, dict(env, LONGCTX_TEST_INSTRUCTION='0'), '-r', os.path.basename(run), '--dry-run')
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    plan = json.loads(Path(run, 'plan', 'longctx_plan.json').read_text())
    restarted = {r['dataset']: r['reason'] for r in plan['resume']['restarted']}
    assert sorted(restarted) == [f'babilong_qa{i}_0k' for i in range(1, 5)], plan['resume']
    assert all(r.startswith("sample 0: the saved prompt differs from the current dataset's (another prompt or "
                            'config; from character ') for r in restarted.values()), restarted


def _as_cli(monkeypatch, *argv):
    """The state check_reuse reads in the `opencompass` process: its CLI module loaded and its argv."""
    import opencompass.cli.main as cli
    monkeypatch.setitem(sys.modules, 'opencompass.cli.main', cli)
    monkeypatch.setattr(sys, 'argv', ['opencompass', 'cfg.py', *argv])


class _Tty:
    def __init__(self, answer):
        self.answer = answer

    def isatty(self):
        return True

    def readline(self):
        return self.answer + '\n'


def test_reuse_of_an_empty_run_dir_asks_on_a_terminal(tmp_path, monkeypatch, capsys):
    import pytest
    run = str(tmp_path / 'out' / '20261202_101010')
    os.makedirs(os.path.join(run, 'configs'))
    monkeypatch.delenv(resume_check.START_FRESH_ENV, raising=False)
    monkeypatch.setattr(resume_check, '_confirmed', [])
    _as_cli(monkeypatch)                                          # no -r: nothing asked
    assert resume_check.check_reuse(run, dry=False) == ''
    _as_cli(monkeypatch, '-r')
    assert 'the run would start from zero' in resume_check.check_reuse(run, dry=True)
    monkeypatch.setattr(sys, 'stdin', _Tty('n'))
    with pytest.raises(resume_check.NothingToResume, match='stopped. Check -w'):
        resume_check.check_reuse(run, dry=False)
    assert f'nothing to resume in {run}' in capsys.readouterr().out    # the question names the directory
    monkeypatch.setattr(sys, 'stdin', _Tty('y'))
    assert 'starting from zero (confirmed)' in resume_check.check_reuse(run, dry=False)
    assert resume_check.check_reuse(run, dry=False) == ''        # asked once per process (the eval stage too)
    other = str(tmp_path / 'out' / 'earlier')
    os.makedirs(os.path.join(other, 'logs', 'infer'))
    Path(other, 'logs', 'infer', 'x.out').write_text('')
    monkeypatch.setattr(sys, 'stdin', _Tty('n'))
    assert resume_check.check_reuse(other, dry=False) == ''      # an earlier run's logs: something to resume


def _human(text):
    from opencompass.utils.prompt import PromptList
    return PromptList([dict(section='round', pos='begin'), dict(role='HUMAN', prompt=text),
                       dict(section='round', pos='end')])


def test_mismatch_reasons():
    meta = dict(round=[dict(role='HUMAN', api_role='HUMAN', begin='<s>', end='</s>'),
                       dict(role='BOT', api_role='BOT', generate=True)])
    current = [resume_check.Sample.of(_human('Question one'), 'a', meta),
               resume_check.Sample.of(_human('Question two'), 'b', meta)]
    saved = {'0': {'origin_prompt': [{'role': 'HUMAN', 'prompt': '<s>Question one</s>'}], 'gold': 'a'}}
    assert resume_check.mismatch(saved, current, finished=False) == ''
    assert 'hold 1 sample, the current dataset has 2' in resume_check.mismatch(saved, current, finished=True)
    assert 'gold answer differs' in resume_check.mismatch({'0': dict(saved['0'], gold='z')}, current, False)
    assert 'prompt differs' in resume_check.mismatch({'0': dict(saved['0'], origin_prompt='Question two')},
                                                     current, False)
    assert 'index 7 is outside' in resume_check.mismatch({'0': saved['0'], '7': saved['0']}, current, False)
    second = {'1': {'origin_prompt': '<s>Question two</s>', 'gold': 'b'}}   # a model without a chat template
    assert 'not the first 1 (missing index 0)' in resume_check.mismatch(second, current, False)
    # an ordered run's tmp file: the first issued samples, each checked against its own index before the order
    assert resume_check.mismatch(second, current, False, order=[1, 0]) == ''
    assert 'not the first 1 issued (missing index 0)' in resume_check.mismatch(second, current, False, order=[0, 1])
    assert 'sample 1: the saved prompt differs' in resume_check.mismatch(
        {'1': dict(second['1'], origin_prompt='<s>Question one</s>')}, current, False, order=[0, 1])


def test_a_prompt_that_is_part_of_the_saved_one_is_another_prompt():
    """Issue 41: use_instruction=False makes each prompt a part of the one with the instruction; the old check (every
    current message found in the saved prompt) reused the saved predictions. Now the whole prompts are compared
    (sha256), and the first differing sample is named with where it differs."""
    with_instruction = resume_check.Sample.of(_human('Instruction.\nContext.\nQuestion?'), 'x')
    without = [resume_check.Sample.of(_human('Context.\nQuestion?'), 'x')]
    saved = {'0': {'origin_prompt': with_instruction.messages, 'gold': 'x'}}
    reason = resume_check.mismatch(saved, without, finished=True)
    assert reason.startswith("sample 0: the saved prompt differs from the current dataset's"), reason
    assert "from character 0 of 32 saved / 19 now: saved 'Instruction.\\nContext.\\nQuestion', now 'Context." in reason, \
        reason
    assert resume_check.mismatch(saved, [with_instruction], finished=True) == ''
    assert resume_check.prompt_digest(with_instruction.messages) != resume_check.prompt_digest(without[0].messages)


def test_a_prompt_saved_with_its_answer_prefix_is_the_current_prompt():
    """LongBioBench's answer prefix: the package's chat wrappers send the final BOT turn (prefill), OpenCompass's own
    parser drops it; a saved prompt that was sent either way matches, another prefix does not."""
    from opencompass.utils.prompt import PromptList

    from opencompass_longctx.models.prefill import PrefillTemplateParser
    from opencompass_longctx.run.resume_check import Sample
    prompt = PromptList([dict(section='round', pos='begin'), dict(role='HUMAN', prompt='Who is Ann?'),
                         dict(role='BOT', prompt='Based on the context,'), dict(section='round', pos='end')])
    sample = Sample.of(prompt)
    meta = dict(round=[dict(role='HUMAN', api_role='HUMAN'), dict(role='SYSTEM', api_role='HUMAN'),
                       dict(role='BOT', api_role='BOT', generate=True)])   # OpenCompass's default chat roles
    sent = json.loads(json.dumps(PrefillTemplateParser(meta).parse_template(prompt, mode='gen')))
    assert sent[-1]['prefill'] is True and sample.differs(sent) is None
    assert sample.differs(sample.messages) is None
    other = [dict(m) for m in sent]
    other[-1]['prompt'] = 'Based on the bios,'
    assert 'saved' in sample.differs(other)
