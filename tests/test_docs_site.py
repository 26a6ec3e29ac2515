"""The documentation site (issue 37): its sources, and the built pages in a browser.

Without a built site or a browser the browser checks skip, so the normal suite
passes without them.  CI builds the site first::

    sphinx-build -W --keep-going -b html docs docs/_build/html
    CSCORE_DOCS_REQUIRE=1 python -m pytest -q tests/test_docs_site.py

and with ``CSCORE_DOCS_REQUIRE=1`` a missing site or browser fails instead of
skipping.  ``CSCORE_DOCS_HTML`` points at another build folder and
``CSCORE_DOCS_BROWSER`` at another Chromium-like executable.

The browser is headless Chromium: ``--dump-dom`` gives the page as rendered
(after its scripts ran), ``--screenshot`` an image of it.  The checks: the page
title, a gallery figure that is in the page and is an image file of the build,
and every internal link of the page (``href`` and ``src``) resolving to a file
of the build and, for a ``#fragment``, to an element with that id.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import types
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

#: No C++ path (and a browser that must not inherit the sanitizer's LD_PRELOAD): left
#: out of the sanitizer run, like the other docs tests.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GALLERY = ROOT / "examples" / "gallery"
SITE = Path(os.environ.get("CSCORE_DOCS_HTML", DOCS / "_build" / "html"))
REQUIRE = os.environ.get("CSCORE_DOCS_REQUIRE", "") not in ("", "0")

#: The packages (and public modules) whose ``__all__`` the API reference covers.
PUBLIC_MODULES = [
    "cscore", "cscore.decoders", "cscore.decoders.learned", "cscore.models",
    "cscore.pipelines", "cscore.datasets", "cscore.metrics",
    "cscore.bench", "cscore.training", "cscore.seq", "cscore.text", "cscore.cli",
    "cscore.testing", "cscore.problem", "cscore.dask",
]


# -- the sources (no build needed) ---------------------------------------------------

def documented_names() -> tuple[set[str], set[str], set[str]]:
    """(names documented on the reference pages, link targets, names listed as links).

    Documented: the entries of an ``autosummary`` list and the ``autodata`` /
    ``data`` directives, qualified by the page's ``currentmodule``.  Link
    targets: those of the ``:obj:`` and ``:mod:`` roles; a link ``:obj:`name
    <target>``` also lists ``name`` on its page (a re-export, ``module.name``).
    """
    documented: set[str] = set()
    linked: set[str] = set()
    listed: set[str] = set()
    for page in sorted((DOCS / "api").glob("*.rst")):
        module = None
        in_list = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if m := re.match(r"\.\. currentmodule:: (\S+)", line):
                module = m.group(1)
            elif line.startswith(".. autosummary::"):
                in_list = True
            elif m := re.match(r"\.\. (?:autodata|data):: (\S+)", line):
                documented.add(f"{module}.{m.group(1)}")
            elif in_list and (m := re.match(r"   ([A-Za-z_]\w*)\s*$", line)):
                documented.add(f"{module}.{m.group(1)}")
            elif in_list and line and not line.startswith(" "):
                in_list = False
            for target in re.findall(r":(?:obj|mod):`(?:[^`<]*<)?([\w.]+)>?`", line):
                linked.add(target)
            for alias in re.findall(r":obj:`(\w+) <[\w.]+>`", line):
                listed.add(f"{module}.{alias}")
    return documented, linked, listed


def test_every_public_name_is_on_a_reference_page():
    documented, linked, listed = documented_names()
    pages = {m for p in (DOCS / "api").glob("*.rst")
             for m in re.findall(r"\.\. currentmodule:: (\S+)", p.read_text(encoding="utf-8"))}
    missing, dangling = [], []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            full = f"{module_name}.{name}"
            if isinstance(obj, types.ModuleType):
                if obj.__name__ not in pages:
                    missing.append(full)
            elif full not in documented and full not in listed:
                missing.append(full)
    for target in linked:
        if target not in documented and target not in pages:
            dangling.append(target)
    assert missing == [], f"public names on no page of docs/api: {missing}"
    assert dangling == [], f"docs/api links to names documented nowhere: {dangling}"


def test_a_re_exported_name_links_to_the_same_object():
    for page in sorted((DOCS / "api").glob("*.rst")):
        text = page.read_text(encoding="utf-8")
        module = re.search(r"\.\. currentmodule:: (\S+)", text)
        if module is None:  # the index of the reference
            continue
        here = importlib.import_module(module.group(1))
        for alias, target in re.findall(r":obj:`(\w+) <([\w.]+)>`", text):
            owner, _, name = target.rpartition(".")
            assert getattr(here, alias) is getattr(importlib.import_module(owner), name), \
                f"{page.name}: {alias} is not {target}"


def gallery_examples() -> list[Path]:
    return sorted(GALLERY.glob("plot_*.py"))


def test_the_gallery_has_eight_runnable_examples_with_titles():
    examples = gallery_examples()
    assert len(examples) >= 8
    assert (GALLERY / "README.rst").is_file()  # sphinx-gallery's section header
    for path in examples:
        text = path.read_text(encoding="utf-8")
        head = re.match(r'"""\n(?P<title>[^\n]+)\n(?P<rule>=+)\n', text)
        assert head, f"{path.name}: no sphinx-gallery title (docstring, title, ===)"
        assert len(head.group("rule")) >= len(head.group("title")), path.name
        assert "plt.show()" in text or "savefig" in text, f"{path.name} draws no figure"
        private = re.findall(r"^\s*(?:from|import) cscore\S*\._\w+", text, re.M)
        assert private == [], f"{path.name} imports private modules: {private}"


