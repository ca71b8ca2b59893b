"""A regular (not editable) install: build the wheel, install it into a fresh virtual environment, and run a user
config that lives outside the repository through `opencompass`; it imports the project's configs by the package
path and a tier file copied into the user's workspace. Then OpenCompass's command-line form in that workspace.

Cheap: the fresh environment gets the wheel only (--no-deps); torch, OpenCompass and the rest come from the
development environment's site-packages, made visible with a plain path in a .pth file (its own .pth hooks, among
them this package's editable-install finder, are not run, so the wheel is what gets imported)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import REPO, assert_clean_logs, summary_by_dataset

pytestmark = pytest.mark.e2e

USER_CONFIG = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.demo.datasets import DemoBabilongDataset
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_0k_gen import babilong_datasets as babilong_0k
    from opencompass_longctx.configs.datasets.longbio.longbio_1k_gen import longbio_datasets as longbio_1k
    from opencompass_longctx.configs.models.longctx_tiny_chat import models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from .babilong_3k_gen import babilong_datasets as babilong_3k   # a tier copied into this workspace

datasets = [dict(d, type=DemoBabilongDataset, path='babilong', num_samples=1)
            for d in [*babilong_0k[:2], *babilong_3k[:2]]]
datasets += [dict(d, num_samples=1) for d in longbio_1k if d['cell'] in ('standard', 'calculation')]
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
'''


def run(cmd, cwd, env, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f'{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}'
    return proc


@pytest.fixture(scope='module')
def wheel_env(tmp_path_factory):
    """A fresh virtual environment with the project's wheel installed, and an environment to run it in."""
    tmp = tmp_path_factory.mktemp('install')
    src = tmp / 'src'   # the working tree's package, as a fresh checkout has it
    shutil.copytree(REPO / 'opencompass_longctx', src / 'opencompass_longctx',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    for name in ('setup.py', 'README.md'):
        shutil.copy(REPO / name, src / name)
    env = dict(os.environ, PIP_NO_INDEX='1', PIP_DISABLE_PIP_VERSION_CHECK='1', HF_HUB_OFFLINE='1')
    env.pop('PYTHONPATH', None)
    run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q', '-w', str(tmp / 'dist'),
         str(src)], tmp, env)
    (wheel,) = glob.glob(str(tmp / 'dist' / 'opencompass_longctx-*.whl'))
    venv = tmp / 'venv'
    run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], tmp, env)
    python = str(venv / 'bin' / 'python')
    run([sys.executable, '-m', 'pip', '--python', python, 'install', '--no-deps', '-q', wheel], tmp, env)
    purelib = run([python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], tmp, env).stdout.strip()
    dev = [sysconfig.get_paths()['purelib']] + ([str(REPO / '.lmdeploy')] if (REPO / '.lmdeploy').is_dir() else [])
    with open(os.path.join(purelib, 'dev_site_packages.pth'), 'w') as f:
        f.write(''.join(p + '\n' for p in dev))
    env = dict(env, PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv))
    return dict(venv=venv, python=python, env=env, purelib=purelib)


def test_the_wheel_is_what_gets_imported(wheel_env):
    code = ('import opencompass_longctx, opencompass; from mmengine.utils import get_installed_path; '
            'print(opencompass_longctx.__file__); print(get_installed_path("opencompass_longctx")); '
            'print(opencompass.__file__)')
    pkg, resolved, oc = run([wheel_env['python'], '-c', code], '/', wheel_env['env']).stdout.split()
    assert pkg.startswith(wheel_env['purelib']) and resolved.startswith(wheel_env['purelib'])
    assert not oc.startswith(wheel_env['purelib'])   # OpenCompass itself is the development one (not reinstalled)
    cfg_dir = run([wheel_env['python'], '-m', 'opencompass_longctx.configs'], '/', wheel_env['env']).stdout.strip()
    assert cfg_dir == os.path.join(wheel_env['purelib'], 'opencompass_longctx', 'configs')
    for rel in ('datasets/babilong/babilong_4k_gen.py', 'datasets/longbio/longbio_base.py',
                'datasets/nolima/nolima_250_gen.py', 'models/longctx_tiny_chat.py', 'summarizers/longctx.py',
                'tier_table.py'):
        assert os.path.isfile(os.path.join(cfg_dir, rel)), rel


