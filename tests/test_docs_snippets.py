"""The code blocks of README.md and docs/*.md, checked as a user would paste them.

The fence's info string says what a block is (docs/development.md, "Code blocks in the docs"):

- ```` ```python config ````: a config; it must parse with mmengine's ``Config`` and every object it imports must
  import. ```` ```python ```` / ```` ```python fragment ````: part of a config; it must be valid Python and its
  imports must import.
- ```` ```python workspace file=NAME ````: a config a user saves as NAME in their own directory, beside the files a
  ```` ```bash workspace ```` block of the same page makes there; it must plan a run with ``LongCtxPartitioner``.
- ```` ```bash ````: commands; each must name an existing console script, make target, module or file.
  ```` ```bash workspace ```` blocks run as pasted in a fresh directory; ```` ```bash repo ```` blocks run as pasted
  in a copy of the repository files they name.
- any other block (```` ```text ````, no language) is not checked.
"""
import ast
import importlib
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, run_opencompass

PAGES = [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]
FENCE = re.compile(r'^\s*```(.*)$')
TOOLS = {'cp', 'sed', 'tar', 'export', 'cd', 'mkdir', 'git', 'pip', 'huggingface-cli', 'gsutil', 'apt-get', 'sudo'}


def page_blocks(path):
    """The fenced blocks of one page: lang, role, options, the 1-based line of the fence, the text."""
    blocks, block = [], None
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        match = FENCE.match(line)
        if match and block is None:
            words = match.group(1).split()
            options = dict(w.split('=', 1) for w in words[2:] if '=' in w)
            block = SimpleNamespace(path=path, line=number, lang=words[0] if words else '',
                                    role=words[1] if len(words) > 1 else '', options=options, lines=[])
        elif match:
            block.text = '\n'.join(block.lines) + '\n'
            blocks.append(block)
            block = None
        elif block is not None:
            block.lines.append(line)
    return blocks


BLOCKS = [b for page in PAGES for b in page_blocks(page)]
PYTHON = [b for b in BLOCKS if b.lang == 'python']
BASH = [b for b in BLOCKS if b.lang == 'bash' and b.role != 'no-check']
WORKSPACE_FILES = {b.options['file'] for b in PYTHON if b.role == 'workspace'}


def where(block):
    return f'{block.path.relative_to(REPO)}:{block.line}'


# ------------------------------------------------------------------------------------------------ python blocks
def imports(tree):
    """(module, names, inside read_base) of each ``from module import names`` of a parsed block."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    found.append(('.' * inner.level + (inner.module or ''), [a.name for a in inner.names], True))
    inside = {id(n) for w in ast.walk(tree) if isinstance(w, ast.With) for n in w.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and id(node) not in inside:
            found.append((node.module, [a.name for a in node.names], False))
    return found


def config_file(module):
    """The file a ``read_base()`` import names (absolute module path, as mmengine resolves it)."""
    package, *rest = module.split('.')
    spec = importlib.util.find_spec(package)
    return Path(spec.origin).parent.joinpath(*rest).with_suffix('.py')


def check_imports(block):
    problems = []
    for module, names, in_base in imports(ast.parse(block.text)):
        if module.startswith('.'):
            if module.lstrip('.') + '.py' not in workspace_made(block.path):
                problems.append(f'{where(block)}: {module} is made by no `bash workspace` block of the page')
        elif in_base:
            if not config_file(module).is_file():
                problems.append(f'{where(block)}: no config file {module}')
            else:
                defined = config_file(module).read_text(encoding='utf-8')
                problems += [f'{where(block)}: {module} defines no {n}' for n in names
                             if not re.search(rf'^{re.escape(n)}\b|import .*\b{re.escape(n)}\b', defined, re.M)]
        else:
            loaded = importlib.import_module(module)
            problems += [f'{where(block)}: {module} has no {n}' for n in names if not hasattr(loaded, n)]
    return problems


@pytest.mark.parametrize('block', PYTHON, ids=where)
def test_python_block_is_valid_and_its_imports_import(block):
    assert block.role in ('', 'fragment', 'config', 'workspace'), f'{where(block)}: unknown role {block.role!r}'
    assert check_imports(block) == []


@pytest.mark.parametrize('block', [b for b in PYTHON if b.role == 'config'], ids=where)
def test_config_block_parses_with_mmengine(block, tmp_path):
    from mmengine.config import Config
    path = tmp_path / 'snippet.py'
    path.write_text(block.text, encoding='utf-8')
    cfg = Config.fromfile(str(path), format_python_code=False)
    names = {n for _, ns, _ in imports(ast.parse(block.text)) for n in ns}
    assert names and names <= set(cfg.keys()), f'{where(block)}: names not in the parsed config'


# --------------------------------------------------------------------------------------------- the workspace
def workspace_blocks(page):
    return [b for b in BLOCKS if b.path == page and b.role == 'workspace']


def workspace_made(page):
    """The files the page's ``bash workspace`` blocks write (the last argument of each cp)."""
    made = set()
    for block in workspace_blocks(page):
        for words in commands(block):
            if words[0] == 'cp':
                made.add(words[-1])
    return made


