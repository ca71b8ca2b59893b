"""Benchmark: an exact tiktoken twin against its Hugging Face tokenizer (load and encode time, same ids).

    python bench/bench_twin.py [--hf-dir DIR] [--mb 2] [--json bench/results/twin.json]

Without ``--hf-dir`` a Qwen2.5-style tokenizer directory is written from ``qwen.tiktoken``
(``opencompass_longctx.tokenizer.qwen_dir``). The text is LongBioBench-like English biographies plus the
multilingual prompts shipped with OpenCompass, about ``--mb`` MB. Each measurement runs in a fresh process:
loading (HF alone; HF + twin with its probe check) and encoding the text once (HF; twin; ``tiktoken:qwen2``).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, report  # noqa: E402

TEXT = '''
import glob, os, opencompass
parts = []
for f in sorted(glob.glob(os.path.join(os.path.dirname(opencompass.__file__), 'configs', 'datasets', '*', '*.py'))):
    parts.append(open(f, encoding='utf-8').read())
text = '\\n'.join(parts)
text = (text * (1 + int({mb} * 1e6) // max(1, len(text.encode()))))[:int({mb} * 1e6)]
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--hf-dir', default=None)
    ap.add_argument('--mb', type=float, default=2.0)
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    hf_dir = args.hf_dir
    if hf_dir is None:
        from opencompass_longctx.tokenizer.qwen_dir import build
        hf_dir = build(os.path.join(tempfile.mkdtemp(prefix='longctx-qwen-'), 'qwen2.5'))
    setup = ('import warnings; warnings.simplefilter("ignore"); import transformers, tiktoken; '
             'from opencompass_longctx.tokenizer.counting import get_tokenizer\n' + TEXT.format(mb=args.mb))
    d = repr(os.path.abspath(hf_dir))
    load_hf = measure(setup, f'tok = get_tokenizer({d}, twin=False); RESULT = tok.engine')
    load_twin = measure(setup, f'tok = get_tokenizer({d}); RESULT = tok.engine')
    warm = (setup + f'\nhf = get_tokenizer({d}, twin=False); tw = get_tokenizer({d})'
            '\nq = get_tokenizer("tiktoken:qwen2")\nhf.encode("x"); tw.encode("x"); q.encode("x")')
    enc_hf = measure(warm, 'RESULT = len(hf.encode(text))')
    enc_twin = measure(warm, 'RESULT = len(tw.encode(text))')
    enc_q = measure(warm, 'RESULT = len(q.encode(text))')
    same = measure(warm, 'RESULT = hf.encode(text) == tw.encode(text)')
    rows = [
        ('tokenizer', f'{hf_dir} (twin engine: {load_twin["result"]})'),
        ('load, HF only', f'{load_hf["seconds"]:.2f} s'),
        ('load, HF + twin (probe checked)', f'{load_twin["seconds"]:.2f} s'),
        (f'encode {args.mb:g} MB, HF', f'{enc_hf["seconds"]:.2f} s ({enc_hf["result"]:,} tokens)'),
        (f'encode {args.mb:g} MB, twin', f'{enc_twin["seconds"]:.2f} s = '
                                           f'{enc_twin["seconds"] / enc_hf["seconds"]:.2f}x HF ({enc_twin["result"]:,} '
                                           f'tokens; ids equal: {same["result"]})'),
        (f'encode {args.mb:g} MB, tiktoken:qwen2', f'{enc_q["seconds"]:.2f} s = '
                                                  f'{enc_q["seconds"] / enc_hf["seconds"]:.2f}x HF'),
    ]
    report('Exact tiktoken twin vs Hugging Face tokenizer', rows, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
