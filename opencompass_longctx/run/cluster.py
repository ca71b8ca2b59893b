"""What a run asks a Slurm cluster for, and what can be checked before it asks.

OpenCompass's ``SlurmRunner`` starts each task as one ``srun`` job: ``srun -p <partition> --quotatype=<q>
--qos=<qos> --gres=gpu:<n> <extra_command...> -N1 -u -J '<task name>' <task command>``, each option only when it
is set, ``n`` being the task's ``run_cfg.num_gpus`` (for an LMDeploy model, its ``tp``), and retries a task whose
job failed or left an output missing ``retry`` times (2 by default). :func:`requests` writes that line for every
task of the plan, so a user sees what the cluster will be asked for before any job is queued, and
:func:`problems` checks what can be checked from a login node, with ``sinfo`` when it is on the PATH (no Slurm on
the PATH: no check):

* the partition exists (or, with none named, the cluster has a default partition);
* some node of the partition has as many GPUs as the task asks for (``Gres`` as ``sinfo`` reports it), else
  ``srun`` fails with "Requested node configuration is not available" and every retry with it;
* ``quotatype`` is only passed when this ``srun`` knows ``--quotatype`` (an option of patched Slurm builds; stock
  ``srun`` rejects it).

``opencompass --slurm`` is a different path: OpenCompass then replaces the config's ``infer`` and ``eval``
(partitioner, runner and task) with its defaults, so ``LongCtxPartitioner``, the plan and its checks never run.
:func:`warn_if_slurm_flag` says so on stderr as soon as the package is imported by such a run (when OpenCompass's
``NumWorkerPartitioner`` builds the datasets to size them; a partitioner option such as ``bands=`` makes it fail
before that, with a ``TypeError`` naming the option).
"""
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple
from opencompass_longctx.errors import LongCtxError

SLURM_FLAG_WARNING = (
    '[opencompass_longctx] opencompass --slurm replaces the config\'s infer and eval (partitioner, runner, task) with '
    'OpenCompass\'s defaults: LongCtxPartitioner, its plan and its checks are not used (one task per dataset, each '
    'loading its model; a partitioner option such as bands= makes OpenCompass\'s NumWorkerPartitioner fail). Run '
    'without --slurm and set runner=dict(type=SlurmRunner, partition=...) in the config '
    '(docs/cluster-and-resume.md: "Run it on a Slurm cluster"); -p still sets the partition.')

SINFO_TIMEOUT_S = 30


def slurm_flag_used(argv: Optional[Sequence[str]] = None) -> bool:
    """Whether this process is an ``opencompass`` command line with ``--slurm`` (argparse also takes ``--slu``...)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv or not re.search(r'(^|[/\\])opencompass(\.exe)?$|opencompass[/\\]cli[/\\]main\.py$', argv[0]):
        return False
    return any(len(a) > 4 and '--slurm'.startswith(a) for a in argv[1:] if a.startswith('--s'))


_WARNED = []


def warn_if_slurm_flag(argv: Optional[Sequence[str]] = None, stream=None) -> bool:
    """Print :data:`SLURM_FLAG_WARNING` once per process when it runs ``opencompass --slurm``."""
    if _WARNED or not slurm_flag_used(argv):
        return False
    _WARNED.append(True)
    print(SLURM_FLAG_WARNING, file=stream or sys.stderr, flush=True)
    return True


# ---------------------------------------------------------------------------------------------- requests
def _type_name(cfg) -> str:
    t = (cfg or {}).get('type', '') if isinstance(cfg, dict) else cfg
    return (getattr(t, '__name__', None) or str(t)).rsplit('.', 1)[-1].strip("'>")


def is_slurm(runner_cfg) -> bool:
    return _type_name(runner_cfg) == 'SlurmRunner'


def srun_options(runner_cfg: Dict, gpus: int) -> str:
    """The ``srun`` options ``SlurmRunner`` puts before a task's name and command, in its order."""
    opts = ['srun']
    if runner_cfg.get('partition'):
        opts.append(f"-p {runner_cfg['partition']}")
    if runner_cfg.get('quotatype'):
        opts.append(f"--quotatype={runner_cfg['quotatype']}")
    if runner_cfg.get('qos'):
        opts.append(f"--qos={runner_cfg['qos']}")
    if gpus > 0:
        opts.append(f'--gres=gpu:{gpus}')
    opts += [str(c) for c in runner_cfg.get('extra_command') or []]
    return ' '.join(opts + ['-N1', '-u'])