def test_a_user_config_outside_the_repository_runs_with_a_copied_tier(wheel_env, tmp_path, tiny_model_dir):
    env = dict(wheel_env['env'], LONGCTX_TINY_MODEL=tiny_model_dir, LONGCTX_CACHE_DIR=str(tmp_path / 'cache'),
               LONGCTX_PROGRESS='0')
    ws = tmp_path / 'workspace'
    ws.mkdir()
    # "Add a tier" in a workspace: copy a tier file from the installed package and change TIER
    cfg_dir = run([wheel_env['python'], '-m', 'opencompass_longctx.configs'], ws, env).stdout.strip()
    text = open(os.path.join(cfg_dir, 'datasets', 'babilong', 'babilong_4k_gen.py')).read()
    (ws / 'babilong_3k_gen.py').write_text(text.replace("TIER = '4k'", "TIER = '3k'"))
    (ws / 'eval_mine.py').write_text(USER_CONFIG)
    run([wheel_env['python'], '-m', 'opencompass.cli.main', 'eval_mine.py', '-w', 'out'], ws, env)
    (run_dir,) = glob.glob(str(ws / 'out' / '*'))
    assert_clean_logs(run_dir)
    rows = summary_by_dataset(run_dir)
    for abbr in ('babilong_qa1_0k', 'babilong_qa2_3k', 'longbio_standard_1k', 'longbio_calculation_1k'):
        float(rows[abbr]['tiny-chat'])   # a number, not '-'
    # the tasks ran in subprocesses of the fresh environment, importing the installed package
    (dumped,) = glob.glob(os.path.join(run_dir, 'configs', '*.py'))
    assert "'opencompass_longctx.babilong.dataset.BabilongDataset'" in open(dumped).read()
    (js,) = glob.glob(os.path.join(run_dir, 'summary', 'longctx_*.json'))
    assert json.load(open(js))['tiers'] == ['0k', '1k', '3k']


def test_command_line_form_in_a_user_workspace(wheel_env, tmp_path, tiny_model_dir):
    """`opencompass --datasets ... --models ... --summarizer ...` outside the repository: --config-dir points at
    the installed configs. OpenCompass ships a babilong_0k_gen of its own; the --config-dir one is taken.
    `<file>/<key suffix>` picks lists by name: longbio_1k_gen/longbio_datasets is the authors' mode only."""
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k',), samples=1)   # qa1-qa10, 1 sample each
    env = dict(wheel_env['env'], LONGCTX_TINY_MODEL=tiny_model_dir, LONGCTX_CACHE_DIR=str(tmp_path / 'cache'),
               LONGCTX_PROGRESS='0', BABILONG_DATA=str(tmp_path / 'babilong'), LONGBIO_NUM_SAMPLES='1')
    ws = tmp_path / 'workspace'
    ws.mkdir()
    cfg_dir = run([wheel_env['python'], '-m', 'opencompass_longctx.configs'], ws, env).stdout.strip()
    proc = run([wheel_env['python'], '-m', 'opencompass.cli.main', '--config-dir', cfg_dir,
                '--datasets', 'babilong_0k_gen', 'longbio_1k_gen/longbio_datasets', '--models', 'longctx_tiny_chat',
                '--summarizer', 'longctx', '--debug', '-w', 'out'], ws, env)
    assert f'{cfg_dir}/datasets/babilong/babilong_0k_gen.py' in proc.stdout + proc.stderr
    (run_dir,) = glob.glob(str(ws / 'out' / '*'))
    rows = summary_by_dataset(run_dir)
    assert float(rows['babilong_qa1_0k']['tiny-chat']) >= 0 and float(rows['longbio_standard_1k']['tiny-chat']) >= 0
    (js,) = glob.glob(os.path.join(run_dir, 'summary', 'longctx_*.json'))
    assert {r['bench'] for r in json.load(open(js))['rows']} == {'babilong', 'longbio'}
