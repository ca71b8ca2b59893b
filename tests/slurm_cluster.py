"""A one-node Slurm cluster on localhost, in a temporary directory, for the tests that run OpenCompass's
``SlurmRunner`` for real (``slurm_cluster`` fixture, one per test session).

``munged`` runs with its own key and socket, ``slurmctld`` and ``slurmd`` with a generated ``slurm.conf`` on ports
of their own; nothing is written outside the directory and no daemon of the machine is touched. Clients (``srun``,
``sinfo``, ``scancel``, ``squeue``) find the cluster through :meth:`SlurmCluster.env` (``SLURM_CONF``; the munge
socket is named in the config). Finished jobs are recorded by ``jobcomp/filetxt`` (:meth:`SlurmCluster.jobs`).
The node declares two GPUs as generic resources (``gres.conf``; plain files stand in for the devices), so that
``sinfo`` reports GPUs for the plan's check; no test job uses one. Every daemon is stopped by its own pid at teardown.

Slurm not installed: the tests are skipped with the install command, except in CI (``$CI`` set), where that is a
failure, as is a cluster that does not start (never a silent skip).
"""
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

INSTALL = 'apt-get install -y --no-install-recommends slurm-wlm munge'
DAEMONS = ('munged', 'slurmctld', 'slurmd')
PARTITION = 'longctx'
NODE_GPUS = 2
START_TIMEOUT_S = 60