def make_workspace(page, directory):
    """The page's workspace, made as pasted: its ``bash workspace`` blocks run in ``directory`` with this
    environment's python first on the PATH, then its ``python workspace`` blocks saved there."""
    import os
    env = dict(os.environ, PATH=os.pathsep.join((str(Path(sys.executable).parent), os.environ['PATH'])))
    configs = []
    for block in workspace_blocks(page):
        if block.lang == 'bash':
            done = subprocess.run(['bash', '-euo', 'pipefail', '-c', block.text], cwd=directory, env=env,
                                  capture_output=True, text=True)
            assert done.returncode == 0, f'{where(block)}:\n{done.stderr}'
        else:
            (directory / block.options['file']).write_text(block.text, encoding='utf-8')
            configs.append(directory / block.options['file'])
    return configs


WORKSPACE_PAGES = sorted({b.path for b in PYTHON if b.role == 'workspace'})


@pytest.mark.e2e
@pytest.mark.parametrize('page', WORKSPACE_PAGES, ids=lambda p: p.name)
def test_workspace_config_plans_with_longctx_partitioner(page, tmp_path):
    """The workspace config, made as pasted, parses, and plans through LongCtxPartitioner over the copied tier."""
    from mmengine.config import Config
    from opencompass_longctx.run.partitioner import LongCtxPartitioner
    for path in make_workspace(page, tmp_path):
        cfg = Config.fromfile(str(path), format_python_code=False)
        assert cfg.infer.partitioner.type is LongCtxPartitioner, f'{path.name}: no LongCtxPartitioner'
        copied = {d['tier'] for d in cfg.datasets} - {'2k'}
        assert copied == {'3k'}, f'{path.name}: the copied tier is not in the run ({copied})'
        assert all(d['num_samples'] == 1 for d in cfg.datasets)


