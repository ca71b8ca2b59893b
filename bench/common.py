"""Shared helpers of the benchmark scripts: run a measurement in a fresh process (as OpenCompass does
for every dataset build) and report wall time and peak memory."""
import json
import os
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent('''
    import json, resource, sys, time
    setup, body = sys.argv[1], sys.argv[2]
    ns = {}
    exec(setup, ns)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    exec(body, ns)
    dt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print('@@RESULT@@' + json.dumps({'seconds': dt, 'peak_rss_mib': peak / 1024,
                                     'rss_before_mib': base / 1024, 'result': ns.get('RESULT')}))
''')


def measure(setup: str, body: str, env=None) -> dict:
    """Run ``setup`` (not timed: imports) then ``body`` (timed) in a new Python process."""
    e = dict(os.environ)
    e.update(env or {})
    proc = subprocess.run([sys.executable, '-c', _CHILD, setup, body], capture_output=True, text=True, env=e)
    for line in proc.stdout.splitlines():
        if line.startswith('@@RESULT@@'):
            return json.loads(line[len('@@RESULT@@'):])
    raise RuntimeError(f'measurement failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}')


def report(title: str, rows, path=None):
    print(f'\n## {title}\n')
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f'{name:<{width}}  {value}')
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            json.dump({'title': title, 'rows': rows}, f, indent=1)
