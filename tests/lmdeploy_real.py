"""Shared by the tests that run LMDeploy 0.18's own Python (unpacked in .lmdeploy): the shipped model configs,
the rows' published config.json files (tests/data/model_configs) and the imports LMDeploy needs on a CPU."""
import contextlib
import json
import shutil
import sys
from unittest import mock

import pytest
from mmengine.config import Config

from conftest import REPO

DATA = REPO / 'tests' / 'data' / 'model_configs'


def lmdeploy_or_skip():
    try:
        import lmdeploy
    except ImportError:
        pytest.skip('lmdeploy not importable here')
    return lmdeploy


@contextlib.contextmanager
def without_zmq():
    """The PyTorch engine's package imports pyzmq for its disaggregated-serving connection (never used here); a
    stand-in module while it imports when pyzmq is not installed (CI unpacks LMDeploy without its dependencies)."""
    try:
        import zmq  # noqa: F401
        yield
        return
    except ImportError:
        pass
    sys.modules['zmq'] = sys.modules['zmq.asyncio'] = mock.MagicMock()
    try:
        yield
    finally:
        del sys.modules['zmq'], sys.modules['zmq.asyncio']


def shipped():
    """The shipped LMDeploy model configs by abbr."""
    return {m['abbr']: m for m in Config.fromfile(str(REPO / 'configs' / 'models' / 'lmdeploy_longctx.py'))[
        'lmdeploy_longctx_models']}


def published(abbr):
    return json.loads((DATA / f'{abbr}.json').read_text())


def model_dir(tmp_path, abbr):
    """A model directory holding the row's published config.json."""
    d = tmp_path / abbr
    d.mkdir(exist_ok=True)
    shutil.copy(DATA / f'{abbr}.json', d / 'config.json')
    return str(d)


def babilong(tier):
    return Config.fromfile(str(REPO / 'configs' / 'datasets' / 'babilong' / f'babilong_{tier}_gen.py'))[
        'babilong_datasets'][0]
