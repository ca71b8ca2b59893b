"""What a model is (issue 41, item 1), on model directories made here: the fingerprint a run records of a model's
weights (the same bytes under another root agree, another checkpoint of the same shape does not), the identities the
merge compares (never a path's last component) and the names of models kept apart under one abbr."""
import json
import os
import shutil

import pytest

from opencompass_longctx.leaderboard.identity import compare, labels, model_identity, moved, path_parts
from opencompass_longctx.weights import MODELS_FILE, read_recorded, record_models, weights_fingerprint

TYPE = 'opencompass_longctx.models.hf.LongCtxHFChatModel'


def _checkpoint(root, flip_at=None, size=600_000):
    """A model directory: config.json, a tokenizer file and a weight file (one byte changed at ``flip_at``)."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, 'config.json'), 'w') as f:
        json.dump({'architectures': ['LlamaForCausalLM'], 'hidden_size': 32}, f)
    with open(os.path.join(root, 'tokenizer.json'), 'w') as f:
        f.write('{"model": {"type": "BPE"}}')
    data = bytearray((i * 7) % 251 for i in range(size))
    if flip_at is not None:
        data[flip_at] ^= 0xFF
    with open(os.path.join(root, 'model.safetensors'), 'wb') as f:
        f.write(data)
    return str(root)


def test_the_same_weights_under_another_root_have_one_fingerprint_another_checkpoint_not(tmp_path):
    exp1 = _checkpoint(tmp_path / 'ckpt' / 'exp1' / 'final')
    moved_copy = shutil.copytree(exp1, tmp_path / 'cluster2' / 'exp1' / 'final')
    fp = weights_fingerprint(exp1)
    assert fp and fp == weights_fingerprint(str(moved_copy))
    # a fine-tune of the same shape: same names and sizes, other bytes in the middle of the weights
    exp2 = _checkpoint(tmp_path / 'ckpt' / 'exp2' / 'final', flip_at=300_000)
    assert weights_fingerprint(exp2) != fp
    assert weights_fingerprint(str(tmp_path / 'nowhere')) is None and weights_fingerprint('org/hub-id') is None


def test_a_run_records_each_model_once_where_its_weights_are(tmp_path):
    exp1 = _checkpoint(tmp_path / 'exp1' / 'final')
    run = tmp_path / 'run'
    run.mkdir()
    cfg = dict(type=TYPE, abbr='final', path=exp1, tokenizer_path='org/tokenizer')
    assert record_models(str(run), [('final', cfg)]) == str(run / MODELS_FILE)
    rec = read_recorded(str(run))['final']
    assert rec['path'] == {'given': exp1, 'path': os.path.realpath(exp1), 'weights': weights_fingerprint(exp1)}
    assert rec['tokenizer_path'] == {'given': 'org/tokenizer', 'path': 'org/tokenizer', 'weights': None}
    # a resumed run keeps the first record, even when the directory changed since
    _checkpoint(tmp_path / 'exp1' / 'final', flip_at=10)
    record_models(str(run), [('final', cfg)])
    assert read_recorded(str(run))['final'] == rec
    assert read_recorded(str(tmp_path / 'no-run')) == {}


def _identity(path, recorded=True, **settings):
    cfg = dict(type=TYPE, abbr='final', path=path, max_out_len=50, **settings)
    rec = {'path': {'given': path, 'path': path, 'weights': weights_fingerprint(path)}} if recorded else None
    return model_identity(cfg, rec)


def test_two_checkpoints_named_final_are_two_models(tmp_path):
    a = _identity(_checkpoint(tmp_path / 'ckpt' / 'exp1' / 'final'))
    b = _identity(_checkpoint(tmp_path / 'ckpt' / 'exp2' / 'final', flip_at=5))
    diff, _ = compare(a, b)
    assert diff and diff[0].startswith(f'path: "{tmp_path}/ckpt/exp1/final" / "{tmp_path}/ckpt/exp2/final" (weights ')
    # without a recorded fingerprint (an older run) the full paths decide: still two models, never the basename
    a_old, b_old = (_identity(str(tmp_path / 'ckpt' / e / 'final'), recorded=False) for e in ('exp1', 'exp2'))
    assert compare(a_old, b_old)[0] == [f'path: "{tmp_path}/ckpt/exp1/final" / "{tmp_path}/ckpt/exp2/final"']
    assert labels([a, b]) == ['exp1', 'exp2'] and labels([b, a]) == ['exp2', 'exp1']


def test_long_values_that_differ_near_their_ends_never_read_the_same():
    """A reason or a name cut to its first characters could show two models as the same text: the differing part
    stays in sight, and a path is shown whole."""
    deep = '/mnt/shared/checkpoints/experiments/2026/a-long-model-name-with-rope-scaling-and-yarn/{}/final'
    a, b = (model_identity(dict(type=TYPE, path=deep.format(e))) for e in ('exp1', 'exp2'))
    assert compare(a, b)[0] == [f'path: "{deep.format("exp1")}" / "{deep.format("exp2")}"']
    template = [dict(role='HUMAN', begin='<|im_start|>user\n' * 4, end=end) for end in ('<|im_end|>', '</s>')]
    a, b = (model_identity(dict(type=TYPE, path='/m', meta_template=dict(round=[t]))) for t in template)
    (diff,), _ = compare(a, b)
    left, right = diff.split(': ', 1)[1].split(' / ')
    assert left != right and '<|im_end|>' in left and '</s>' in right and len(left) <= 80
    names = labels([a, b])
    assert len(set(names)) == 2 and '<|im_end|>' in names[0] and '</s>' in names[1]
    # three: each is shown from where it parts from the one most like it, so no two read the same
    ends = ('<|im_end|>A', '<|im_end|>B', '</s>')
    three = [model_identity(dict(type=TYPE, path='/m', meta_template=dict(round=[dict(
        role='HUMAN', begin='<|im_start|>user\n' * 4, end=end)]))) for end in ends]
    names = labels(three)
    assert len(set(names)) == 3 and all(e in n for e, n in zip(ends, names)), names


def test_the_same_weights_under_another_root_are_one_model_where_both_runs_recorded_them(tmp_path):
    exp1 = _checkpoint(tmp_path / 'ckpt' / 'exp1' / 'final')
    other = str(shutil.copytree(exp1, tmp_path / 'cluster2' / 'exp1' / 'final'))
    a, b = _identity(exp1), _identity(other)
    assert compare(a, b) == ([], [])
    assert moved(a, b) == [f'path {exp1} and {other} hold the same weights ({weights_fingerprint(exp1)[:12]})']
    # one side without a record: the paths differ, so they are kept apart (nothing proves they are one model)
    assert compare(a, _identity(other, recorded=False))[0]


def test_kept_apart_models_are_named_by_what_tells_them_apart():
    assert path_parts(['/ckpt/exp1/final', '/ckpt/exp2/final']) == ['exp1', 'exp2']
    assert path_parts(['/a/x/final', '/b/x/final', '/a/y/final']) == ['a/x', 'b/x', 'a/y']
    assert path_parts(['/ckpt/final', '/x/ckpt/final']) == ['/ckpt/final', '/x/ckpt/final']  # nothing shorter
    same = '/models/m'
    one = model_identity(dict(type=TYPE, path=same, max_out_len=50))
    two = model_identity(dict(type=TYPE, path=same, max_out_len=100))
    assert labels([one, two]) == ['max_out_len=50', 'max_out_len=100']
    three = model_identity(dict(type=TYPE, path=same, max_out_len=50, generation_kwargs=dict(top_p=0.9)))
    names = labels([one, two, three])
    assert len(set(names)) == 3 and labels([three, two, one]) == names[::-1]   # any order: the same names


@pytest.mark.parametrize('key', ['path', 'tokenizer_path'])
def test_a_place_is_compared_whole(key):
    a = model_identity({'type': TYPE, key: '/ckpt/exp1/hf'})
    b = model_identity({'type': TYPE, key: '/ckpt/exp2/hf'})
    c = model_identity({'type': TYPE, key: '/ckpt/exp1/./hf'})
    assert compare(a, b)[0] == [f'{key}: "/ckpt/exp1/hf" / "/ckpt/exp2/hf"'] and compare(a, c) == ([], [])
