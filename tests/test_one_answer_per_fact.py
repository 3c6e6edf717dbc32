"""One answer per fact: every statement the READMEs and the guides make of a fact they once stated twice agrees
with that fact's one source (attnlab/core/numbers.json, the full reference, the lessons, the code).

Each fact is found by the ways the documents state it (English and Chinese), with the generated spans' markers
taken out so that a span counts as a statement too. A planted contradicting copy in a document of its own fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from attnlab.core import door, measured, models, multilingual
from attnlab.course.claims.pruning import TOLERANCE_SHARES
from attnlab.tools import course_numbers
from attnlab.tools.doc_facts import render_fact

ROOT = Path(__file__).resolve().parents[1]
#: "one" .. "six" as the lessons and the guides write a count
COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5,
               "六": 6}


def documents(root: Path = ROOT) -> dict[Path, str]:
    """Every README and guide, with its language: ``zh`` for the ``*.zh-CN.md`` editions."""
    paths = sorted(root.glob("README*.md")) + sorted((root / "docs").glob("*.md"))
    return {p: "zh" if p.name.endswith(".zh-CN.md") else "en" for p in paths}


def read_as_shown(path: Path) -> str:
    """The document as a reader sees it: the generated spans' markers out, their text kept."""
    text = re.sub(r"^<!-- /?numbers(?::[a-z_]+)? -->\n", "", path.read_text(encoding="utf-8"), flags=re.M)  # blocks
    return re.sub(r"<!-- /?numbers(?::[a-z_0-9.\-]+)? -->", "", text)  # inline spans


def sentences(text: str, lang: str) -> list[str]:
    """``text`` in sentences, a sentence's lines joined (a table row is a sentence of its own)."""
    flat = re.sub(r"(?<!\|)\n(?!\s*\|)", " ", text)
    ends = r"(?<=[.;:])\s+(?=[A-Z*(`\"-])|\n" if lang == "en" else r"(?<=[。；])|\n"
    return [s for s in re.split(ends, flat) if s.strip()]


def lesson_section(text: str, lesson: str) -> str:
    """A guide's section of lesson ``lesson`` (``### NN · ...`` up to the next heading of its level or above)."""
    m = re.search(r"^### " + lesson + r" · .*?(?=^### |^## |\Z)", text, re.S | re.M)
    return m.group(0) if m else ""


@dataclass
class Fact:
    """A fact the documents state: how each language states it (a pattern with a group ``v``), and the one
    answer (a function of the numbers, the language and the match)."""

    name: str
    patterns: dict[str, list[str]]
    answer: Callable[[dict, str, re.Match], str]
    where: Callable[[str, str], str] = field(default=lambda text, lang: text)  # the part of a document read
    same: Callable[[str, str], bool] = field(default=lambda said, answer: said == answer)
    by_line: bool = False  # a statement on one line (a generated note), read line by line, not by sentence

    def disagreements(self, numbers: dict, text: str, lang: str) -> list[str]:
        """Every statement of this fact in ``text`` that is not the one answer."""
        found = []
        part = self.where(text, lang)
        pieces = part.splitlines() if self.by_line else sentences(part, lang)
        for pattern in self.patterns.get(lang, []):
            for sentence in pieces:
                for m in re.finditer(pattern, sentence):
                    answer = self.answer(numbers, lang, m)
                    if not self.same(m.group("v"), answer):
                        found.append(f"{self.name}: {m.group(0)!r} says {m.group('v')}, the source {answer}")
        return found


def _lesson_13(text: str, lang: str) -> str:
    return lesson_section(text, "13")


def _bert_row(numbers: dict, key: str, n: str) -> str:
    value = numbers["lessons"][n].get(key)
    return "-" if value is None else course_numbers._s(value, "en")


def _limits(name: str, kind: str = "estimate") -> Callable[[dict, str, re.Match], str]:
    return lambda numbers, lang, m: render_fact(f"{kind}.reference_facts.13.{name}", numbers, lang)


