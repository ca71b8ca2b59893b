"""Shared helpers of the benchmark scripts: run a measurement in a fresh process (as OpenCompass does
for every dataset build) and report wall time, CPU time and peak memory (of the process and, for a parallel
build, of its largest worker process)."""
import json
import os
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent('''
    import json, os, resource, sys, threading, time
    setup, body = sys.argv[1], sys.argv[2]
    ns = {}
    exec(setup, ns)
    worker_peak, done = [0], threading.Event()

    def watch():  # peak RSS (VmHWM) of this process's children, e.g. the workers of a parallel build
        me = str(os.getpid())
        while not done.wait(0.2):
            for pid in filter(str.isdigit, os.listdir('/proc')):
                try:
                    with open(f'/proc/{pid}/status') as f:
                        st = dict(line.split(':', 1) for line in f if ':' in line)
                    if st['PPid'].strip() == me and 'VmHWM' in st:
                        worker_peak[0] = max(worker_peak[0], int(st['VmHWM'].split()[0]))
                except (OSError, KeyError, ValueError):
                    pass
    if os.path.isdir('/proc'):
        threading.Thread(target=watch, daemon=True).start()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = lambda who: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(who))
    cpu0, kids0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    exec(body, ns)
    dt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    done.set()
    print('@@RESULT@@' + json.dumps({'seconds': dt, 'peak_rss_mib': peak / 1024,
                                     'rss_before_mib': base / 1024, 'result': ns.get('RESULT'),
                                     'cpu_s': cpu(resource.RUSAGE_SELF) - cpu0,
                                     'workers_cpu_s': cpu(resource.RUSAGE_CHILDREN) - kids0,
                                     'worker_peak_rss_mib': worker_peak[0] / 1024}))
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


def disk_mb(path: str) -> float:
    """Size of every file under ``path``, in MB."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) / 1e6


def scaling(run: dict, num_proc: int, cores: int = 16) -> str:
    """The time a parallel build would take on ``cores`` cores, from one run with ``num_proc`` workers: the
    workers' CPU time spread over the cores, but never less than the parent's own (serial) CPU time, plus the
    part of the wall time that was neither (worker start-up, waiting)."""
    work, serial = run['workers_cpu_s'], run['cpu_s']
    idle = max(0.0, run['seconds'] - max(work / num_proc, serial))
    est = max(work / cores, serial) + idle
    return (f'~{est:.0f} s on {cores} cores (workers {work:.0f} CPU-s, parent {serial:.0f} CPU-s, other '
            f'{idle:.0f} s), {run["seconds"] / est:.1f}x this run')


def build_rows(what: str, run: dict, num_proc: int, serial: dict = None) -> list:
    """Report rows of one build made with ``num_proc`` processes: CPU time, peak memory, and for a parallel
    build the time expected on 16 cores and the speed-up over ``serial`` (the same build with one process)."""
    rows = [(f'{what}: CPU time', f'process {run["cpu_s"]:.1f} s, workers {run["workers_cpu_s"]:.1f} s'),
            (f'{what}: peak memory', f'process {run["peak_rss_mib"]:.0f} MiB ('
                                     f'{run["peak_rss_mib"] - run["rss_before_mib"]:.0f} MiB over its state before '
                                     f'the build), largest worker {run["worker_peak_rss_mib"]:.0f} MiB')]
    if num_proc > 1:
        rows.append((f'{what}: expected on 16 cores', scaling(run, num_proc)))
        if serial is not None:
            rows.append((f'{what}: speed-up over num_proc=1 (this machine)',
                         f'{serial["seconds"] / run["seconds"]:.2f}x'))
    return rows


def report(title: str, rows, path=None):
    print(f'\n## {title}\n')
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f'{name:<{width}}  {value}')
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            json.dump({'title': title, 'rows': rows}, f, indent=1)
