"""Comments and docstrings cite what is in the repository (issue 39): every ``docs/...``, ``bench/...`` or
``tests/...`` path that the package, its configs, examples and benches name exists, and none cites a design
document kept outside the repository (``specs/...``, ``design.md``)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CITED = re.compile(r'(?<![\w/])((?:docs|bench|tests)/[\w./-]*\w)')   # another project's path: owner/repo/docs/...
WRITTEN = ('bench/results/', 'bench/gpu_wheelhouse')   # what the benches write, not what they cite
OUTSIDE = re.compile(r'\bspecs/\w|\bdesign\.md\b|\.\./shared/specs')


def _sources():
    for top in ('opencompass_longctx', 'configs', 'examples', 'bench'):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(d, name)
                    with open(path, encoding='utf-8') as f:
                        yield os.path.relpath(path, ROOT), f.read()


def test_every_cited_path_is_in_the_repository():
    cited, missing, outside = 0, [], []
    for rel, text in _sources():
        for m in CITED.finditer(text):
            cited += 1
            target = m.group(1).split('::')[0]
            if not target.startswith(WRITTEN) and not os.path.exists(os.path.join(ROOT, target)):
                missing.append(f'{rel}: {target}')
        outside += [f'{rel}: {m.group(0)}' for m in OUTSIDE.finditer(text)]
    assert cited > 20   # the check reads the citations it is about
    assert missing == [] and outside == []