FACTS = [
    Fact("the first load's conversion time",
         {"en": [r"\b(?:conver(?:t|ts|ted|sion)|dequantis\w*)\b[^.]*?(?<![\d.,])(?P<v>\d+(?:\.\d+)?) s\b"],
          "zh": [r"(?:转换|还原|反量化)[^。]*?(?P<v>十几|\d+(?:\.\d+)?) ?秒"]},
         lambda numbers, lang, m: str(numbers["conversion"]["seconds_s"])),
    Fact("lesson 11's peak on bert-base-chinese's shape before the memory changes",
         {"en": [r"[Ll]esson 11 on that shape went from (?P<v>[\d,]+) MB",
                 r"\*\*Lesson 11\s+[\d,]+ s\*\* \(peak (?P<v>[\d,]+) MB"],
          "zh": [r"第 11 课在这个形状上从 (?P<v>[\d,]+) MB"]},
         lambda numbers, lang, m: f"{numbers['lessons']['11']['bert_base_shape_full_peak_mb']:,}"),
    Fact("a lesson's time on bert-base-chinese's shape, quiet full run",
         {"en": [r"\*\*Lesson (?P<n>\d\d)\s+(?P<v>[\d,]+) s\*\*",
                 r"^\| (?P<n>\d\d) \| \d+ min \|(?:[^|\n]*\|){4} (?P<v>[^|\n]*) \|$"],
          "zh": [r"^\| (?P<n>\d\d) \| \d+ 分钟 \|(?:[^|\n]*\|){4} (?P<v>[^|\n]*) \|$"]},
         lambda numbers, lang, m: _bert_row(numbers, "bert_base_shape_full_s", m.group("n"))),
    Fact("a lesson's time in the peaks table (after the memory changes, beside another run)",
         {lang: [r"^\| (?P<n>\d\d) \| [\d,]+ \| [\d.,]+ \| [\d,]+ \| (?P<v>[\d.,]+) \|$"] for lang in ("en", "zh")},
         lambda numbers, lang, m: _bert_row(numbers, "bert_base_shape_peaks_s", m.group("n"))),
    Fact("the whole course on bert-base-chinese's shape, quiet full run",
         {"en": [r"[Ii]n all,? about (?P<v>\d+) minutes", r"\| all 14 \|(?:[^|\n]*\|){5} about (?P<v>\d+) min \|"],
          "zh": [r"\| 14 课合计 \|(?:[^|\n]*\|){5} 约 (?P<v>\d+) 分钟 \|"]},
         lambda numbers, lang, m: str(numbers["door"]["course_minutes_on_cpu"]["bert-base-chinese"])),
    Fact("the peaks table's seconds in all on bert-base-chinese's shape",
         {"en": [r"bert-base-chinese shape: highest [^|\n]*?, (?P<v>\d+) minutes in all"],
          "zh": [r"bert-base-chinese 形状：最高[^|\n]*?共 (?P<v>\d+) 分钟"]},
         lambda numbers, lang, m: f"{numbers['course']['bert_base_shape_peaks_total_s'] / 60:.0f}", by_line=True),
    Fact("lesson 13: raw attention's rank correlation with leaving a token out",
         {"en": [r"raw attention (?:ρ |rho )?(?P<v>-?\d\.\d+)"], "zh": [r"原始注意力 ?(?:ρ )?(?P<v>-?\d\.\d+)"]},
         _limits("raw_rho"), where=_lesson_13),
    Fact("lesson 13: the heads replaced by their mean maps together",
         {"en": [r"(?P<v>[\d/.]+|two thirds) \[[\d/., ]+\]\s+of the (?:144 )?heads"],
          "zh": [r"(?P<v>三分之二|[\d/.]+) \[[\d/., ]+\] ?(?:的头|可以换掉)"]},
         _limits("together"), where=_lesson_13),
    Fact("lesson 13: the tolerance of heads replaced together",
         {"en": [r"tolerance \([^)]*?(?P<v>0\.\d{3,})"], "zh": [r"容差\s*（[^）]*?(?P<v>0\.\d{3,})"]},
         _limits("tolerance", "small"), where=_lesson_13),
    Fact("the tolerance as a share of the distance between two texts",
         {"en": [r"(?P<v>\d+)% of the (?:\(root-mean-square\) )?(?:between-text )?distance"],
          "zh": [r"距离的 ?\**(?P<v>\d+)%"]},
         # a share of the mean 1 - cos (the tolerance's grid) is never a share of the distance: sqrt(share) is
         lambda numbers, lang, m: "not one of " + ", ".join(f"{round(100 * s)}%" for s in TOLERANCE_SHARES),
         same=lambda said, answer: float(said) / 100 not in TOLERANCE_SHARES),
    Fact("lesson 11: the split-half stability of the sentence ranking",
         {"en": [r"split-half\s+Spearman: sentence (?P<v>-?\d\.\d+)"],
          "zh": [r"对半分 Spearman：句子 (?P<v>-?\d\.\d+)"]},
         lambda numbers, lang, m: render_fact("estimate3.reference_facts.11.split_half.sentence", numbers, lang),
         where=lambda text, lang: lesson_section(text, "11")),
    Fact("the memory Binder gives a session",
         {"en": [r"Binder(?:'s)?[^.\n]{0,60}?(?<![\d.,])(?P<v>\d(?:[-–]\d)?) GB",
                 r"(?P<v>\d(?:[-–]\d)?) GB Binder"],
          "zh": [r"Binder[^。\n]{0,30}?(?<![\d.,])(?P<v>\d(?:[-–]\d| 到 \d)?) ?GB"]},
         lambda numbers, lang, m: str(numbers["binder_gb"])),
    Fact("the twin report's minutes",
         {"en": [r"full-size report took (?P<v>[\d.,]+) minutes"]},
         lambda numbers, lang, m: f"{numbers['reports']['multilingual-e5-small']['seconds'] / 60:.1f}"),
]


