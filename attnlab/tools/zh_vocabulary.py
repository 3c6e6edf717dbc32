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
    """A discouraged way of writing an idea, the word the edition uses, and why.

    ``by_hand``: the variant is found but :func:`fix` leaves it, because the right rewrite depends on
    the sentence (a mechanical one wrote "维度更高（低）的" into shapes and intervals)."""

    pattern: str
    use: str
    reason: str
    by_hand: bool = False


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
    Variant(r"分界线|此线|(?<=[它其])的线|给出的线|(?<=[高低]于)(?:这|那)?线", "阈值",
            "threshold: 阈值 (分界线 / 此线 / 它的线 name a line that no figure draws)", by_hand=True),
    Variant(r"(?<=[\w）)\]}]) x (?=[\w（(\[{])", " × ",
            "a product of sizes takes ×, not the letter x (between any words, numbers or placeholders)"),
    Variant(r"(?<=）)x (?=第)", "× ", "a product of sizes takes ×, not the letter x"),
    Variant(r"示例查询(?![句向行])", "示例查询句", "the example input text is a 查询句"),
    Variant(r"条查询(?![句向行])", "条查询句",
            "an input text is a 查询句; 查询 alone is the query vector of attention"),
    Variant(r"(?:(?<=一批)|(?<=这些)|(?<=那些)|(?<=[\d}] 个))查询(?![句向行键值]| ?token)", "查询句",
            "input texts, counted or gathered, are 查询句; 查询 alone is the query vector of attention"),
    Variant(r"(?<=[\d}] )个查询句", "条查询句", "the measure word of 查询句 is 条"),
    Variant(r"(?<=对)(\**)查询(?=\**(?:重抽样|取|做|分片))", r"\1查询句",
            "resampling or averaging over input texts: 对查询句重抽样 / 取平均"),
    Variant(r"(?:(?<=大量)|(?<=等长)|(?<=其他)|(?<=内置)|(?<=配对)|(?<=多样的)|(?<=生成的)|(?<=长度的)|(?<=留出的)"
            r"|(?<=保留下来的)|(?<=排序的)|(?<=真实)|(?<=挑选)|(?<=抽取)|(?<=处理的)|(?<=同一批)|(?<=中文))"
            r"查询(?![句向行键值投]| ?token)",
            "查询句", "input texts are 查询句 (大量查询句, 等长查询句, 其他查询句); 查询 alone is attention's query"),
    Variant(r"查询(?=分片|噪声|的噪声|类别|生成器|数(?!据))|(?<=多)查询(?=平均)", "查询句",
            "the shards, noise, families and count of input texts are those of 查询句"),
    Variant(r"(?<=[\d}] 条)输入", "查询句", "input texts, counted, are 查询句"),
    # threshold: 阈值, never a line to cross
    Variant(r"越过一条[^，。；]{0,12}?线|[这那一两三四某]条线|所划的(?:那条)?线|过线|线移动", "阈值",
            "threshold: 阈值 (a line to cross is a calque of draw the line; 竖线 / 对角线 / 连线 stay)"),
    # dimension: 维度, never wide / narrow heads
    Variant(r"更宽的?(?=头)|头宽|宽的头|一个宽的|头[更太越]?窄|[更越]窄的?头|窄的头|头就越窄|头是窄的",
            "每头维度", "dimension: a head has more or fewer dimensions, it is not wide or narrow", by_hand=True),
    Variant(r"固定(?:每个)?头的?(?:大小|维度)|固定每头大小|每头维度固定", "固定每头维度",
            "design B has one name: 固定每头维度"),
    Variant(r"弱学习器", "弱分类器", "weak learner: the article says 弱分类器"),
    Variant(r"互相顶替|互相替补|互相补位|补位", "彼此顶替", "heads covering for each other: 彼此顶替"),
    Variant(r"(?:(?<=落到)|(?<=落在)|(?<=关注))自身|自身(?=份额)|^自身$", "自己",
            "the label self: 自己 / 前一个 / 后一个, as the glossary writes it"),
    Variant(r"上一个(?= ?token)|^上一个$", "前一个", "the label previous: 前一个"),
    Variant(r"下一个(?= ?token)|^下一个$", "后一个", "the label next: 后一个"),
    Variant(r"(?:(?<=占全部头的)|(?<=所占))份额", "比例",
            "份额 is attention mass (a row's weight on something); a share of heads is 比例 / 占比"),
    Variant(r"真实影响|基准真值", "参照", "reference (lesson 13): 参照; no reference is a ground truth"),
    Variant(r"注意力权重(?:没有|不会)告诉你的事", "注意力权重不能告诉你的事", "lesson 13 has one title"),
    Variant(r"(?:(?<=五种)|(?<=所有)|(?<=哪种))(?:看法|说法)|看法之间", "视角",
            "a view of attention (lesson 13): 视角"),
    Variant(r"冒烟运行", "smoke 模式运行", "a smoke run: smoke 模式运行"),
    Variant(r"冒烟模式|冒烟", "smoke 模式", "smoke mode: the glossary keeps smoke (the name of the switch ATTNLAB_SMOKE)"),
    Variant(r"内容质量|(?<=内容)(?:权重)?质量", "内容份额", "attention mass on content keys is 份额, as every other mass"),
    Variant(r"敏感性表", "敏感度表", "sensitivity table: 敏感度表"),
    Variant(r"记分表", "计分板", "scoreboard: 计分板"),
    Variant(r"清零", "置零", "zeroing: 置零, as in lesson 07's interventions"),
    Variant(r"前向传播", "前向计算", "forward pass: 前向计算 (backward pass: 反向传播)"),
    Variant(r"重组", "重新分组", "regrouping (lesson 10): 重新分组"),
    Variant(r"(?<=其他)片段|词表片段", "子词", "word piece: 子词, not 片段"),
    Variant(r"\bnats\b", "奈特", "the unit of entropy: 奈特 (the glossary gives nats once, in brackets)"),
    Variant(r"分散程度", "离散程度", "spread: 离散程度 (lesson 09's dispersion: 离散度)"),
    Variant(r"孪生(?:模型|网络)?", "未训练对照模型",
            "untrained twin: 孪生模型 reads as a Siamese network (孪生网络); the twin is a control, 未训练对照模型"),
    Variant(r"下限", "最小差距", "下限 meant both the floor (最小差距) and an interval's lower end (下端); "
            "each has its own word, rewritten by the sentence's meaning", by_hand=True),
    Variant(r"钩子", "hook", "hook: the glossary keeps hook (前向 hook)"),
    Variant(r"注意力展开", "注意力 rollout", "attention rollout: the glossary keeps rollout"),
    Variant(r"整个模型一起敲除", "全模型敲除", "whole-model knockout: 全模型敲除"),
    Variant(r"句子向量", "句向量", "sentence vector: 句向量"),
    Variant(r"隐藏状态", "隐状态", "hidden state: 隐状态, the article's word"),
    Variant(r"汇聚现象", "汇点现象", "sink: 汇点 (注意力汇聚 is attention pooling)"),
    Variant(r"折半", "对半分", "split half: 对半分"),
    Variant(r"英文查询(?![句向行键值投]| ?token)", "英文查询句", "an input text is a 查询句"),
    Variant(r"完整参照", "完整参考结果", "the course's saved results are 参考结果 (lesson 12); 参照 is lesson 13's reference"),
    Variant(r"(?<=[\u4e00-\u9fff]) (?=值置零)", "", "value zeroing is one word, 值置零, with no space before it"),
    Variant(r"(?<![`\w{.-])(?:query|key|value)s?(?= ?(?:token|向量|[和、，。；]))", "查询 / 键 / 值",
            "query / key / value in Chinese prose are 查询 / 键 / 值 (code in backticks stays)"),
    Variant(r"「", "“", "one quotation-mark style: “” as d2l-zh"),
    Variant(r"」", "”", "one quotation-mark style: “” as d2l-zh"),
    Variant(r"\+-(?=\s*[\d{])", "±", "plus-minus takes ±"),
    Variant(r"(?<![{\\A-Za-z_`])rho(?![}A-Za-z_`:!])", "ρ", "Greek letters as letters in Chinese text: ρ"),
    Variant(r"(?<![{\\A-Za-z_`])alpha(?![}A-Za-z_`:!])", "α", "Greek letters as letters in Chinese text: α"),
)

