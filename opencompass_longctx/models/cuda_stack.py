"""Which CUDA major versions an environment's packages are built for: the GPU install must have exactly one.

LMDeploy 0.18.0's PyPI wheels are CUDA 12.8 builds (TurboMind links ``libcudart.so.12``, ``libcublas.so.12`` and the
``libnccl.so.2`` of ``nvidia-nccl-cu12``); a torch built for CUDA 13 brings ``nvidia-nccl-cu13``, whose wheel
installs the same ``nvidia/nccl/lib/libnccl.so.2``, so one overwrites the other. A distribution's CUDA major is
read from its name (``-cu12``, ``-cu13``) or, for the CUDA 13 era's unsuffixed toolkit wheels whose version is the
toolkit's (``cuda-toolkit``, ``nvidia-cuda-runtime``, ``nvidia-cublas``, ...), from its version's major; other
packages (``nvidia-ml-py``, unsuffixed libraries with their own numbering such as ``nvidia-cufft``) say nothing.
"""
import re
from typing import Dict, Iterable, List, Optional, Tuple

_SUFFIX = re.compile(r'-cu(\d+)$')
TOOLKIT_VERSIONED = {'cuda-toolkit', 'cuda-bindings', 'cuda-python', 'nvidia-cuda-runtime', 'nvidia-cuda-nvrtc',
                     'nvidia-cuda-cupti', 'nvidia-cuda-nvcc', 'nvidia-cublas', 'nvidia-nvjitlink', 'nvidia-nvtx'}


def _normal(name: str) -> str:
    return re.sub(r'[-_.]+', '-', name).lower()


def cuda_major(name: str, version: str) -> Optional[int]:
    """The CUDA major a distribution is built for, or None when its name and version do not say."""
    name = _normal(name)
    m = _SUFFIX.search(name)
    if m:
        return int(m.group(1))
    if name in TOOLKIT_VERSIONED:
        return int(version.split('.')[0])
    return None


def cuda_majors(dists: Iterable[Tuple[str, str]]) -> Dict[int, List[str]]:
    """CUDA major -> the ``name==version`` of the distributions built for it."""
    out: Dict[int, List[str]] = {}
    for name, version in dists:
        major = cuda_major(name, version)
        if major is not None:
            out.setdefault(major, []).append(f'{_normal(name)}=={version}')
    return {k: sorted(v) for k, v in sorted(out.items())}


def from_pip_report(report: Dict) -> List[Tuple[str, str]]:
    """(name, version) of what ``pip install --dry-run --report`` would install."""
    return [(i['metadata']['name'], i['metadata']['version']) for i in report.get('install', [])]


def installed() -> List[Tuple[str, str]]:
    """(name, version) of the distributions importable in this Python."""
    from importlib.metadata import distributions
    return [(d.metadata['Name'], d.version) for d in distributions() if d.metadata['Name']]


def problem(dists: Iterable[Tuple[str, str]]) -> Optional[str]:
    """Why the environment has more than one CUDA stack (None: one or none)."""
    majors = cuda_majors(dists)
    if len(majors) <= 1:
        return None
    listed = '; '.join(f'CUDA {k}: ' + ', '.join(v[:6]) + (f' (+{len(v) - 6})' if len(v) > 6 else '')
                       for k, v in majors.items())
    return (f'packages built for {len(majors)} CUDA major versions are installed together ({listed}): their '
            'libraries overwrite each other (both NCCL wheels write nvidia/nccl/lib/libnccl.so.2). Install the GPU '
            "stack into a fresh environment with pip install -e '.[lmdeploy]' (torch 2.10.0, CUDA 12.8, as LMDeploy "
            "0.18.0's wheels)")


def main(argv=None) -> int:
    """``python -m opencompass_longctx.models.cuda_stack``: exit 1 with the reason when this Python's packages are
    built for more than one CUDA major (the GPU install's last step)."""
    why = problem(installed())
    majors = cuda_majors(installed())
    print(why or f"one CUDA stack: {', '.join(f'CUDA {k} ({len(v)} packages)' for k, v in majors.items()) or 'none'}")
    return 1 if why else 0


if __name__ == '__main__':
    raise SystemExit(main())
