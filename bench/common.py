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
    pool = sys.modules.get('opencompass_longctx.parallel')
    if pool is not None and pool._POOL['executor'] is not None:   # a kept pool: stop it, so that its
        pool._POOL['executor'].shutdown(wait=True)                # workers' CPU time is counted below
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


def build_and_reload(setup: str, load: str, dataset: str, cache: str, first: str = None, prefix: str = ''):
    """With an empty dataset cache at ``cache``, each in a new process: the first build (the expression ``first``,
    default ``load``), the cached rebuild (``load``) and the reload through OpenCompass's dataset class
    (``dataset``, whose ``.test`` OpenCompass reads); each one's len() is its row count. Returns (first, second, opencompass, env)."""
    import shutil
    shutil.rmtree(cache, ignore_errors=True)
    env = {'LONGCTX_CACHE_DIR': cache, 'LONGCTX_PROGRESS': '0'}
    runs = [measure(setup, f'{prefix}RESULT = len({expr})', env) for expr in (first or load, load, f'{dataset}.test')]
    return (*runs, env)


def disk_mb(path: str) -> float:
    """Size of every file under ``path``, in MB."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) / 1e6


def scaling(run: dict, num_proc: int, pools: int, startup_s: float, cores: int = 16) -> str:
    """The time a parallel build would take on ``cores`` idle cores, from CPU times of one run with ``num_proc``
    workers (wall times on a shared machine say little): the samples' work (the workers' CPU time less their
    start-up, ``startup_s`` CPU seconds per worker and pool) spread over the cores, plus one start-up per pool
    (workers start side by side), but never less than the parent's own CPU time (it receives every row and
    writes the cache, serially)."""
    work = max(0.0, run['workers_cpu_s'] - num_proc * pools * startup_s)
    parent = run['cpu_s']
    def est(n):
        return max(work / n + pools * startup_s, parent)
    return (f'~{est(cores):.1f} s on {cores} cores, {est(num_proc):.1f} s on {num_proc} (samples {work:.1f} CPU-s, '
            f'parent {parent:.1f} CPU-s, {pools} pool(s) x {startup_s:.2f} s start-up)')


def build_rows(what: str, run: dict, num_proc: int, serial: dict = None, pools: int = 1,
               startup_s: float = 0.0) -> list:
    """Report rows of one build made with ``num_proc`` processes: CPU time, peak memory, and for a parallel
    build the time expected on idle cores (:func:`scaling`) and the speed-up over ``serial`` (the same build
    with one process) on this machine."""
    rows = [(f'{what}: CPU time', f'process {run["cpu_s"]:.1f} s, workers {run["workers_cpu_s"]:.1f} s'),
            (f'{what}: peak memory', f'process {run["peak_rss_mib"]:.0f} MiB ('
                                     f'{run["peak_rss_mib"] - run["rss_before_mib"]:.0f} MiB over its state before '
                                     f'the build), largest worker {run["worker_peak_rss_mib"]:.0f} MiB')]
    if num_proc > 1:
        rows.append((f'{what}: expected on idle cores', scaling(run, num_proc, pools, startup_s)))
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
