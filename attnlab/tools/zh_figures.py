"""Are the committed Chinese figures (``figures/zh/``) current, and do they speak Chinese?

``attnlab figures --lang zh`` writes, in each entry of ``figures/zh/manifest.json``,
the catalogue strings the figure was drawn with (``"strings"``: ``[message, shown]``
or ``[singular, plural, n, shown]``) and every text drawn in it (``"texts"``).
:func:`stale_strings` looks each message up again in the current catalogue: a
figure whose strings the catalogue now shows differently was drawn from older
strings and must be drawn again (``attnlab figures --lang zh --only NAME``).
:func:`english_words` lists the English words a figure's texts hold, other than
model names, code identifiers, units and the names the glossary keeps in English.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from attnlab.core.language import _, ngettext, speaking

#: English the glossary (docs/glossary.zh-CN.md) keeps in a Chinese figure: names of people, methods,
#: architectures and functions, and the words it does not translate (token, bootstrap, rollout)
KEPT_ENGLISH = frozenset({
    "token", "bootstrap", "rollout", "softmax", "LayerNorm", "LSTM", "Transformer", "BERT", "ELMo",
    "Spearman", "spearman", "Mohebbi", "Vaswani", "MDS", "JS", "cos", "var", "sqrt", "CLS", "SEP", "Colab",
})
#: units a figure may print after a number
UNITS = frozenset({"ms", "MB", "GB", "KB", "s"})
_MODEL = re.compile(r"[\w.-]*(?:bert|BERT|MiniLM|e5|gpt|GPT)[\w.-]*")
_CODE = re.compile(r"\$[^$]*\$|`[^`]*`|\[[A-Z]+\]|\b\d\d_[a-z_]+\b|[A-Za-z_][\w.]*(?:\([^()]*\)|_[\w.]*|\d[\w.]*)"
                   r"|\b[A-Za-z]\b")
_WORD = re.compile(r"[A-Za-z]{2,}")


def read_manifest(folder: str | Path) -> list[dict]:
    """The entries of ``folder/manifest.json`` (one per figure file)."""
    return json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))


def stale_strings(entry: dict) -> list[str]:
    """The messages of one manifest ``entry`` that the current Chinese catalogue shows differently
    from the figure's strings; ``["<no strings recorded>"]`` for an entry drawn before strings were kept."""
    if "strings" not in entry:
        return ["<no strings recorded>"]
    with speaking("zh"):
        return [row[0] for row in entry["strings"] if _shown_now(row[:-1]) != row[-1]]


def _shown_now(lookup: list) -> str:
    return _(lookup[0]) if len(lookup) == 1 else ngettext(lookup[0], lookup[1], int(lookup[2]))


def english_words(texts: list[str]) -> list[str]:
    """The English words in a figure's ``texts`` that a Chinese figure should not show."""
    out = []
    for text in texts:
        plain = _CODE.sub(" ", _MODEL.sub(" ", text))
        out += [w for w in _WORD.findall(plain) if w not in KEPT_ENGLISH and w not in UNITS]
    return out