def test_the_guides_are_in_the_site():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    toctree = "\n".join(re.findall(r"```\{toctree\}\n(.*?)```", index, re.S))
    entries = {line.strip() for line in toctree.splitlines()
               if line.strip() and not line.startswith(":")}
    guides = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    assert guides <= entries, f"guides missing from docs/index.md: {guides - entries}"


# -- the built site in a browser -------------------------------------------------------

def need(ok: bool, why: str) -> None:
    """Skip (or, with CSCORE_DOCS_REQUIRE=1, fail) when ``ok`` is false."""
    if not ok:
        if REQUIRE:
            pytest.fail(f"{why} (CSCORE_DOCS_REQUIRE is set)")
        pytest.skip(why)


def browser() -> str:
    """A headless-capable Chromium, or skip/fail."""
    names = [os.environ.get("CSCORE_DOCS_BROWSER", ""), "chromium", "chromium-browser",
             "google-chrome", "google-chrome-stable"]
    found = next((shutil.which(n) for n in names if n and shutil.which(n)), None)
    need(found is not None, "no Chromium browser (apt-get install chromium)")
    assert found is not None
    return found


def built(page: str) -> Path:
    path = SITE / page
    need(path.is_file(), f"the site is not built ({path} missing; sphinx-build docs "
                         f"docs/_build/html)")
    return path


def run_browser(args: list[str], tmp_path: Path) -> str:
    cmd = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


