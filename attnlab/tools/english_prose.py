"""Find English prose in what a Chinese lesson shows its reader.

A line holds English prose when it has a run of at least :data:`RUN` English
words in a row: words of letters only, separated by nothing but spaces and
light punctuation (``, ; : ! ? ( )``), e.g. ``Check: rows sum to 1: passed``
(``Check rows sum to``). The lesson tests read with three words in a row; the
full-mode check (``scripts/zh_output_check.py``) reads with two (``run=2``), as
issue 54 states it: "no line with two or more English words". What is not prose:

* mathematics: a one-letter word other than ``a`` and ``I`` is a variable
  (``n x n``, ``n < d``), and it ends a run;
* code and data: a word touching a digit, ``_``, ``.``, ``=``, a quote or a
  bracket is part of an identifier, a number, a token string or a value
  (``al.set_language``, ``'the'``, ``[CLS]``, ``layer=0``, ``e5``); text in
  backticks, a tuple of names (``(layer, head)``) and a slice (``start:stop``)
  are code (:data:`CODE`);
* what the course keeps in English on purpose, the phrases of :data:`ALLOWED`,
  each with its reason (model names, paper titles, the English terms the
  glossary keeps, such as ``smoke``).

Chinese characters end a run, so a Chinese sentence with one English term in
it (``bootstrap 区间``) is not prose.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

#: how many English words in a row make prose
RUN = 3


@dataclass(frozen=True)
class Allowed:
    """A phrase the Chinese edition shows in English on purpose (a regular expression), and why."""

    pattern: str
    reason: str


ALLOWED: tuple[Allowed, ...] = (
    Allowed(r"Attention Is All You Need", "paper title (Vaswani et al. 2017), cited as published"),
    Allowed(r"Are Sixteen Heads Really Better than One\??", "paper title (Michel et al. 2019)"),
    Allowed(r"What Does BERT Look [Aa]t\??", "paper title (Clark et al. 2019)"),
    Allowed(r"Attention is not (?:not )?Explanation", "paper titles (Jain & Wallace 2019; Wiegreffe & Pinter 2019)"),
    Allowed(r"Analyzing Multi-Head Self-Attention[^。，]*", "paper title (Voita et al. 2019)"),
    Allowed(r"Quantifying Attention Flow in Transformers", "paper title (Abnar & Zuidema 2020)"),
    Allowed(r"Attention is Not Only a Weight[^。，]*", "paper title (Kobayashi et al. 2020)"),
    Allowed(r"Efficient Streaming Language Models with Attention Sinks", "paper title (Xiao et al. 2023)"),
    Allowed(r"all-MiniLM-L6-v2(?: \(bundled\))?", "model name, as the model hub spells it"),
    Allowed(r"\bself +prev(?:ious)? +next\b", "column names of head statistics (the labels self/previous/next), "
            "kept in English as the glossary keeps label names"),
    Allowed(r"Noto (?:Sans|Serif) CJK \w+|Source Han (?:Sans|Serif)(?: \w+)?|WenQuanYi (?:Micro|Zen) Hei"
            r"|Microsoft YaHei|PingFang SC", "the family name of a CJK font, as the system names it"),
    Allowed(r"\bpositional +special\b", "column names of lesson 05's threshold table: the keyword arguments "
            "positional= and special= the lesson's text names"),
    Allowed(r"\bTransformer (?:base|big)\b", "the names of Vaswani et al.'s (2017) two models, as Table 3 "
            "names them"),
    Allowed(r"\b(?:Bi)?LSTM\b", "the name of a model (long short-term memory), as the literature writes it"),
    Allowed(r"Jensen-Shannon", "a name; the glossary keeps it (Jensen-Shannon 散度)"),
    Allowed(r"随机 token 串“[^”]*”", "lesson 08's control: strings of random vocabulary tokens, printed as "
            "drawn (token strings, not prose)"),
)

#: code inside a line of text: a span in backticks, a tuple of names, a slice
CODE = re.compile(r"`[^`\n]*`|\((?:[a-z_][a-z0-9_]*, )+[a-z_][a-z0-9_]*\)|\b[a-z_]\w*:[a-z_]\w*\b")

_ALLOWED = re.compile("|".join(f"(?:{a.pattern})" for a in ALLOWED))
_WORD = re.compile(r"[A-Za-z]{2,}(?:['’-][A-Za-z]+)*|[A-Za-z]")
_GAP = re.compile(r"[ \t,;:!?()]*\Z")  # what may stand between two words of one run
_CODE_BEFORE = re.compile(r"[A-Za-z0-9_.=/\\'\"`\[{<@#$%-]\Z")
_CODE_AFTER = re.compile(r"\A(?:[0-9_=/\\'\"`\[{<(]|[.-][A-Za-z0-9])")
_TAGS = re.compile(r"<(script|style)\b.*?</\1>|<[^>]*>", re.S | re.I)


def _masked(line: str) -> str:
    """``line`` with the allowed phrases and the code (:data:`CODE`) replaced by a mark that ends a run."""
    return CODE.sub("丨", _ALLOWED.sub("丨", line))


def words(line: str) -> list[tuple[int, int]]:
    """Spans of the English words of ``line`` that are prose words, not code or data, once the
    allowed phrases and the code are taken out (spans into :func:`_masked`'s text)."""
    line = _masked(line)
    spans = []
    for m in _WORD.finditer(line):
        before, after = line[max(0, m.start() - 1): m.start()], line[m.end(): m.end() + 2]
        if len(m.group()) == 1 and m.group() not in "aAI":
            continue  # a one-letter word is a variable (n x n, n < d), not prose
        if _CODE_BEFORE.search(before) or _CODE_AFTER.search(after):
            continue
        spans.append((m.start(), m.end()))
    return spans


def runs(line: str, run: int = RUN) -> list[str]:
    """The runs of ``run`` or more prose words in a row in ``line`` (each as it is written)."""
    cleaned = _masked(line)
    out, current = [], []
    for start, end in words(line):
        if current and not _GAP.match(cleaned[current[-1][1]: start]):
            if len(current) >= run:
                out.append(cleaned[current[0][0]: current[-1][1]])
            current = []
        current.append((start, end))
    if len(current) >= run:
        out.append(cleaned[current[0][0]: current[-1][1]])
    return out


def is_prose(line: str, run: int = RUN) -> bool:
    """True when ``line`` holds English prose (a run of ``run`` prose words)."""
    return bool(runs(line, run))


def prose_lines(text: str, run: int = RUN) -> list[str]:
    """The lines of ``text`` that hold English prose."""
    return [line for line in text.splitlines() if is_prose(line, run)]


def visible_text(html_text: str) -> str:
    """The text an HTML output shows (scripts, styles and tags taken out, entities decoded)."""
    return html.unescape(_TAGS.sub(" ", html_text))