@pytest.mark.e2e
@pytest.mark.parametrize('page', WORKSPACE_PAGES, ids=lambda p: p.name)
def test_workspace_dry_run_prints_the_plan(page, tmp_path):
    """`opencompass <file> --dry-run` on the workspace as pasted: the plan, with the new tier, no traceback."""
    for path in make_workspace(page, tmp_path):
        done = run_opencompass([path.name, '--dry-run', '-w', 'outputs'], cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert 'Traceback' not in done.stdout + done.stderr
        (plan,) = tmp_path.glob('outputs/*/plan/longctx_plan.json')
        text = json.dumps(json.loads(plan.read_text(encoding='utf-8')))
        assert '_3k' in text and '_2k' in text


# ------------------------------------------------------------------------------------------------ bash blocks
def commands(block):
    """Each command of a bash block as its words (continuations joined, comments dropped, split at && ; |)."""
    text = block.text.replace('\\\n', ' ')
    found = []
    for line in text.splitlines():
        words, current = shlex.split(line, comments=True), []
        for word in words + ['&&']:
            if word in ('&&', '||', ';', '|'):
                if current:
                    found.append(current)
                current = []
            else:
                current.append(word)
    return found


def console_scripts():
    setup = (REPO / 'setup.py').read_text(encoding='utf-8')
    return set(re.findall(r"'([\w-]+)=opencompass_longctx[\w.]*:\w+'", setup))


def make_targets():
    return set(re.findall(r'^([A-Za-z][\w-]*):', (REPO / 'Makefile').read_text(encoding='utf-8'), re.M))


def named_config(kind, name):
    return any((REPO / 'opencompass_longctx' / 'configs' / kind).rglob(f'{name}.py'))


def placeholder(word):
    return '<' in word or '$' in word


def project_text():
    texts = [p.read_text(encoding='utf-8') for p in (REPO / 'opencompass_longctx').rglob('*.py')]
    texts += [p.read_text(encoding='utf-8') for p in (REPO / 'examples').glob('*.py')]
    return '\n'.join(texts) + (REPO / 'Makefile').read_text(encoding='utf-8')


PROJECT = project_text()


def check_opencompass(block, args):
    problems, kind = [], None
    flags = {'--datasets': 'datasets', '--models': 'models', '--summarizer': 'summarizers'}
    for word in args:
        if word.startswith('-'):
            kind = flags.get(word)
        elif kind and not named_config(kind, word):
            problems.append(f'{where(block)}: opencompass {kind}: no config {word}')
        elif word.endswith('.py') and not placeholder(word):
            if not (REPO / word).is_file() and word not in WORKSPACE_FILES:
                problems.append(f'{where(block)}: opencompass: no file {word}')
    return problems


def check_python(block, args):
    if args[:1] == ['-m']:
        ok = importlib.util.find_spec(args[1]) is not None
        return [] if ok else [f'{where(block)}: python -m {args[1]}: no such module']
    if args and args[0].endswith('.py') and not (REPO / args[0]).is_file():
        return [f'{where(block)}: python {args[0]}: no such file']
    return []


def check_command(block, words, scripts, targets):
    """What is wrong with one command: a program, target, module, file or variable that does not exist."""
    while words and re.match(r'^[A-Z_][A-Z0-9_]*=', words[0]):
        name = words.pop(0).split('=', 1)[0]
        if name not in PROJECT:
            return [f'{where(block)}: {name} is read nowhere in the project']
    if not words:
        return []
    program, args = words[0], words[1:]
    if program in ('python', 'python3'):
        return check_python(block, args)
    if program == 'opencompass':
        return check_opencompass(block, args)
    if program == 'make':
        return [f'{where(block)}: make {a}: no such target' for a in args if '=' not in a and a not in targets]
    if program == 'bash':
        return [] if (REPO / args[0]).is_file() else [f'{where(block)}: bash {args[0]}: no such file']
    if program == 'cp' and not placeholder(args[0]) and block.role != 'workspace':
        return [] if (REPO / args[0]).is_file() else [f'{where(block)}: cp {args[0]}: no such file']
    if program in scripts or program in TOOLS:
        return []
    return [f'{where(block)}: {program!r} is no console script, make target, module, file or known tool']


@pytest.mark.parametrize('block', BASH, ids=where)
def test_commands_name_what_exists(block):
    assert block.role in ('', 'workspace', 'repo'), f'{where(block)}: unknown role {block.role!r}'
    scripts, targets = console_scripts(), make_targets()
    problems = [p for words in commands(block) for p in check_command(block, list(words), scripts, targets)]
    assert problems == []


@pytest.mark.e2e
@pytest.mark.parametrize('block', [b for b in BASH if b.role == 'repo'], ids=where)
def test_repo_block_runs_as_pasted(block, tmp_path):
    """A ``bash repo`` block, run in a copy of the repository files it names: it succeeds and what it writes parses."""
    from mmengine.config import Config
    named = {w for words in commands(block) for w in words if (REPO / w).is_file()}
    for name in named:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    done = subprocess.run(['bash', '-euo', 'pipefail', '-c', block.text], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    made = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob('*.py')} - named
    assert made, f'{where(block)}: wrote no config'
    for name in made:
        tier = re.search(r"TIER = '(\w+)'", (tmp_path / name).read_text(encoding='utf-8')).group(1)
        assert tier in name, f'{name}: TIER is {tier!r}'
        cfg = Config.fromfile(str(tmp_path / name), format_python_code=False)
        lists = [v for k, v in cfg.items() if k.endswith('_datasets')]
        assert lists and all(d['tier'] == tier for v in lists for d in v), f'{name}: datasets not at {tier}'


def test_the_readme_holds_every_checked_kind():
    """The README holds the checked kinds: a config, a workspace and commands (so a lost info string shows)."""
    readme = [b for b in BLOCKS if b.path.name == 'README.md']
    assert {(b.lang, b.role) for b in readme} >= {('python', 'config'), ('python', 'workspace'),
                                                  ('bash', 'workspace'), ('bash', 'repo'), ('bash', '')}


def test_the_checks_flag_what_does_not_exist(tmp_path):
    """A page with a wrong command, target, file, config name, variable and import: each is reported."""
    page = tmp_path / 'page.md'
    page.write_text('```bash\nlongctx-nothing --x\nmake no-such-target\nopencompass examples/no_such.py\n'
                    'opencompass --datasets babilong_4k_gen no_such_gen\nNO_SUCH_VARIABLE=1 longctx-report x\n'
                    'python -m opencompass_longctx.no_such\n```\n'
                    '```python config\nfrom opencompass_longctx.run.tasks import NoSuchTask\n```\n', encoding='utf-8')
    bash, python = page_blocks(page)
    bash.path = python.path = REPO / 'page.md'
    scripts, targets = console_scripts(), make_targets()
    problems = [p for words in commands(bash) for p in check_command(bash, list(words), scripts, targets)]
    assert [p.split(': ', 1)[1] for p in problems] == [
        "'longctx-nothing' is no console script, make target, module, file or known tool",
        'make no-such-target: no such target', 'opencompass: no file examples/no_such.py',
        'opencompass datasets: no config no_such_gen', 'NO_SUCH_VARIABLE is read nowhere in the project',
        'python -m opencompass_longctx.no_such: no such module']
    assert check_imports(python) == ['page.md:9: opencompass_longctx.run.tasks has no NoSuchTask']
