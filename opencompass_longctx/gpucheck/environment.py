"""What the GPU check needs before it starts anything: the Python version first, then LMDeploy, torch and CUDA.

Each check returns problems as sentences that say what is wrong and what to do; nothing heavy is imported at module
import, so ``python -m opencompass_longctx.gpucheck --python-only`` runs on a Python where nothing is installed yet
(``bench/gpu_check.sh`` runs it before it installs its cp312 wheelhouse).
"""
import argparse
import sys
from typing import Dict, List, Optional, Sequence, Tuple

# LMDeploy 0.18.0 and torch 2.10.0 (the [lmdeploy] extra) publish CPython wheels for 3.10 to 3.14 (manylinux x86-64;
# checked with `pip install --dry-run --no-deps --only-binary=:all: --python-version X.Y`: 3.9 has neither).
SUPPORTED_PYTHON = ((3, 10), (3, 14))
LMDEPLOY_VERSION = '0.18.0'
FIX_INSTALL = ('make gpu-install (a fresh .venv-gpu with pip install -e ".[lmdeploy]"), then make gpu-check '
               '(or .venv-gpu/bin/longctx-gpu-check)')


def python_version() -> Tuple[int, int, int]:
    return tuple(sys.version_info[:3])


def check_python(version: Optional[Sequence[int]] = None, exact: Optional[str] = None) -> List[str]:
    """Problems with the running Python (empty: fine). ``exact`` ('3.12'): the one version a set of wheels was
    built for (the carried wheelhouse); else LMDeploy's and torch's range, :data:`SUPPORTED_PYTHON`."""
    v = tuple(version or python_version())[:3]
    here = '.'.join(map(str, v))
    exe = sys.executable or 'python'
    if exact:
        want = tuple(int(x) for x in exact.split('.'))
        if v[:len(want)] != want:
            return [f'Python {here} ({exe}), but the wheelhouse holds cp{"".join(map(str, want))} wheels (Python '
                    f'{exact} only): run it with PYTHON=<a Python {exact}>, or build a wheelhouse for this Python']
        return []
    lo, hi = SUPPORTED_PYTHON
    if not lo <= v[:2] <= hi:
        return [f'Python {here} ({exe}): LMDeploy {LMDEPLOY_VERSION} and torch 2.10.0 publish wheels for Python '
                f'{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]} only: make gpu-install PYTHON=python3.12 (any of those)']
    return []


def check_stack(rehearse: bool = False) -> Tuple[Dict, List[str]]:
    """(versions and the GPU, problems): LMDeploy (the pinned release), torch and its CUDA build, one CUDA stack, a
    visible GPU, whether TurboMind's library loads (why not), OpenCompass. ``rehearse``: no GPU expected. The
    problems the GPU install fixes end with its command, said once."""
    info = {'python': '.'.join(map(str, python_version())), 'executable': sys.executable}
    install, other = [], []
    for name in ('torch', 'lmdeploy', 'opencompass', 'transformers'):
        try:
            mod = __import__(name)
        except Exception as e:      # noqa: BLE001 - an import that fails for any reason is the problem reported
            install.append(f'{name} does not import in this Python ({sys.executable}): {type(e).__name__}: {e}')
            continue
        info[name] = getattr(mod, '__version__', '?')
    if info.get('lmdeploy') not in (None, LMDEPLOY_VERSION):
        install.append(f"lmdeploy {info['lmdeploy']} is installed; this package is checked against "
                       f'{LMDEPLOY_VERSION} (backend choice, engine keys, memory arithmetic)')
    if 'torch' in info:
        import torch
        info['torch_cuda'] = torch.version.cuda
        if not rehearse:
            if not torch.version.cuda:
                install.append(f'torch {torch.__version__} is a CPU build (torch.version.cuda is None)')
            elif not torch.cuda.is_available():
                other.append(f'torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU '
                             '(torch.cuda.is_available() is False): check nvidia-smi, the driver (CUDA 12.8 needs '
                             'the R570 series or newer) and CUDA_VISIBLE_DEVICES')
            else:
                info.update(in_child(gpu_info))
        if not rehearse:
            from opencompass_longctx.models.cuda_stack import cuda_majors, installed, problem
            info['cuda_majors'] = sorted(cuda_majors(installed()))
            two = problem(installed())
            if two:       # a warning: the PyTorch engine at tp=1 may still run (the verdict says it)
                info['warnings'] = [two]
    if 'lmdeploy' in info:
        from opencompass_longctx.models.lmdeploy import turbomind_status
        ok, why = turbomind_status()
        info['turbomind'] = 'available' if ok else f'not available: {why}'
    if install:
        install[-1] += f': {FIX_INSTALL}'
    return info, install + other


def gpu_info() -> Dict:
    """The GPU as CUDA reports it (run in a child process: :func:`in_child`)."""
    import torch
    p = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info(0)
    return dict(gpus=torch.cuda.device_count(), gpu=p.name, gpu_memory_gib=round(total / 1024 ** 3, 1),
                gpu_free_gib=round(free / 1024 ** 3, 1), sm=p.multi_processor_count, capability=f'{p.major}.{p.minor}')


def in_child(fn, *args):
    """``fn(*args)`` in a fresh (spawned) process: the check's own process never opens a CUDA context before the
    OpenCompass runs, so their engines find the GPU as free as the plan assumes (one context: CUDA_NOT_FREE_GIB)."""
    import multiprocessing
    with multiprocessing.get_context('spawn').Pool(1) as pool:
        return pool.apply(fn, args)


def engines(info: Dict, requested: str = 'auto') -> Tuple[List[str], str]:
    """(engines to check, why): both where TurboMind loads, else the PyTorch engine with TurboMind's reason."""
    if requested != 'auto':
        return [e for e in requested.split(',') if e], f'as asked (--engines {requested})'
    if info.get('turbomind') == 'available':
        return ['turbomind', 'pytorch'], 'TurboMind loads here: both engines'
    return ['pytorch'], f"TurboMind {info.get('turbomind', 'not checked')}: the PyTorch engine only"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description='Check the Python version (and with --stack LMDeploy, torch, CUDA)')
    ap.add_argument('--python', default=None, help='the one version required (e.g. 3.12)')
    ap.add_argument('--stack', action='store_true')
    args = ap.parse_args(argv)
    problems = check_python(exact=args.python)
    if not problems and args.stack:
        info, problems = check_stack()
        print(info)
    for p in problems:
        print(f'longctx-gpu-check: {p}', file=sys.stderr)
    return 2 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
