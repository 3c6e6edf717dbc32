"""One word per idea in the Chinese edition: the variants it does not use, and what it uses instead.

``docs/glossary.zh-CN.md`` gives the reasons in prose; :data:`DISCOURAGED`
holds the same decisions as data, so a test can find a stray variant in the
Chinese notebooks, the catalogue, ``README.zh-CN.md`` and the teacher's guide,
and :func:`fix` can rewrite it. Each entry is a regular expression for the
variant, its replacement (``re.sub`` syntax) and the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """A discouraged way of writing an idea, the word the edition uses, and why."""

    pattern: str
    use: str
    reason: str


DISCOURAGED: tuple[Variant, ...] = (
    Variant(r"(?:注意力|关注)?汇聚点|注意力汇聚(?!（attention pooling）)", "汇点",
            "sink: d2l-zh uses 注意力汇聚 for attention pooling, a different idea"),
    Variant(r"位置编码", "位置嵌入", "BERT learns its position embeddings; the source article says 位置嵌入"),
    Variant(r"判定", "判断", "verdict: one word for the three outcomes 成立 / 不成立 / 无法判断"),
    Variant(r"判分器", "检查程序", "checker: it computes the right answer, it gives no marks"),
    Variant(r"先修课程", "预备知识", "prerequisites are pieces of knowledge, not courses"),
    Variant(r"(?<!注意力)平均图", "平均注意力图", "mean map: always say what is averaged"),
    Variant(r"记分板", "计分板", "scoreboard: the standard 计分板"),
    Variant(r"value ?清零", "值置零", "value zeroing: 值 as in 查询 / 键 / 值, 置零 as in the other interventions"),
    Variant(r"(五种|哪种|各|每种|几种|这些)视图", r"\1视角",
            "view of attention (lesson 13): 视角; 视图 stays for the bertviz-style head and model views"),
    Variant(r"训练目标", "目标函数", "objective: the standard 目标函数"),
    Variant(r"竖条", "竖线", "vertical stripe: the pattern is named 竖线 everywhere"),
    Variant(r"词片", "子词", "word piece: the standard 子词"),
    Variant(r"固定总宽度|固定宽度", "固定总维度", "dimension, not width (lesson 10's design A)"),
    Variant(r"固定头宽|固定每个头的宽度", "固定每头维度", "dimension, not width (lesson 10's design B)"),
    Variant(r"更少、更宽的", "更少、维度更高的", "dimension, not width"),
    Variant(r"向量很宽", "向量维度很高", "dimension, not width"),
    Variant(r"很宽的向量", "维度很高的向量", "dimension, not width"),
    Variant(r"一个宽的投影", "一个高维的投影", "dimension, not width"),
    Variant(r"头宽度|头的宽度", "头的维度", "dimension, not width"),
    Variant(r"宽度", "维度", "dimension: 维度 / 隐藏维度 / 每个头的维度, as d2l-zh writes"),
    Variant(r"一袋 ?token", "一堆没有顺序的 token", "bag of tokens: say what it means, not a calque"),
    Variant(r"线划在哪里?|划了线|划线", "阈值定在哪里", "threshold: 阈值, not 线"),
    Variant(r"(?<=[\w）)\]]) x (?=[\w（(\[])", " × ", "a product of sizes takes ×, not the letter x"),
    Variant(r"(?<=）)x (?=第)", "× ", "a product of sizes takes ×, not the letter x"),
    Variant(r"示例查询(?![句向行])", "示例查询句", "the example input text is a 查询句"),
    Variant(r"条查询(?![句向行])", "条查询句",
            "an input text is a 查询句; 查询 alone is the query vector of attention"),
)

_COMPILED = [(re.compile(v.pattern), v) for v in DISCOURAGED]


def found_in(text: str) -> list[tuple[int, str, Variant]]:
    """``(line number, the variant as written, its entry)`` for each discouraged variant in ``text``."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, variant in _COMPILED:
            out += [(number, m.group(0), variant) for m in pattern.finditer(line)]
    return out


def fix(text: str) -> str:
    """``text`` with every discouraged variant replaced by the edition's word (in the order of
    :data:`DISCOURAGED`, longer phrases first)."""
    for pattern, variant in _COMPILED:
        text = pattern.sub(variant.use, text)
    return text
