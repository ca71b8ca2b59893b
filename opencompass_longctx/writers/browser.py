"""The leaderboard page in a real browser: Debian's headless ``chromium`` renders it, measures it and takes its
picture.

Why a browser and not a guess: what a reader sees (a table cut at the window's edge, a page 20,000 px tall, the
color a cell really gets) is only known after layout. :func:`probe` opens a copy of the page with a few lines of
script added (the page itself has none) that write the document's size, and anything else a caller asks for, into
the DOM that ``--dump-dom`` prints. :func:`screenshot` measures the document first and shoots it whole (or down to
one element, e.g. the leaderboard at the top), so the picture is the page, not a fixed 1400 x 1800 crop.
"""
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import Optional, Sequence

CHROMIUM_INSTALL = 'apt-get update && apt-get install -y --no-install-recommends chromium'
CHROMIUM_FLAGS = ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync',
                  '--hide-scrollbars')
WIDTH = 1400
_PROBE_ID = 'longctx-probe'
# what every probe reports: the document's size at the window's width (no script of the page's own is needed)
_MEASURE = ('{width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight, '
            'window: window.innerWidth}')


def find_chromium() -> Optional[str]:
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _chromium(args: Sequence[str], timeout: int = 120) -> subprocess.CompletedProcess:
    exe = find_chromium()
    if exe is None:
        raise RuntimeError(f'no headless browser: install Debian\'s chromium ({CHROMIUM_INSTALL})')
    with tempfile.TemporaryDirectory(prefix='longctx-chromium-') as profile:
        return subprocess.run([exe, *CHROMIUM_FLAGS, f'--user-data-dir={profile}', *args], capture_output=True,
                              text=True, timeout=timeout)


def dump_dom(html_path: str, width: int = WIDTH) -> str:
    """The page's DOM after the browser rendered it (at ``width`` px)."""
    proc = _chromium([f'--window-size={width},900', '--virtual-time-budget=5000', '--dump-dom',
                      'file://' + os.path.abspath(html_path)])
    if proc.returncode != 0 or '<table' not in proc.stdout:
        raise RuntimeError(f'chromium could not render {html_path} (exit {proc.returncode}): {proc.stderr[-2000:]}')
    return proc.stdout


def probe(html_path: str, width: int = WIDTH, extra: str = 'null') -> dict:
    """Render the page at ``width`` px and return {width, height, window, extra}: the document's scroll size, the
    window's inner width, and the value of the JavaScript expression ``extra`` (JSON), all read after the page
    loaded. The page is not changed: a copy with the measuring script runs in a temporary directory."""
    with open(html_path, encoding='utf-8') as f:
        page = f.read()
    script = (f'<script>window.addEventListener("load", function () {{ var r = {_MEASURE}; r.extra = ({extra}); '
              f'var p = document.createElement("pre"); p.id = "{_PROBE_ID}"; p.textContent = JSON.stringify(r); '
              'document.documentElement.appendChild(p); });</script>')
    cut = page.rfind('</body>')
    page = page[:cut] + script + page[cut:] if cut >= 0 else page + script
    with tempfile.TemporaryDirectory(prefix='longctx-probe-') as tmp:
        path = os.path.join(tmp, 'page.html')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(page)
        dom = dump_dom(path, width)
    found = re.search(f'<pre id="{_PROBE_ID}">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError(f'chromium rendered {html_path} but the measuring script did not run')
    return json.loads(html.unescape(found.group(1)))


def screenshot(html_path: str, png_path: str, width: int = WIDTH, height: Optional[int] = None,
               until: Optional[str] = None) -> str:
    """A PNG of the page at ``width`` px: the whole document (its height measured first), ``height`` px of it, or
    down to the bottom of the element with id ``until`` (e.g. ``leaderboard``: the page's top)."""
    if height is None:
        bottom = ('null' if until is None else
                  f'(function (e) {{ return e ? Math.ceil(e.getBoundingClientRect().bottom + window.scrollY) : null; '
                  f'}})(document.getElementById({json.dumps(until)}))')
        found = probe(html_path, width, bottom)
        height = found['extra'] + 16 if found.get('extra') else found['height']
    proc = _chromium([f'--screenshot={os.path.abspath(png_path)}', f'--window-size={width},{height}',
                      '--run-all-compositor-stages-before-draw', '--virtual-time-budget=5000',
                      'file://' + os.path.abspath(html_path)], timeout=300)
    if proc.returncode != 0 or not os.path.isfile(png_path):
        raise RuntimeError(f'chromium wrote no screenshot of {html_path} (exit {proc.returncode}): '
                           f'{proc.stderr[-2000:]}')
    return png_path


def png_size(path: str):
    """(width, height) of a PNG file, read from its header."""
    with open(path, 'rb') as f:
        head = f.read(24)
    if head[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError(f'{path} is not a PNG file')
    return int.from_bytes(head[16:20], 'big'), int.from_bytes(head[20:24], 'big')


def palette_png(path: str, colors: int = 256) -> str:
    """Rewrite a PNG in ``colors`` colors (a page's picture: a fraction of the bytes, the same to the eye)."""
    from PIL import Image
    with Image.open(path) as im:
        small = im.convert('RGB').quantize(colors, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    small.save(path, 'PNG', optimize=True)
    return path


def main(argv=None) -> int:
    """``python -m opencompass_longctx.writers.browser PAGE PNG``: a picture of a page (make docs-screenshot)."""
    import argparse
    ap = argparse.ArgumentParser(prog='python -m opencompass_longctx.writers.browser', description=main.__doc__)
    ap.add_argument('page')
    ap.add_argument('png')
    ap.add_argument('--width', type=int, default=WIDTH)
    ap.add_argument('--until', help='down to the bottom of the element with this id (default: the whole page)')
    ap.add_argument('--palette', action='store_true', help='write the PNG in 256 colors (small enough for a repo)')
    args = ap.parse_args(argv)
    screenshot(args.page, args.png, args.width, until=args.until)
    if args.palette:
        palette_png(args.png)
    w, h = png_size(args.png)
    print(f'{args.png}: {w} x {h} px, {os.path.getsize(args.png):,} bytes (the page at {args.width} px: '
          f'{probe(args.page, args.width)["height"]} px tall)')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
