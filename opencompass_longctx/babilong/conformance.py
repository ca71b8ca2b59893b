"""Check the BABILong scorer against published model outputs and the authors' accuracies.

Usage: ``python -m opencompass_longctx.babilong.conformance DIR`` where DIR holds ``predictions/*.csv``
(columns: index, target, output, question) and ``reference_scores.json`` (per file: ``official_accuracy``
and optionally ``lenient_accuracy``). The references carry 4 decimals, so the accuracy is rounded to 4 decimals and must then agree to 1e-6; exits 1 otherwise. The data is read
from the user's directory and never shipped with the package.
"""
import argparse
import csv
import json
import os
import sys

from opencompass_longctx.babilong.scoring import accuracy
def check(directory: str, tolerance: float = 1e-6):
    with open(os.path.join(directory, 'reference_scores.json'), encoding='utf-8') as f:
        refs = json.load(f)
    rows = []
    for ref in refs:
        with open(os.path.join(directory, 'predictions', ref['file']), newline='', encoding='utf-8') as f:
            data = list(csv.DictReader(f))
        preds = [r['output'] for r in data]
        targets = [r['target'] for r in data]
        questions = [r['question'] for r in data]
        for mode, key in (('official', 'official_accuracy'), ('lenient', 'lenient_accuracy')):
            if key not in ref:
                continue
            got = accuracy(preds, targets, questions, ref['task'], mode)
            rows.append(dict(file=ref['file'], mode=mode, n=len(data), expected=ref[key], got=got,
                             ok=len(data) == ref['n'] and abs(round(got, 4) - ref[key]) <= tolerance))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('directory')
    args = ap.parse_args(argv)
    rows = check(args.directory)
    bad = [r for r in rows if not r['ok']]
    for r in bad:
        print(f"MISMATCH {r['file']} [{r['mode']}]: expected {r['expected']}, got {r['got']:.4f} (n={r['n']})")
    for mode in sorted({r['mode'] for r in rows}):
        sel = [r for r in rows if r['mode'] == mode]
        print(f'{mode}: {sum(r["ok"] for r in sel)}/{len(sel)} files match')
    return 1 if bad or not rows else 0


if __name__ == '__main__':
    sys.exit(main())
