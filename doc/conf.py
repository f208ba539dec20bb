"""Sphinx configuration of the sklearn-pdp documentation.

Build (from the repository root, after ``pip install ".[docs]"``)::

    sphinx-build -W --keep-going -b html doc doc/_build/html

Environment variables:

``SKLEARN_PDP_GALLERY=quick``
    Execute only the examples listed in ``QUICK_EXAMPLES`` (continuous
    integration); the others are rendered with their code but not run.
``SKLEARN_PDP_DOCS_OFFLINE=1``
    Do not try to reach the intersphinx inventories (see below).
"""

import os
import re
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document the checkout, installed or not

import sklearn_pdp  # noqa: E402

project = "sklearn-pdp"
author = "The sklearn-pdp developers"
copyright = "The sklearn-pdp developers"
version = release = sklearn_pdp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
html_title = f"sklearn-pdp {release}"

autosummary_generate = True
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# ---------------------------------------------------------------------------
# intersphinx: links to scikit-learn, numpy, scipy and Python.
#
# The inventories are fetched at build time. Sphinx turns an unreachable
# inventory into a warning, which fails a build with -W, and it cannot be
# silenced with ``suppress_warnings``. So each inventory is probed first (a
# few seconds at most, in parallel) and only the reachable ones are used;
# without network the references to these projects render as plain text
# (``nitpicky`` is off) instead of links, and the build still succeeds.
# ---------------------------------------------------------------------------
INVENTORIES = {
    "python": "https://docs.python.org/3/",
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "sklearn": "https://scikit-learn.org/stable/",
}


def _reachable(url, timeout=5):
    request = urllib.request.Request(url + "objects.inv", method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return True
    except Exception:  # any network failure means: build without the links
        return False


if os.environ.get("SKLEARN_PDP_DOCS_OFFLINE"):
    _online = {}
else:
    with ThreadPoolExecutor(len(INVENTORIES)) as pool:
        _online = dict(zip(INVENTORIES, pool.map(_reachable, INVENTORIES.values())))
intersphinx_mapping = {
    name: (url, None) for name, url in INVENTORIES.items() if _online.get(name)
}
_skipped = sorted(set(INVENTORIES) - set(intersphinx_mapping))
if _skipped:
    print(f"intersphinx: not reachable, building without links to {', '.join(_skipped)}")

# ---------------------------------------------------------------------------
# Example gallery
# ---------------------------------------------------------------------------
# Examples that run in a few seconds each: the continuous-integration build
# (SKLEARN_PDP_GALLERY=quick) executes only these.
QUICK_EXAMPLES = [
    "plot_ops_pdp_vs_dp.py",
    "plot_output_perturbation_figure1.py",
    "plot_compare_mechanisms.py",
    "plot_private_tuning.py",
    "plot_pdp_report_pipeline.py",
    "plot_published_report.py",
    "plot_declared_encoding.py",
    "plot_privacy_ledger.py",
]
if os.environ.get("SKLEARN_PDP_GALLERY") == "quick":
    _pattern = "(" + "|".join(re.escape(name) for name in QUICK_EXAMPLES) + ")$"
else:
    _pattern = "/plot_"

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": _pattern,
    "download_all_examples": False,
    "doc_module": ("sklearn_pdp",),
    "backreferences_dir": "generated",
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
}

myst_heading_anchors = 2