def notebook_markdown(name: str) -> str:
    """The markdown cells of an English lesson, joined."""
    nb = json.loads(next((ROOT / "notebooks").glob(f"{name}_*.ipynb")).read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def references_in_lesson_13() -> int:
    """How many references lesson 13's scoreboard holds its views against, as the lesson says it."""
    m = re.search(r"\b(\w+) \*\*references\*\*", notebook_markdown("13"))
    assert m is not None, "lesson 13 no longer says how many references its scoreboard has"
    return COUNT_WORDS[m.group(1)]


def wordings(text: str, lang: str) -> list[str]:
    """Statements that give a second answer in words: how ``auto`` chooses on Colab, where lesson 12's earlier
    results come from on Colab, lesson 11's tolerance, lesson 13's references, lesson 02's checks."""
    found = []
    for sentence in sentences(text, lang):
        runtime = "GPU" in sentence or "CPU" in sentence  # Colab's runtime decides what auto takes
        if "Colab" in sentence and "auto" in sentence and "bert-base-chinese" in sentence and not runtime:
            found.append(f"Colab's model: {sentence.strip()!r} (on a CPU runtime auto takes multilingual-e5-small)")
        twelve = "lesson 12" in sentence if lang == "en" else "第 12 课" in sentence
        if twelve and ("Drive" in sentence or "云端硬盘" in sentence):
            found.append(f"lesson 12 on Colab: {sentence.strip()!r} (the work zip brings the results, not Drive)")
    pruning = lesson_section(text, "11")
    for bad in (r"absolute tolerance\s+such as", r"within 0\.01\b", r"绝对容差来表述", r"0\.01\s*以内"):
        for m in re.finditer(bad, pruning):
            found.append(f"lesson 11's tolerance: {m.group(0)!r} (the lesson argues against an absolute tolerance)")
    count = references_in_lesson_13()
    pattern = (r"\b(?P<v>two|three|four|five|six) (?:ground truths|references)\b" if lang == "en"
               else r"(?<!多了)(?P<v>[两二三四五六])种“?参照")
    for m in re.finditer(pattern, lesson_section(text, "13"), re.I):
        if COUNT_WORDS[m.group("v").lower()] != count:
            found.append(f"lesson 13's references: {m.group(0)!r} (the lesson has {count})")
    for bullet in re.split(r"\n(?=- )", lesson_section(text, "02")):  # a bullet: what one run found
        random = re.search(r"random|var\(q·k\)|随机向量|q·k 的方差", bullet)
        verdict = re.search(r"\bholds\b" if lang == "en" else r"成立", bullet)
        if random and verdict:
            found.append(f"lesson 02's checks: {verdict.group(0)!r} in {bullet.strip()[:80]!r} (random vectors give "
                         "checks, not verdicts)")
    return found


def problems(numbers: dict, docs: dict[Path, str]) -> list[str]:
    """Every statement in ``docs`` (path -> language) that disagrees with its fact's one source."""
    found = []
    for path, lang in docs.items():
        text = read_as_shown(path)
        for fact in FACTS:
            found += [f"{path.name}: {d}" for d in fact.disagreements(numbers, text, lang)]
        found += [f"{path.name}: {d}" for d in wordings(text, lang)]
    return found


@pytest.fixture(scope="module")
def numbers():
    return json.loads(measured.NUMBERS_FILE.read_text(encoding="utf-8"))


def test_the_sources_say_what_the_guides_say(numbers, monkeypatch):
    """The sources themselves: on Colab's CPU runtime `auto` takes the offline default; lesson 12 brings the
    work zip back before it re-runs what is missing; lesson 02's random vectors give checks; lesson 11
    argues against an absolute tolerance; numbers.json holds the measured conversion."""
    monkeypatch.setattr(door, "which_door", lambda: door.COLAB)
    monkeypatch.setattr(door, "has_gpu", lambda: False)
    monkeypatch.setattr(multilingual, "is_available", lambda: True)
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setattr(models.class_setting, "current", lambda: None)
    assert models._choose_auto()[0] == models.MULTILINGUAL
    twelve = json.loads(next((ROOT / "notebooks").glob("12_*.ipynb")).read_text(encoding="utf-8"))
    assert any("bring_back_here()" in "".join(c["source"]) for c in twelve["cells"] if c["cell_type"] == "code")
    assert "**checks**" in notebook_markdown("02")
    assert "An absolute number such as 0.01 would mean little" in notebook_markdown("11")
    assert references_in_lesson_13() == 5
    assert numbers["conversion"]["seconds_s"] > 0 and numbers["binder_gb"] == measured.BINDER_GB


#: for each fact, a contradicting copy (language, sentence) that must fail
PLANTED = [
    ("en", "The first load converts the model once (about 99 s).", "conversion time"),
    ("zh", "第一次加载时转换一次模型（十几秒）。", "conversion time"),
    ("en", "Lesson 11 on that shape went from 2,233 MB to 1,554 MB.", "before the memory changes"),
    ("en", "**Lesson 11\n  2,182 s** (peak 2,132 MB).", "quiet full run"),
    ("en", "In all about 72 minutes (lessons 00-05 measured on a busy machine).", "whole course"),
    ("en", "bert-base-chinese shape: highest 1,626 MB (under the 1,800 MB target), busy, 2026-12-04, 42 minutes "
           "in all.", "peaks table's seconds"),
    ("en", "### 13 · Limits (50 min)\n\n- raw attention 0.73 [0.65, 0.80], and more.\n", "raw attention"),
    ("zh", "### 13 · 局限（50 分钟）\n\n- 三分之二 [2/3, 3/4] 的头可以一起换掉。\n", "together"),
    ("en", "### 13 · Limits (50 min)\n\n- 0.75 [0.58, 0.83] of the 144 heads stay within the tolerance "
           "(5% of the distance between two different texts, 0.0072).\n", "tolerance of heads replaced together"),
    ("en", "The tolerance is 5% of the distance between two texts.", "share of the distance"),
    ("zh", "### 11 · 剪枝（30 分钟）\n\n- 排序很稳定（对半分 Spearman：句子 0.978，token 0.958）。\n", "split-half"),
    ("zh", "Binder 会话大约只有 1 到 2 GB 内存。", "Binder"),
    ("en", "A Binder session has 1-2 GB of memory.", "Binder"),
    ("en", "the offline default's full-size report took 49.4 minutes with a peak of 1,860 MB.", "twin report"),
    ("en", "Colab can reach the model hub, so `load_model(\"auto\")` downloads `bert-base-chinese` on first use.",
     "Colab's model"),
    ("zh", "除非学生把结果保存到云端硬盘，否则第 12 课读不到前面各课的结果。", "lesson 12 on Colab"),
    ("en", "### 11 · Pruning (30 min)\n\nso \"almost no loss\" can be an absolute tolerance such as 0.01.\n",
     "lesson 11's tolerance"),
    ("en", "### 13 · Limits (50 min)\n\n- *The two ground truths.* Both are shown.\n", "lesson 13's references"),
    ("zh", "### 13 · 局限（50 分钟）\n\n和两种“参照”相比较。\n", "lesson 13's references"),
    ("en", "### 02 · Scaling (25 min)\n\n- On random vectors the variance matched d_k: holds.\n", "lesson 02's checks"),
    ("zh", "### 02 · 缩放（25 分钟）\n\n- *与模型无关的部分：* q·k 的方差都落在 d_k 的 10% 容差以内，判断为“成立”。\n",
     "lesson 02's checks"),
]


def test_one_answer_per_fact(numbers, tmp_path):
    """Every statement of each fact in the READMEs and docs/ agrees with its one source; a contradicting copy
    of each, planted in a document of its own (English or Chinese), fails."""
    assert problems(numbers, documents()) == []
    for i, (lang, sentence, fact) in enumerate(PLANTED):
        planted = tmp_path / (f"planted{i}.zh-CN.md" if lang == "zh" else f"planted{i}.md")
        planted.write_text(sentence + "\n", encoding="utf-8")
        found = problems(numbers, {planted: lang})
        assert any(fact in problem for problem in found), (sentence, found)
