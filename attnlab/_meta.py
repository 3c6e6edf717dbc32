"""Where the course lives. The repository slug is kept here and nowhere else:
``scripts/nb.py sync`` writes it into every notebook's Colab cell, and a test
checks that the README's badges use it."""

REPO = "attnlab/attnlab"
BRANCH = "main"
GIT_URL = f"https://github.com/{REPO}"


def colab_url(notebook: str) -> str:
    return f"https://colab.research.google.com/github/{REPO}/blob/{BRANCH}/notebooks/{notebook}"


def binder_url(notebook: str) -> str:
    return f"https://mybinder.org/v2/gh/{REPO}/{BRANCH}?urlpath=lab/tree/notebooks/{notebook}"
