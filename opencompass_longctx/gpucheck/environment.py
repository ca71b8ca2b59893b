"""What the GPU check needs before it starts anything: the Python version first, then LMDeploy, torch and CUDA.

Each check returns problems as sentences that say what is wrong and what to do; nothing heavy is imported at module
import, so ``python -m opencompass_longctx.gpucheck --python-only`` runs on a Python where nothing is installed yet
(``bench/gpu_check.sh`` runs it before it installs its cp312 wheelhouse).
"""
import argparse
import sys
from typing import Dict, List, Optional, Sequence, Tuple

# The Pythons `make gpu-install` (pip install -e ".[lmdeploy]") installs on: LMDeploy 0.18.0 and torch 2.10.0 publish
# CPython wheels for 3.10 to 3.14, but the package's own pins do not: numpy<2 (OpenCompass 0.5.4 pins it) has no
# cp313 wheel and pyarrow==20.0.0 none for cp314 (checked with `pip download --no-deps --only-binary=:all:
# --python-version X.Y --platform manylinux2014_x86_64`, 2026-12-04: 3.12 numpy<2 yes; 3.13 numpy<2 no, pyarrow
# 20.0.0 yes; 3.14 pyarrow 20.0.0 no). So 3.10 to 3.12.
SUPPORTED_PYTHON = ((3, 10), (3, 12))
# the first pin without a wheel for a Python above the range (what `make gpu-install` stops on)
NO_WHEEL = {(3, 13): 'numpy<2 (OpenCompass 0.5.4 pins it) has no cp313 wheel',
            (3, 14): 'numpy<2 has no cp314 wheel, nor has pyarrow==20.0.0'}
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
        why = NO_WHEEL.get(tuple(v[:2])) or (f'below {lo[0]}.{lo[1]} LMDeploy {LMDEPLOY_VERSION} and torch 2.10.0 '
                                            'publish no wheels' if v[:2] < lo else 'its pins publish no wheels')
        return [f'Python {here} ({exe}): make gpu-install installs on Python {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]} only '
                f'({why}): make gpu-install PYTHON=python3.12 (any of those)']
    return []


def check_build_tools() -> Tuple[Dict, List[str]]:
    """The PyTorch engine's Triton kernels are compiled when first used (triton/runtime/build.py): with ``$CC``, else
    ``gcc``, else ``clang``, against this Python's ``Python.h``. (what was found, problems with the Debian packages
    that fix them); TurboMind needs neither."""
    import os
    import shutil
    import sysconfig
    cc = os.environ.get('CC') or shutil.which('gcc') or shutil.which('clang')
    include = sysconfig.get_paths().get('include') or ''
    header = os.path.join(include, 'Python.h')
    info = {'c_compiler': cc or None, 'python_h': header if os.path.isfile(header) else None}
    problems = []
    if not cc:
        problems.append('no C compiler: Triton compiles the PyTorch engine\'s kernels at first use with $CC, else gcc, '
                        'else clang, and none is on PATH: apt-get install gcc (Debian/Ubuntu), or set CC')
    if not info['python_h']:
        v = python_version()
        problems.append(f'no Python.h in {include or "this Python"}: Triton builds its launcher against this Python\'s '
                        f'headers: apt-get install python{v[0]}.{v[1]}-dev (Debian/Ubuntu; python3-dev for the '
                        'system Python), or use a Python that ships its headers')
    return info, problems


def check_stack(rehearse: bool = False) -> Tuple[Dict, List[str]]:
    """(versions and the GPU, problems): LMDeploy (the pinned release), torch and its CUDA build, one CUDA stack, a
    visible GPU, whether TurboMind's library loads (why not), OpenCompass, and the C compiler and ``Python.h`` the
    PyTorch engine needs (``pytorch_engine_blocked``: why its stages cannot run; not a problem of the stack, as
    TurboMind needs neither). ``rehearse``: no GPU expected. The problems the GPU install fixes end with its command,
    said once."""
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
    tools, missing = check_build_tools()
    info.update(tools)
    if missing:   # the PyTorch engine's stages do not run (cli); TurboMind's still do
        info['pytorch_engine_blocked'] = missing
    if 'lmdeploy' in info:
        from opencompass_longctx.models.backend import turbomind_status
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
    ap = argparse.ArgumentParser(description='Check the Python version (with --stack LMDeploy, torch, CUDA; with '
                                 '--build-tools the C compiler and Python.h of the PyTorch engine)')
    ap.add_argument('--python', default=None, help='the one version required (e.g. 3.12)')
    ap.add_argument('--stack', action='store_true')
    ap.add_argument('--build-tools', action='store_true', help="the PyTorch engine's C compiler and Python.h")
    args = ap.parse_args(argv)
    problems = check_python(exact=args.python)
    if not problems and args.build_tools:
        info, problems = check_build_tools()
        print(f"C compiler {info['c_compiler']}, Python.h {info['python_h']}")
    if not problems and args.stack:
        info, problems = check_stack()
        print(info)
    for p in problems:
        print(f'longctx-gpu-check: {p}', file=sys.stderr)
    return 2 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
