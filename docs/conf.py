"""Sphinx configuration of cscore's documentation site (issue 37).

Build from the project root::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

The guides are the Markdown files of this folder (MyST), the API reference is
generated from the numpydoc docstrings (``docs/api``), and the gallery is built by
running ``examples/gallery/plot_*.py`` (sphinx-gallery).  Nothing is downloaded.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# A checkout without `pip install .`: document the sources (their compiled core must
# have been built or copied there, see scripts/dev-build.sh).
if not os.environ.get("CSCORE_DOCS_INSTALLED"):
    sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("MPLBACKEND", "Agg")

import cscore  # noqa: E402

project = "cscore"
author = "the cscore developers"
copyright = "the cscore developers"
release = cscore.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
templates_path = ["_templates"]
nitpicky = False

# -- MyST: the guides -------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# -- API reference ------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # the numpydoc Parameters sections carry the types
add_module_names = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = False
# Every documented object is checked for malformed docstrings, each a warning, so `-W`
# fails the build: no docstring (GL08) or summary (SS01), an unknown or misplaced
# section (GL06, GL07), a documented parameter the signature lacks (PR02), long type
# names or a bad "name : type" colon (PR06, PR10), a generator without Yields (YD01).
# Completeness checks (every parameter documented, See Also, Examples) are not on.
numpydoc_validation_checks = {"GL06", "GL07", "GL08", "SS01", "PR02", "PR06", "PR10", "YD01"}
# A dict constant is documented by its `#:` comment; numpydoc would check the docstring
# of `dict` itself, which has no one-line summary.
numpydoc_validation_exclude = {r"\.MNIST_SPLITS$"}

# -- Gallery ------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
    "show_memory": False,
    "min_reported_time": 1,
    "backreferences_dir": None,
    "write_computation_times": True,
}

# -- HTML -------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"cscore {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
html_copy_source = False


# -- Links from the guides to files outside the site ---------------------------------
# The guides (and the README, included as the overview) link to measured results in
# benchmarks/, which are repository files rather than pages of this site.  They become
# download links (MyST's ``path:`` scheme), so the site carries the file itself and a
# reader on GitHub still follows the plain relative link.
_LINK = re.compile(r"\]\((?P<target>[^)\s#:]+)(?P<anchor>#[^)\s]*)?\)")


def _outside_links(text: str, base: Path, srcdir: Path) -> str:
    def fix(m: re.Match[str]) -> str:
        path = (base / m.group("target")).resolve()
        if not path.is_file() or path.is_relative_to(srcdir):
            return m.group(0)
        return f"](path:{os.path.relpath(path, base)})"

    return _LINK.sub(fix, text)


def _on_source_read(app, docname: str, source: list[str]) -> None:
    if app.env.doc2path(docname).suffix == ".md":
        srcdir = Path(app.srcdir).resolve()
        source[0] = _outside_links(source[0], srcdir / Path(docname).parent, srcdir)


def _on_include_read(app, relative_path: Path, parent_docname: str,
                     content: list[str]) -> None:
    srcdir = Path(app.srcdir).resolve()
    path = (srcdir / relative_path).resolve()
    if path.suffix == ".md":
        # the included text is rendered in the parent's folder: paths relative to it
        text = _LINK.sub(lambda m: m.group(0) if (path.parent / m.group("target")).resolve()
                         .is_relative_to(srcdir) else
                         f"]({os.path.relpath(path.parent / m.group('target'), srcdir)})",
                         content[0])
        content[0] = _outside_links(text, srcdir, srcdir)


def setup(app):
    app.connect("source-read", _on_source_read)
    app.connect("include-read", _on_include_read)