#: pairs of opposites that a bracket must not offer as an alternative reading ("更高（低）", "增加（或减少）")
OPPOSITES: tuple[tuple[str, str], ...] = (
    ("高", "低"), ("多", "少"), ("大", "小"), ("宽", "窄"), ("长", "短"), ("强", "弱"), ("快", "慢"),
    ("深", "浅"), ("早", "晚"), ("前", "后"), ("上", "下"), ("左", "右"), ("正", "负"), ("增", "减"),
    ("增加", "减少"), ("上升", "下降"), ("变大", "变小"), ("提高", "降低"), ("成立", "不成立"),
)
_ALTERNATION = re.compile("|".join(
    f"{re.escape(a)}（(?:或者?)?更?{re.escape(b)}）" for x, y in OPPOSITES for a, b in ((x, y), (y, x))))

_COMPILED = [(re.compile(v.pattern, re.M), v) for v in DISCOURAGED]
_CJK = re.compile("[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")  # Chinese characters and punctuation
_BREAK = re.compile(r"(?<=\S)[ \t]*\n[ \t]*(?=\S)")  # a line break inside a paragraph


def whole(text: str) -> tuple[str, list[int]]:
    """``text`` as a reader reads it: the lines of a paragraph joined (a break between two Chinese
    characters disappears, any other becomes one space; blank lines stay), and for each character
    of the result the line of ``text`` it came from."""
    joined, lines, line, last = [], [], 1, 0
    for m in _BREAK.finditer(text):
        piece = text[last:m.start()]
        joined.append(piece)
        lines += [line + k for k, chunk in enumerate(piece.split("\n")) for _ in chunk + "\n"][:len(piece)]
        line += piece.count("\n") + 1
        gap = "" if _CJK.match(text[m.start() - 1]) and _CJK.match(text[m.end()]) else " "
        joined.append(gap)
        lines += [line] * len(gap)
        last = m.end()
    piece = text[last:]
    joined.append(piece)
    lines += [line + k for k, chunk in enumerate(piece.split("\n")) for _ in chunk + "\n"][:len(piece)]
    return "".join(joined), lines


def found_in(text: str) -> list[tuple[int, str, Variant]]:
    """``(line number, the variant as written, its entry)`` for each discouraged variant in ``text``,
    read whole: a variant split across a line break inside a paragraph is found too."""
    read, lines = whole(text)
    out = []
    for pattern, variant in _COMPILED:
        out += [(lines[m.start()] if m.start() < len(lines) else 1, m.group(0), variant) for m in pattern.finditer(read)]
    return sorted(out, key=lambda f: f[0])


def alternations(text: str) -> list[tuple[int, str]]:
    """``(line number, as written)`` for each bracketed alternation of opposites in ``text``
    ("维度更高（低）的"): a reader cannot tell which reading is meant; write the sentence that means one."""
    read, lines = whole(text)
    return [(lines[m.start()], m.group(0)) for m in _ALTERNATION.finditer(read)]


def fix(text: str) -> str:
    """``text`` with every discouraged variant that has a mechanical rewrite replaced by the edition's
    word (in the order of :data:`DISCOURAGED`, longer phrases first); ``by_hand`` variants stay for
    a person to rewrite."""
    for pattern, variant in _COMPILED:
        if not variant.by_hand:
            text = pattern.sub(variant.use, text)
    return text