class ClusterError(RuntimeError):
    """The one-node cluster did not start (the message holds the end of each daemon's log)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(errors='replace')[-n:]
    except OSError:
        return '(no log)'


class SlurmCluster:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.host = socket.gethostname().split('.')[0]       # `hostname -s`: the name slurmd registers as
        self.cpus = os.cpu_count() or 1
        self.conf = self.root / 'slurm.conf'
        self.jobcomp = self.root / 'jobcomp.txt'
        self.job_gpus_file = self.root / 'job_gpus.txt'
        self.procs: Dict[str, subprocess.Popen] = {}
        self.started_s: Optional[float] = None

    # ------------------------------------------------------------------ set-up
    def _write_munge(self):
        d = self.root / 'munge'
        d.mkdir(mode=0o700)
        key = d / 'munge.key'
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        self.munge_socket = d / 'munge.socket'
        return d, key

    def _write_conf(self):
        for sub in ('state', 'spool', 'log'):
            (self.root / sub).mkdir()
        r = self.root
        lines = [
            'ClusterName=longctx-test',
            f'SlurmctldHost={self.host}(127.0.0.1)',
            f'SlurmctldPort={_free_port()}',
            f'SlurmdPort={_free_port()}',
            'SlurmUser=root', 'SlurmdUser=root',
            'AuthType=auth/munge', 'CredType=cred/munge', f'AuthInfo=socket={self.munge_socket}',
            f'StateSaveLocation={r / "state"}', f'SlurmdSpoolDir={r / "spool"}',
            f'SlurmctldPidFile={r / "slurmctld.pid"}', f'SlurmdPidFile={r / "slurmd.pid"}',
            f'SlurmctldLogFile={r / "log" / "slurmctld.log"}', f'SlurmdLogFile={r / "log" / "slurmd.log"}',
            'ProctrackType=proctrack/linuxproc', 'TaskPlugin=task/none', 'JobAcctGatherType=jobacct_gather/none',
            'AccountingStorageType=accounting_storage/none',
            f'TaskProlog={r / "task_prolog.sh"}',   # records each job's GPUs (jobcomp/filetxt does not hold gres)
            'JobCompType=jobcomp/filetxt', f'JobCompLoc={self.jobcomp}',
            'SelectType=select/cons_tres', 'SelectTypeParameters=CR_Core',
            'SchedulerType=sched/backfill', 'MpiDefault=none', 'SwitchType=switch/none', 'ReturnToService=2',
            'MailProg=/bin/true', 'SlurmctldTimeout=30', 'SlurmdTimeout=30', 'InactiveLimit=0', 'KillWait=5',
            'GresTypes=gpu',
            f'NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} Gres=gpu:{NODE_GPUS} State=UNKNOWN',
            f'PartitionName={PARTITION} Nodes={self.host} Default=YES MaxTime=INFINITE State=UP',
        ]
        self.conf.write_text('\n'.join(lines) + '\n')
        prolog = r / 'task_prolog.sh'
        prolog.write_text(f'#!/bin/sh\necho "$SLURM_JOB_ID ${{SLURM_GPUS_ON_NODE:-0}}" >> {self.job_gpus_file}\n'
                          'exit 0\n')
        prolog.chmod(0o755)
        # GPUs as generic resources Slurm can count (a GPU needs a device file: plain files stand in; no job uses one)
        for i in range(NODE_GPUS):
            (r / f'gpu{i}').touch()
        (r / 'gres.conf').write_text(f'NodeName={self.host} Name=gpu File={r}/gpu[0-{NODE_GPUS - 1}]\n')

    def _spawn(self, name: str, cmd: List[str]):
        log = open(self.root / 'log' / f'{name}.stdout', 'w')
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=self.env(dict(os.environ)), start_new_session=True)
        log.close()

    def _wait(self, what: str, ready, timeout: float = START_TIMEOUT_S):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise ClusterError(f'{name} exited with {p.returncode} while waiting for {what}\n' + self.logs())
            if ready():
                return
            time.sleep(0.3)
        raise ClusterError(f'timed out after {timeout:.0f} s waiting for {what}\n' + self.logs())

    def start(self) -> 'SlurmCluster':
        t0 = time.time()
        munge_dir, key = self._write_munge()
        self._write_conf()
        self._spawn('munged', ['munged', '--foreground', '--force', f'--socket={self.munge_socket}',
                               f'--key-file={key}', f'--pid-file={munge_dir / "munged.pid"}',
                               f'--seed-file={munge_dir / "munged.seed"}',
                               f'--log-file={self.root / "log" / "munged.log"}'])
        self._wait('the munge socket', self.munge_socket.exists)
        self._spawn('slurmctld', ['slurmctld', '-D', '-f', str(self.conf)])
        self._wait('slurmctld', lambda: self._run(['sinfo', '-h', '-o', '%P']).returncode == 0)
        self._spawn('slurmd', ['slurmd', '-D', '-f', str(self.conf)])
        self._wait(f'node {self.host} idle', lambda: 'idle' in self._run(['sinfo', '-h', '-N', '-o', '%t']).stdout)
        self.started_s = time.time() - t0
        return self

    # ------------------------------------------------------------------ use
    def env(self, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """The environment a Slurm client needs for this cluster (and no Slurm job of a surrounding cluster)."""
        env = {k: v for k, v in (base or {}).items() if not k.startswith('SLURM_')}
        env['SLURM_CONF'] = str(self.conf)
        return env

    def _run(self, cmd: List[str], timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env(dict(os.environ)), capture_output=True, text=True, timeout=timeout)

    def run(self, *cmd: str) -> str:
        """A Slurm client command against this cluster; its stdout (a failure raises with its stderr)."""
        p = self._run(list(cmd))
        if p.returncode:
            raise ClusterError(f'{" ".join(cmd)} exited with {p.returncode}: {p.stderr.strip()}')
        return p.stdout

    def jobs(self) -> List[Dict[str, str]]:
        """Every finished job, oldest first, as ``jobcomp/filetxt`` wrote it (JobId, JobName, JobState, ...)."""
        if not self.jobcomp.exists():
            return []
        jobs = []
        for line in self.jobcomp.read_text(errors='replace').splitlines():
            if line.strip():
                # fields are KEY=VALUE separated by spaces; a job name may hold spaces: split at ' KEY='
                parts = re.split(r' (?=[A-Za-z]+=)', line.strip())
                jobs.append(dict(p.split('=', 1) for p in parts if '=' in p))
        return jobs

    def job_gpus(self) -> Dict[str, str]:
        """{job id: the GPUs Slurm gave it on the node ('0' without)}, as its task prolog saw them."""
        if not self.job_gpus_file.exists():
            return {}
        return dict(line.split(' ', 1) for line in self.job_gpus_file.read_text().splitlines() if ' ' in line)

    def running(self) -> List[Dict[str, str]]:
        """Jobs queued or running: ``{'id', 'name', 'state'}``."""
        out = self.run('squeue', '-h', '-o', '%i|%T|%j')
        return [dict(zip(('id', 'state', 'name'), line.split('|', 2))) for line in out.splitlines() if line]

    def logs(self) -> str:
        return '\n'.join(f'--- {p.name}\n{_tail(p)}' for p in sorted((self.root / 'log').glob('*')))

    # ------------------------------------------------------------------ teardown
    def stop(self):
        for name in reversed(DAEMONS):
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)


def require_slurm():
    """Skip (outside CI) or fail (CI) when the Slurm and munge daemons are not installed."""
    missing = [d for d in (*DAEMONS, 'srun', 'sinfo', 'scancel', 'squeue') if shutil.which(d) is None]
    if missing:
        msg = f'Slurm is not installed (missing {", ".join(missing)}): {INSTALL}'
        if os.environ.get('CI'):
            pytest.fail(msg + ' (CI must run the Slurm tests: .ci/debian-packages lists the packages)')
        pytest.skip(msg)


@pytest.fixture(scope='session')
def slurm_cluster(tmp_path_factory):
    require_slurm()
    cluster = SlurmCluster(tmp_path_factory.mktemp('slurm'))
    try:
        cluster.start()
    except Exception as e:  # noqa: BLE001 - never a skip: a cluster that cannot start fails every Slurm test
        cluster.stop()
        pytest.fail(f'the one-node Slurm cluster did not start: {e}', pytrace=False)
    yield cluster
    cluster.stop()
