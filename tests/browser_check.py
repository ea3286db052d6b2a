"""Open a built report site in real headless chromium and check it as a person would see it.

Every page of the site (``index.html`` and the notebook pages) is loaded, offline, in an
iframe of a checker page whose script writes what it finds into the DOM, which chromium
dumps (``--dump-dom``): an image that did not load (``naturalWidth`` 0), a link to a local
file or anchor that does not exist, anything that points at another host. A second run
takes a screenshot of the index. No Python package beyond the standard library is needed.

Usage::

    python tests/browser_check.py build/report/index.html --screenshot build/report_screenshot.png

Exits 0 when the site is fine or no chromium is installed (saying so), 1 listing the problems.
"""
from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["find_chromium", "check_site"]

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-default-apps", "--hide-scrollbars",
    # The checker page reads the site's pages (file:// to file://) and requests linked files.
    "--allow-file-access-from-files",
    # Offline, as a reader without network would be: any other host fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]

# Runs in the checker page after every iframe (one per page of the site) has loaded.
CHECKER_JS = r"""
window.addEventListener('load', () => {
  const pages = [];
  for (const frame of document.querySelectorAll('iframe')) {
    const page = {page: frame.dataset.page, problems: []};
    pages.push(page);
    let doc;
    try { doc = frame.contentDocument; } catch (e) { doc = null; }
    if (!doc || !doc.body || doc.location.protocol !== 'file:') { page.problems.push('page did not load'); continue; }
    const here = new URL(doc.baseURI);
    for (const img of doc.images) {
      if (!(img.complete && img.naturalWidth > 0)) {
        page.problems.push('image did not load: ' + img.getAttribute('src').slice(0, 120));
      }
    }
    for (const el of doc.querySelectorAll('[src], link[href], a[href]')) {
      const ref = el.getAttribute(el.hasAttribute('src') ? 'src' : 'href');
      const url = new URL(ref, here);
      if (url.protocol === 'data:') continue;
      if (url.protocol !== 'file:') { page.problems.push('refers to another host: ' + ref); continue; }
      if (el.tagName !== 'A') continue;
      if (url.pathname === here.pathname) {
        if (url.hash && !doc.getElementById(decodeURIComponent(url.hash.slice(1)))) {
          page.problems.push('anchor not found: ' + ref);
        }
        continue;
      }
      const xhr = new XMLHttpRequest();
      try {
        xhr.open('GET', url.href, false);
        xhr.send();
      } catch (e) {
        page.problems.push('link does not resolve: ' + ref);
      }
    }
    page.height = doc.documentElement.scrollHeight;
  }
  document.getElementById('result').textContent = JSON.stringify(pages);
});
"""


def find_chromium() -> str | None:
    """The path of an installed chromium (or Chrome), else ``None``."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def _run(browser: str, args: list[str], profile_dir: Path, timeout: float) -> str:
    """Run headless chromium with a throw-away profile; return its standard output."""
    cmd = [browser, *FLAGS, f"--user-data-dir={profile_dir}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False).stdout


def check_site(index: Path, screenshot: Path | None = None, browser: str | None = None,
               timeout: float = 120) -> list[str]:
    """Load every page of the site of ``index`` in headless chromium; return the problems
    found (empty when every image loaded and every link resolves), and save a screenshot of
    the index to ``screenshot`` if given.

    Raises
    ------
    FileNotFoundError
        When no chromium is installed (see :func:`find_chromium`).
    RuntimeError
        When chromium did not run the checker (its dump has no result).
    """
    browser = browser or find_chromium()
    if browser is None:
        raise FileNotFoundError(f"no browser installed (looked for {', '.join(BROWSERS)})")
    index = index.resolve()
    pages = [index] + sorted(p for p in index.parent.rglob("*.html") if p != index)
    with tempfile.TemporaryDirectory(prefix="report-check-") as tmp:
        frames = "\n".join(f'<iframe data-page="{html.escape(str(p.relative_to(index.parent)))}" '
                           f'src="{p.as_uri()}" width="1200" height="800"></iframe>' for p in pages)
        checker = Path(tmp) / "checker.html"
        checker.write_text(f'<!DOCTYPE html><html><body>{frames}<pre id="result">pending</pre>'
                           f"<script>{CHECKER_JS}</script></body></html>")
        dump = _run(browser, ["--dump-dom", checker.as_uri()], Path(tmp) / "profile", timeout)
        found = re.search(r'<pre id="result">(.*?)</pre>', dump, re.DOTALL)
        if not found or found.group(1) == "pending":
            raise RuntimeError(f"chromium did not run the checker on {index} (output: {dump[-500:]!r})")
        results = json.loads(html.unescape(found.group(1)))
        if screenshot is not None:
            # The headless window is the screenshot: as tall as the index, within reason.
            height = min(max(results[0].get("height", 900), 900), 12000)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            _run(browser, [f"--screenshot={screenshot.resolve()}", f"--window-size=1280,{height}", index.as_uri()],
                 Path(tmp) / "profile", timeout)
            if not screenshot.exists():
                raise RuntimeError(f"chromium wrote no screenshot to {screenshot}")
    return [f"{r['page']}: {p}" for r in results for p in r["problems"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check a report site in headless chromium: images load, links "
                                                 "resolve, nothing refers to another host.")
    parser.add_argument("index", type=Path, help="the site's index.html")
    parser.add_argument("--screenshot", type=Path, help="save a PNG screenshot of the index here")
    args = parser.parse_args(argv)
    if find_chromium() is None:
        print(f"browser check skipped: no chromium installed (looked for {', '.join(BROWSERS)}; "
              "Debian: apt-get install chromium)")
        return 0
    problems = check_site(args.index, args.screenshot)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    pages = len(list(args.index.parent.rglob("*.html")))
    print(f"browser check of {args.index}: {pages} page(s), {len(problems)} problem(s)"
          + (f"; screenshot {args.screenshot}" if args.screenshot else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