def requests(plan: Dict, runner_cfg: Optional[Dict]) -> List[Dict]:
    """Per inference task of the plan: what ``SlurmRunner`` asks the cluster for (empty for other runners)."""
    if not is_slurm(runner_cfg):
        return []
    out = []
    for t in plan['tasks']:
        gpus = max(int(t.gpus or 0), 0)
        out.append({'model': t.model, 'band': t.band, 'shard': f'{t.shard + 1}/{t.shards}', 'gpus': gpus,
                    'tp': t.engine.tp if t.engine else None, 'partition': runner_cfg.get('partition'),
                    'quotatype': runner_cfg.get('quotatype'), 'qos': runner_cfg.get('qos'),
                    'gres': f'gpu:{gpus}' if gpus > 0 else None, 'srun': srun_options(runner_cfg, gpus)})
    return out


# ---------------------------------------------------------------------------------------------- sinfo
class SinfoError(LongCtxError, RuntimeError):
    """``sinfo`` is on the PATH but did not answer (no controller reachable, ...)."""


def _sinfo(*args: str) -> str:
    try:
        p = subprocess.run(['sinfo', '-h', *args], capture_output=True, text=True, timeout=SINFO_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SinfoError(f'sinfo {" ".join(args)}: {e}') from None
    if p.returncode:
        raise SinfoError(f'sinfo {" ".join(args)} exited with {p.returncode}: {p.stderr.strip()[:300]}')
    return p.stdout


def partitions() -> Tuple[List[str], Optional[str]]:
    """The cluster's partitions and its default one (``sinfo`` marks it with ``*``)."""
    names, default = [], None
    for line in _sinfo('-o', '%P').split():
        name = line.rstrip('*')
        if name not in names:
            names.append(name)
        if line.endswith('*'):
            default = name
    return names, default


def gres_gpus(gres: str) -> int:
    """GPUs in a ``sinfo`` Gres field: ``gpu:8``, ``gpu:a100:4(S:0-1),gpu:v100:2``, ``(null)``."""
    total = 0
    for item in re.sub(r'\([^)]*\)', '', gres or '').split(','):
        fields = item.strip().split(':')
        if fields[0] == 'gpu' and len(fields) >= 2 and fields[-1].isdigit():
            total += int(fields[-1])
    return total


def node_gpus(partition: str) -> Dict[str, int]:
    """GPUs of each node of ``partition``, from ``sinfo``."""
    nodes: Dict[str, int] = {}
    for line in _sinfo('-N', '-p', partition, '-o', '%N|%G').splitlines():
        if '|' in line:
            node, gres = line.split('|', 1)
            nodes[node.strip()] = max(nodes.get(node.strip(), 0), gres_gpus(gres))
    return nodes


def srun_knows(option: str) -> bool:
    try:
        p = subprocess.run(['srun', '--help'], capture_output=True, text=True, timeout=SINFO_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return True          # cannot tell: no problem raised
    return option in p.stdout + p.stderr


# ---------------------------------------------------------------------------------------------- checks
def problems(runners: Dict[str, Optional[Dict]], reqs: Sequence[Dict]) -> Tuple[List[Dict], List[str]]:
    """``(problems, notes)``: problems as the plan lists them (``{'problem', 'where'}``), and notes on what was not
    checked. ``runners``: ``{'infer': runner cfg, 'eval': runner cfg}``; ``reqs``: :func:`requests`."""
    slurm = {stage: r for stage, r in runners.items() if is_slurm(r)}
    if not slurm:
        return [], []
    if shutil.which('sinfo') is None:
        return [], ['Slurm partitions and GPUs not checked: sinfo is not on the PATH (run the dry run on a login '
                    'node of the cluster to check them).']
    found: List[Dict] = []
    try:
        names, default = partitions()
        for stage, runner in slurm.items():
            found += _partition_problems(stage, runner, names, default, reqs if stage == 'infer' else [])
            if runner.get('quotatype') and shutil.which('srun') and not srun_knows('--quotatype'):
                found.append({'problem': f"{stage} runner: quotatype={runner['quotatype']!r} is passed as srun "
                                         '--quotatype=..., which this srun does not know (an option of patched Slurm '
                                         'builds): remove quotatype, or use qos=', 'where': [f'{stage} runner']})
    except SinfoError as e:
        return found, [f'Slurm partitions and GPUs not checked: {e}']
    return found, []


def _partition_problems(stage: str, runner: Dict, names: List[str], default: Optional[str],
                        reqs: Sequence[Dict]) -> List[Dict]:
    where = [f'{stage} runner']
    named = runner.get('partition')
    wanted = [p.strip() for p in str(named).split(',') if p.strip()] if named else ([default] if default else [])
    if not wanted:
        return [{'problem': f'{stage} runner: no partition named and the cluster has no default partition '
                            f'(sinfo lists {", ".join(names) or "none"}): set partition= in the runner, or -p',
                 'where': where}]
    missing = [p for p in wanted if p not in names]
    if missing:
        return [{'problem': f"{stage} runner: Slurm partition {', '.join(map(repr, missing))} does not exist on this "
                            f"cluster (sinfo lists {', '.join(names) or 'none'}): set partition= in the runner (or -p) "
                            'to one of them', 'where': where}]
    nodes: Dict[str, int] = {}
    for p in wanted:
        nodes.update(node_gpus(p))
    most = max(nodes.values(), default=0)
    over: Dict[int, List[str]] = {}
    for r in reqs:
        if r['gpus'] > most:
            over.setdefault(r['gpus'], []).append(f"{r['model']} {r['band']}")
    return [{'problem': f"{len(tasks)} inference task(s) ask for {gpus} GPUs (--gres=gpu:{gpus}, run_cfg.num_gpus = "
                        f"tp), but no node of partition {', '.join(wanted)} has more than {most} "
                        f"(sinfo: {', '.join(f'{n} {g}' for n, g in sorted(nodes.items())) or 'no nodes'}): srun "
                        'would fail every retry. Lower tp (and num_gpus), or use a partition with larger nodes',
             'where': tasks} for gpus, tasks in sorted(over.items())]


# ---------------------------------------------------------------------------------------------- report
def to_markdown(reqs: Sequence[Dict], runners: Dict[str, Optional[Dict]], notes: Sequence[str] = ()) -> str:
    """The plan's "Cluster requests" section ('' when no runner is a SlurmRunner)."""
    if not any(is_slurm(r) for r in runners.values()):
        return ''
    lines = ['', '## Cluster requests (SlurmRunner)', '']
    infer = runners.get('infer')
    if is_slurm(infer):
        lines += [f"Each inference task is one srun job (retry={infer.get('retry', 2)}: a failed job or a missing "
                  'output is run again that many times); GPUs = run_cfg.num_gpus (= tp for LMDeploy models).', '',
                  '| model | band | shard | GPUs | tp | srun |', '|---|---|---|---|---|---|']
        lines += [f"| {r['model']} | {r['band']} | {r['shard']} | {r['gpus']} | {r['tp'] or '-'} | `{r['srun']}` |"
                  for r in reqs]
    else:
        lines.append(f"Inference tasks run with {_type_name(infer) or 'the default runner'}, not on Slurm.")
    ev = runners.get('eval')
    if is_slurm(ev):
        lines += ['', f"Evaluation tasks: `{srun_options(ev, 0)}` each (no GPU: the package's evaluators need none; "
                      f"retry={ev.get('retry', 2)})."]
    lines += [f'- {n}' for n in notes]
    return '\n'.join(lines) + '\n'