class Page(HTMLParser):
    """The title, ids, links and images of an HTML document."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self._in_title = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.ids.update(a[k] for k in ("id", "name") if a.get(k))
        if tag == "title":
            self._in_title = True
        if tag in ("a", "link") and "href" in a:
            self.links.append(a["href"])
        if tag in ("img", "script", "source") and "src" in a:
            self.links.append(a["src"])
            if tag == "img":
                self.images.append(a["src"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


_IDS: dict[Path, set[str]] = {}


def ids_of(path: Path) -> set[str]:
    if path not in _IDS:
        _IDS[path] = Page(path.read_text(encoding="utf-8", errors="replace")).ids
    return _IDS[path]


def broken_links(page_path: Path, page: Page) -> list[str]:
    """The internal links of ``page`` that lead to no file or no element of the build."""
    broken = []
    for href in page.links:
        parts = urlsplit(href)
        if parts.scheme in ("http", "https", "mailto", "data", "javascript") or parts.netloc:
            continue
        fragment = unquote(parts.fragment)
        if not parts.path:  # within the page
            if fragment and fragment not in page.ids:
                broken.append(f"{href} (no id {fragment!r} in the page)")
            continue
        target = (Path(unquote(parts.path)) if parts.scheme == "file"
                  else page_path.parent / unquote(parts.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(f"{href} (no file {target})")
            continue
        if fragment and target.suffix == ".html":
            ids = page.ids if target == page_path.resolve() else ids_of(target)
            if fragment not in ids:
                broken.append(f"{href} (no id {fragment!r} in {target.name})")
    return broken


def assert_gallery_figure(path: Path, page: Page, name: str) -> None:
    """``page`` shows a figure ``name*`` drawn by the gallery: a PNG file of the build."""
    from PIL import Image

    figures = [src for src in page.images if name in src and "thumb" not in src]
    assert figures, f"{path.name}: no gallery figure {name}* among {page.images}"
    for src in figures:
        with Image.open(path.parent / unquote(urlsplit(src).path)) as im:
            assert im.format == "PNG" and min(im.size) >= 100, (src, im.size)
            assert sum(n > 0 for n in im.convert("L").histogram()) > 16, f"{src} is blank"


def test_the_index_page_renders(tmp_path):
    path = built("index.html")
    page = Page(run_browser(["--dump-dom", path.as_uri()], tmp_path))
    assert page.title.startswith("cscore"), page.title
    links = [h for h in page.links if not urlsplit(h).scheme]
    # the page leads to the guides, the gallery and the API reference
    for must in ("overview.html", "auto_examples/index.html", "api/index.html"):
        assert must in links, f"index.html does not link to {must}"
    assert_gallery_figure(path, page, "sphx_glr_plot_01_demo_001")
    assert broken_links(path, page) == []


def test_a_gallery_page_renders_with_its_figure(tmp_path):
    from PIL import Image

    path = built("auto_examples/plot_01_demo.html")
    page = Page(run_browser(["--dump-dom", path.as_uri()], tmp_path))
    assert page.title.startswith("The demo: LSTM-CS, SOMP and OMP on image blocks"), page.title
    assert_gallery_figure(path, page, "sphx_glr_plot_01_demo_")
    assert broken_links(path, page) == []
    # and the browser draws it: a screenshot of the page is not a blank canvas
    shot = tmp_path / "page.png"
    run_browser([f"--screenshot={shot}", "--window-size=1200,1800", "--hide-scrollbars",
                 path.as_uri()], tmp_path)
    with Image.open(shot) as im:
        assert im.size == (1200, 1800)
        assert sum(n > 0 for n in im.convert("L").histogram()) > 32


def test_no_page_of_the_site_has_a_broken_internal_link():
    """Every page, read as built (the browser checks above see two of them rendered)."""
    built("index.html")
    pages = [p for p in sorted(SITE.rglob("*.html")) if "_static" not in p.relative_to(SITE).parts]
    assert len(pages) > 50  # the guides, the gallery and a page per documented name
    broken = {str(p.relative_to(SITE)): b for p in pages
              if (b := broken_links(p, Page(p.read_text(encoding="utf-8", errors="replace"))))}
    assert broken == {}


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "a.html").write_text('<p id="x">x</p>', encoding="utf-8")
    page = Page('<title>t</title><a href="a.html#x">ok</a><a href="a.html#y">no id</a>'
                '<a href="b.html">no file</a><a href="#top">self</a><p id="top"></p>'
                '<a href="#gone">no such id here</a>'
                '<a href="https://example.org/">external</a><img src="a.html">')
    broken = broken_links(tmp_path / "page.html", page)
    assert [b.split(" ")[0] for b in broken] == ["a.html#y", "b.html", "#gone"]
    assert page.title == "t" and page.images == ["a.html"]
