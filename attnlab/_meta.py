"""Where the course lives and which version this is: kept here and nowhere else.

``VERSION`` names a release: its git tag is ``TAG`` (``v`` + the version). Every
notebook's Colab set-up cell installs the course at that tag, and every Colab and
Binder badge (in the notebooks and both READMEs) opens that tag, so a student
runs the lessons with the package they were written for. ``python scripts/nb.py
sync`` writes these into every notebook and README; ``python scripts/nb.py
check`` (and a test) fails when one is stale.

A teacher who forks the course changes ``REPO`` to the fork's ``owner/name``,
runs ``python scripts/nb.py sync``, commits, runs ``python scripts/release.py``
(it checks that the version, the cells, the badges and lesson 12's download
agree, and creates the tag ``TAG``), and pushes the tag
(``git push origin v0.2.0``); see docs/install.md.
"""

VERSION = "0.2.0"
TAG = f"v{VERSION}"
REPO = "attnlab/attnlab"
GIT_URL = f"https://github.com/{REPO}"


def requirement(url: str = GIT_URL, tag: str = TAG) -> str:
    """What the Colab set-up cell installs: the course extra of this version, from git."""
    return f"attnlab[course] @ git+{url}@{tag}"


def _lesson_path(notebook: str, lang: str) -> str:
    return f"notebooks/zh/{notebook}" if lang == "zh" else f"notebooks/{notebook}"


def colab_url(notebook: str, lang: str = "en") -> str:
    """The Colab address of a lesson of this version (``lang`` ``"zh"``: the Chinese edition)."""
    return f"https://colab.research.google.com/github/{REPO}/blob/{TAG}/{_lesson_path(notebook, lang)}"


def binder_url(notebook: str, lang: str = "en") -> str:
    """The Binder address of a lesson of this version, opened in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{REPO}/{TAG}?urlpath=lab/tree/{_lesson_path(notebook, lang)}"
