"""A head taxonomy: one pattern label per head, decided by its statistics.

The labels are the pattern types of the literature (Clark et al. 2019,
Kovaleva et al. 2019, Voita et al. 2019):

``self``
    the diagonal: each token attends to itself.
``previous`` / ``next``
    a shifted diagonal: each token attends to its neighbour (positional heads).
``vertical``
    stripes down the [CLS] or [SEP] columns (or punctuation columns): every
    token looks at the same special token.
``block``
    in a sentence pair, tokens attend within their own sentence (needs pair
    inputs; Kovaleva et al.).
``broad``
    spread almost evenly over the whole text (bag-of-words averaging).
``heterogeneous``
    none of the above: the weights depend on which tokens are present. These
    are the heads that *can* carry lexical or syntactic structure.

The rule set (:func:`classify_heads`), applied to each head's
:class:`attnlab.analysis.head_stats.HeadStats`:

1. Fixed-pattern candidates. ``self``/``previous``/``next`` when that mass is
   at least ``positional`` (0.5), or when the row maximum sits at that offset
   in at least ``offset_share`` (0.9) of rows (Voita et al.'s criterion for
   positional heads). ``vertical`` when [CLS] + [SEP] mass, or punctuation
   mass, is at least ``special`` (0.6). Both thresholds are the ones Clark et
   al.'s analysis notebook used. When several candidates pass, the one
   furthest above its threshold (largest mass / threshold) wins.
2. ``block`` when pair inputs were seen and the mass on ordinary tokens of the
   query's own sentence is at least ``block`` (0.8). A head that spreads
   evenly over a pair puts about half its weight in each sentence, so 0.8
   means "clearly prefers its own sentence".
3. ``broad`` when the mean row entropy is at least ``broad`` (0.8) times the
   entropy of uniform rows over the same texts. Clark et al. called a head
   broad above 3.8 nats on inputs of up to 128 tokens, where uniform rows have
   ln 128 = 4.85 nats: 3.8 / 4.85 = 0.78. An absolute 3.8 nats can never be
   reached by the course's short queries (ln 8 = 2.1 for an 8-token query), so
   the threshold is kept as a *fraction of the uniform entropy*, rounded to 0.8.
4. ``heterogeneous`` otherwise.

Each head also gets a one-line reason quoting the statistic that decided it.

The figures are in :mod:`attnlab.viz.pattern_plots`; the article's claim that
most heads follow a fixed pattern is judged in
:mod:`attnlab.course.claims.head_patterns`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from attnlab.analysis.head_stats import HeadStats, HeadSums, format_table, stats_of_batches, text_sums
from attnlab.analysis.stats import correlation
from attnlab.core.checks import check_positive_int
from attnlab.core.config import pick
from attnlab.core.extract import iter_attention_batches
from attnlab.core.language import N_, _, filled_template, translated
from attnlab.core.memo import memo
from attnlab.core.models import LoadedModel
from attnlab.data import corpus

#: Label names in display order.
LABELS = ("self", "previous", "next", "vertical", "block", "broad", "heterogeneous")

#: Labels whose pattern is fixed by position or by special tokens, whatever the words.
FIXED = ("self", "previous", "next", "vertical")

# A head's reason is stored in English and shown through ``translated``, which finds these templates filled in.
MASS_REASONS = {"self_mass": N_("self mass {value} >= {threshold}"), "prev_mass": N_("prev mass {value} >= {threshold}"),
                "next_mass": N_("next mass {value} >= {threshold}")}
OFFSET_REASON = N_("row maximum at offset {offset} in {share} of rows >= {need} ({what} mass {value})")
SPECIAL_REASON = N_("first + last special token mass {mass} >= {threshold} (first {cls}, last {sep})")
PUNCT_REASON = N_("punctuation mass {mass} >= {threshold}")
BLOCK_REASON = N_("own-sentence mass {mass} >= {threshold} (sentence pairs)")
BROAD_REASON = N_("entropy {entropy} nats = {rel} x uniform ({uniform}) >= {threshold}")
NO_PATTERN_REASON = N_("no fixed pattern: largest positional mass {what} {value} < {positional}, first + last special "
                       "token {special} < {need}, entropy {rel} x uniform < {broad}")

DEFAULTS = {"positional": 0.5, "offset_share": 0.9, "special": 0.6, "block": 0.8, "broad": 0.8}
#: how a set of labels sums itself up (``repr`` in English, ``print`` in the reader's language)
SUMMARY = N_("HeadLabels({layers} layers x {heads} heads: {counts})")


@dataclass
class HeadLabels:
    """One label per head.

    Attributes:
        labels: ``[layers, heads]`` array of label strings (see :data:`LABELS`).
        reasons: ``[layers, heads]`` array of one-line justifications.
        stats: the statistics that were classified.
        thresholds: the thresholds used.
    """

    labels: np.ndarray
    reasons: np.ndarray
    stats: HeadStats
    thresholds: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.labels.shape)  # type: ignore[return-value]

    def __getitem__(self, key: tuple[int, int]) -> str:
        return str(self.labels[key])

    def heads(self, label: str) -> list[tuple[int, int]]:
        """0-based ``(layer, head)`` pairs with this label."""
        _check_label(label)
        return [tuple(map(int, lh)) for lh in np.argwhere(self.labels == label)]  # type: ignore[misc]

    def counts(self) -> dict[str, int]:
        """Number of heads per label (every label present, possibly 0)."""
        return {name: int((self.labels == name).sum()) for name in LABELS}

    def counts_by_layer(self) -> dict[str, np.ndarray]:
        """Label -> ``[layers]`` count of heads with that label in each layer."""
        return {name: (self.labels == name).sum(axis=1) for name in LABELS}

    def share(self, names: Sequence[str]) -> float:
        """Fraction of all heads whose label is in ``names``."""
        return float(np.isin(self.labels, list(names)).mean())

    def rows(self, digits: int = 2) -> list[list[Any]]:
        """Header plus one row per head: label, reason and the main statistics."""
        s = self.stats
        out: list[list[Any]] = [[_("head"), _("label"), _("self"), _("previous"), _("next"), _("first special"), _("last special"), _("H/H_unif"),
                                 _("reason")]]
        for l in range(self.shape[0]):
            for h in range(self.shape[1]):
                out.append([
                    f"L{l + 1} H{h + 1}", self.labels[l, h],
                    *(round(float(v), digits) for v in (
                        s.self_mass[l, h], s.prev_mass[l, h], s.next_mass[l, h],
                        s.cls_mass[l, h], s.sep_mass[l, h], s.relative_entropy[l, h])),
                    self.reason(l, h),
                ])
        return out

    def reason(self, layer: int, head: int) -> str:
        """Why ``(layer, head)`` got its label, in the reader's language (stored in English)."""
        text = str(self.reasons[layer, head])
        return filled_template(text, _) or translated(text)  # the label inside a reason too

    def table(self, digits: int = 2) -> str:
        """Printable table, one line per head (1-based labels; headers and reasons in the reader's language)."""
        return format_table(self.rows(digits))

    def __repr__(self) -> str:
        return self._summary(SUMMARY)

    def __str__(self) -> str:
        """What ``print`` shows: how many heads got each label, in the reader's language (the label
        names stay as they are, as the glossary keeps them)."""
        return self._summary(_(SUMMARY))

    def _summary(self, template: str) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts().items() if v)
        return template.format(layers=self.shape[0], heads=self.shape[1], counts=counts)


def _check_label(label: str) -> None:
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}; labels are {', '.join(LABELS)}")


def classify_heads(
    stats: HeadStats,
    *,
    positional: float = DEFAULTS["positional"],
    offset_share: float = DEFAULTS["offset_share"],
    special: float = DEFAULTS["special"],
    block: float = DEFAULTS["block"],
    broad: float = DEFAULTS["broad"],
) -> HeadLabels:
    """Label every head with a pattern type (rules and defaults: module docstring).

    Args:
        stats: from :func:`attnlab.analysis.head_stats.head_stats` (a model and texts),
            :func:`~attnlab.analysis.head_stats.head_stats_of` (maps) or :func:`survey_stats`.
        positional: mass on self / previous / next token that makes a positional head.
        offset_share: share of rows with the maximum at offset 0 / -1 / +1 that
            also makes a positional head (Voita et al.); set above 1 to disable.
        special: [CLS] + [SEP] (or punctuation) mass that makes a vertical head.
        block: own-sentence mass (pairs only) that makes a block head.
        broad: mean row entropy as a fraction of the uniform entropy that makes
            a broad head.

    Returns:
        :class:`HeadLabels`.
    """
    if not isinstance(stats, HeadStats):
        raise TypeError(f"classify_heads needs HeadStats (from attnlab.analysis.head_stats), got {type(stats).__name__}")
    for name, v in dict(positional=positional, special=special, block=block, broad=broad).items():
        if not 0 < v <= 1:
            raise ValueError(f"threshold {name}={v} must be in (0, 1]")
    thresholds = dict(positional=positional, offset_share=offset_share, special=special, block=block, broad=broad)
    n_layers, n_heads = stats.shape
    labels = np.empty((n_layers, n_heads), dtype=object)
    reasons = np.empty((n_layers, n_heads), dtype=object)
    for l in range(n_layers):
        for h in range(n_heads):
            labels[l, h], reasons[l, h] = _classify_one(stats.head(l, h), thresholds)
    return HeadLabels(labels=labels.astype(str), reasons=reasons.astype(str), stats=stats, thresholds=thresholds)


def _classify_one(s: dict[str, float], t: dict[str, float]) -> tuple[str, str]:
    """Label and reason for one head's statistics ``s`` under thresholds ``t``."""
    candidates: list[tuple[float, str, str]] = []  # (strength, label, reason)
    positional = {"self": ("self_mass", 0), "previous": ("prev_mass", -1), "next": ("next_mass", 1)}
    for label, (key, offset) in positional.items():
        if s[key] >= t["positional"]:
            candidates.append((s[key] / t["positional"], label,
                               MASS_REASONS[key].format(value=f"{s[key]:.2f}", threshold=f"{t['positional']:.2f}")))
        elif s["argmax_offset"] == offset and s["offset_share"] >= t["offset_share"]:
            candidates.append((s["offset_share"] / t["offset_share"], label,
                               OFFSET_REASON.format(offset=f"{offset:+d}", share=f"{s['offset_share']:.0%}",
                                                    need=f"{t['offset_share']:.0%}", what=key.split("_")[0],
                                                    value=f"{s[key]:.2f}")))
    special = s["cls_mass"] + s["sep_mass"]
    if special >= t["special"]:
        candidates.append((special / t["special"], "vertical",
                           SPECIAL_REASON.format(mass=f"{special:.2f}", threshold=f"{t['special']:.2f}",
                                                 cls=f"{s['cls_mass']:.2f}", sep=f"{s['sep_mass']:.2f}")))
    punct = s["punct_mass"]
    if np.isfinite(punct) and punct >= t["special"]:
        candidates.append((punct / t["special"], "vertical",
                           PUNCT_REASON.format(mass=f"{punct:.2f}", threshold=f"{t['special']:.2f}")))
    if candidates:
        _strength, label, reason = max(candidates, key=lambda c: c[0])
        return label, reason
    seg = s["segment_mass"]
    if np.isfinite(seg) and seg >= t["block"]:
        return "block", BLOCK_REASON.format(mass=f"{seg:.2f}", threshold=f"{t['block']:.2f}")
    rel = s["entropy"] / s["uniform_entropy"] if s["uniform_entropy"] > 0 else 0.0
    if rel >= t["broad"]:
        return "broad", BROAD_REASON.format(entropy=f"{s['entropy']:.2f}", rel=f"{rel:.2f}",
                                            uniform=f"{s['uniform_entropy']:.2f}", threshold=f"{t['broad']:.2f}")
    top = max(("self", s["self_mass"]), ("previous", s["prev_mass"]), ("next", s["next_mass"]), key=lambda kv: kv[1])
    return "heterogeneous", NO_PATTERN_REASON.format(
        what=top[0], value=f"{top[1]:.2f}", positional=f"{t['positional']:.2f}", special=f"{special:.2f}",
        need=f"{t['special']:.2f}", rel=f"{rel:.2f}", broad=f"{t['broad']:.2f}")


# --------------------------------------------------------------------------- depth


@dataclass
class FixedShareByDepth:
    """Share of fixed-pattern heads in each layer, and how it moves with depth.

    Attributes:
        by_layer: ``[L]`` share of heads with a :data:`FIXED` label, first layer first.
        spearman: rank correlation of ``by_layer`` with the layer index; NaN when
            the share is the same in every layer or there are fewer than 3 layers.
    """

    by_layer: np.ndarray
    spearman: float


def fixed_share_by_depth(labels: HeadLabels) -> FixedShareByDepth:
    """Share of fixed-pattern heads per layer and its Spearman correlation with depth."""
    per_layer = np.isin(labels.labels, list(FIXED)).mean(axis=1)  # (L,)
    rho = correlation(np.arange(len(per_layer)), per_layer) if len(per_layer) >= 3 else float("nan")
    return FixedShareByDepth(per_layer, rho)


# --------------------------------------------------------------------------- texts and survey


#: Short natural sentences for surveys of all heads (the course's running corpus
#: for lesson 05). Pairs are made from neighbours in the list.
SAMPLE_TEXTS = {
    "en": [
        "how do you play chess", "what is the best way to learn piano", "the weather is nice today",
        "my sister bought a new phone last week", "where can i find a cheap hotel in paris",
        "the children are playing in the park", "he forgot his keys at the office",
        "can you recommend a good movie for tonight", "the train was late again this morning",
        "she reads a book before going to sleep", "why is the sky blue", "we cooked dinner for our friends",
        "the cat is sleeping on the warm sofa", "how much does a ticket to london cost",
        "the teacher explained the problem twice", "they moved to a small town near the sea",
        "i would like a cup of coffee, please.", "the museum opens at nine in the morning",
        "do you know how to fix a flat tire", "our team won the match on sunday",
        "the river flows through the old city", "please turn off the lights when you leave.",
        "the doctor told him to rest for a week", "what time does the store close",
        "a small dog was barking at the mailman", "learning a new language takes time",
        "the students finished their project early", "how do i reset my password",
        "the soup tastes better with a little salt", "he plays the guitar in a band",
        "the company hired twenty new workers", "is it going to rain tomorrow",
        "she painted the kitchen walls yellow", "the library is closed on mondays",
        "which phone has the best camera", "my grandfather grew up on a farm",
        "the meeting was moved to thursday afternoon", "how long does it take to boil an egg",
        "the birds fly south in the winter", "we watched the sunset from the hill",
        "the price of bread went up again", "can dogs eat chocolate",
        "the new bridge will open next year", "he answered every question correctly",
        "what are the rules of basketball", "the baby laughed at the funny noise",
        "she sent the letter yesterday", "the game starts at eight o'clock",
        "how do plants make their food", "the old man walked slowly to the bus stop",
        "my brother is learning to drive", "the restaurant serves fresh fish every day",
        "where is the nearest train station", "the film was longer than we expected",
        "they planted tomatoes in the garden", "why do cats like boxes",
        "the police found the missing bicycle", "she speaks three languages fluently",
        "the computer stopped working after the update", "how can i improve my english",
        "the concert was cancelled because of the storm", "we need more chairs for the party",
        "the moon looks bright tonight", "what is the capital of australia",
        "he lost his wallet on the train", "the shop sells shoes and bags",
        "the kids built a snowman in the yard", "how many players are on a football team",
        "the water in the lake is very cold", "she always drinks tea in the afternoon",
        "the plane landed safely in the rain", "who wrote this song",
        "the farmer sold his apples at the market", "how do you make fried rice",
        "the road was blocked by a fallen tree", "my friend called me late last night",
        "the hotel room had a view of the sea", "is this the right way to the beach",
        "the class begins after lunch", "he fixed the roof before the winter",
        "what is the fastest animal in the world", "the girl drew a picture of her family",
        "the bank is next to the post office", "we walked along the beach at dawn",
        "how do i get a library card", "the phone battery dies too quickly",
        "the mountain was covered with snow", "they argued about the price of the car",
        "what should i cook for dinner", "the museum has a famous painting",
        "my neighbour grows roses in his garden", "the exam was easier than i thought",
        "how do airplanes stay in the air", "the shop on the corner sells fresh bread",
        "she found an old photo in the drawer", "why does ice float on water",
        "the bus driver smiled at the children", "the movie ends with a wedding",
        "how can i sleep better at night", "the workers finished the new school",
    ],
    "zh": [
        "王者荣耀怎么玩", "今天天气怎么样", "北京有什么好玩的地方", "我想学习英语口语",
        "这部电影很好看", "附近有没有好吃的饭店", "怎样才能减肥", "明天会下雨吗",
        "手机没电了怎么办", "他每天早上跑步", "周末我们去爬山吧", "这本书讲了一个感人的故事",
        "孩子们在公园里玩耍", "上海到杭州的火车票多少钱", "感冒了应该吃什么药", "妈妈做的菜很好吃",
        "我的电脑开不了机", "哪个手机拍照最好", "学生们正在考试", "这首歌曲很好听",
        "如何提高数学成绩", "小猫在沙发上睡觉", "请问地铁站在哪里", "他们明年要结婚了",
        "足球比赛几点开始", "医院的门诊几点下班", "冬天到了，天气越来越冷。", "老师表扬了这个学生",
        "怎么做红烧肉", "我昨天买了一本新书", "篮球比赛直播在哪看", "这家酒店的服务很好",
        "怎么下载免费的小说", "春天的花都开了", "我们一起去看电影吧", "狗是人类的好朋友",
        "最新的新闻有哪些", "他把钥匙忘在办公室了", "牛奶和面包是早饭", "这个软件怎么安装",
        "爷爷在院子里种了很多树", "旅游攻略去哪里找", "飞机晚点了两个小时", "她会说三种语言",
        "为什么天空是蓝色的", "这个价格太贵了", "我想养一只小狗", "火车站离这里远吗",
        "今年夏天特别热", "他弹吉他弹得很好", "怎样才能睡个好觉", "学校门口有一家书店",
        "密码忘了怎么找回", "咖啡和茶哪个更健康", "河边有很多人在钓鱼", "下雪了，孩子们很高兴。",
        "如何学习编程", "这家店的水果很新鲜", "我们明天早上八点出发", "他的工作很忙",
        "电脑系统怎么升级", "晚饭吃什么好呢", "山上的风景非常美", "网络连接不上怎么办",
        "她每天晚上看书", "这个周末有什么活动", "体育明星的生活怎么样", "鱼在水里游来游去",
        "去上海旅游要带什么", "考试成绩什么时候出来", "健身房几点开门", "下载视频的方法",
        "我的账号被盗了", "北京的冬天很冷", "这道题怎么做", "他们在讨论新的计划",
        "哪里可以买到便宜的机票", "小鸟在树上唱歌", "运动对身体有好处", "这部手机的价格是多少",
        "妹妹喜欢画画", "明年我想去国外读书", "图书馆里很安静", "他喝了一杯热咖啡",
        "早上起床后要喝水", "这个城市的交通很方便", "怎样做蛋糕", "她在医院工作",
        "秋天的树叶变黄了", "我们班赢了篮球比赛", "电话号码怎么查询", "他的房子在海边",
        "如何选择一台好电脑", "猫为什么喜欢纸箱", "雨下了一整天", "学校明天放假",
        "这首诗写的是春天", "爸爸每天开车上班", "超市里的蔬菜很便宜", "一年有四个季节",
    ],
}


def sample_texts(language: str, n: int | None = None) -> list[str]:
    """The first ``n`` (all when None) sample sentences in ``language`` ("zh" or "en")."""
    texts = SAMPLE_TEXTS["zh" if language == "zh" else "en"]
    return list(texts[: check_positive_int(n, "n")] if n is not None else texts)


def survey_stats(
    m: LoadedModel,
    texts: Sequence[str] | None = None,
    *,
    n_texts: int | None = None,
    n_pairs: int | None = None,
    batch_size: int = 32,
    progress: bool = False,
) -> HeadStats:
    """Head statistics of ``m`` over single texts *and* sentence pairs, streamed.

    Args:
        m: a loaded model.
        texts: sentences to use (default: :func:`sample_texts` in the model's language).
        n_texts: use the first ``n_texts`` sentences as single inputs (default all).
        n_pairs: also run this many pairs ``(texts[i], texts[i + 1])``
            (default: as many as single texts); they give the block statistic.
        batch_size: texts per forward pass.
        progress: tqdm progress bars.

    Returns:
        :class:`HeadStats`; ``segment_mass`` comes from the pairs only, the
        other statistics from every row of singles and pairs.
    """
    return stats_of_batches(m, survey_batches(m, texts, n_texts=n_texts, n_pairs=n_pairs, batch_size=batch_size,
                                             progress=progress))


def survey_batches(m: LoadedModel, texts: Sequence[str] | None, *, n_texts: int | None, n_pairs: int | None,
                   batch_size: int, progress: bool) -> Iterator:
    """The attention batches of a survey (arguments as :func:`survey_stats`): the single texts, then the
    pairs ``(texts[i], texts[i + 1])``."""
    pool = list(texts) if texts is not None else sample_texts(m.language)
    singles = pool[:n_texts] if n_texts is not None else pool
    n_pairs = len(singles) if n_pairs is None else n_pairs
    n_pairs = min(n_pairs, len(pool) - 1)
    yield from iter_attention_batches(m, singles, batch_size=batch_size, progress=progress)
    if n_pairs > 0:
        firsts, seconds = pool[:n_pairs], pool[1 : n_pairs + 1]
        yield from iter_attention_batches(m, firsts, seconds, batch_size=batch_size, progress=progress)


def survey_text_sums(
    m: LoadedModel,
    texts: Sequence[str] | None = None,
    *,
    n_texts: int | None = None,
    n_pairs: int | None = None,
    batch_size: int = 32,
    progress: bool = False,
) -> list[HeadSums]:
    """Like :func:`survey_stats`, but one :class:`HeadSums` per input (singles, then pairs).

    Their sum, finished, is :func:`survey_stats`' result; kept apart they let an
    interval resample the inputs (:func:`attnlab.analysis.pattern_shares.pattern_shares`).
    """
    out: list[HeadSums] = []
    for batch in survey_batches(m, texts, n_texts=n_texts, n_pairs=n_pairs, batch_size=batch_size, progress=progress):
        out += text_sums(m, batch)
    return out


def survey_texts(language: str, n: int) -> list[str]:
    """``n`` texts for a survey: the sample sentences first, then built-in
    search queries from :mod:`attnlab.data.corpus`."""
    n = check_positive_int(n, "n")
    texts = sample_texts(language)[:n]
    if len(texts) < n:
        try:
            extra = corpus.texts("zh" if language == "zh" else "en", n - len(texts), seed=0)
        except ValueError:
            extra = []
        texts += [t for t in extra if t not in texts]
    return texts


#: Survey sizes of lesson 05: (full, smoke).
SURVEY_SIZES = {"texts": (300, 30), "pairs": (100, 10)}

def default_survey_sums(m: LoadedModel, *, progress: bool = False) -> list[HeadSums]:
    """Lesson 05's survey of ``m``'s heads, one :class:`HeadSums` per input: 300 texts
    and 100 sentence pairs (30 and 10 in smoke mode), cached per model."""
    n_texts = pick(*SURVEY_SIZES["texts"])
    n_pairs = min(pick(*SURVEY_SIZES["pairs"]), len(sample_texts(m.language)) - 1)
    return memo(m, "survey_sums", (n_texts, n_pairs), lambda: survey_text_sums(
        m, survey_texts(m.language, n_texts), n_pairs=n_pairs, progress=progress))


def default_survey(m: LoadedModel, *, progress: bool = False) -> HeadStats:
    """Lesson 05's survey of ``m``'s heads (:func:`default_survey_sums`, added up and
    averaged), cached per model so exercises reuse it."""
    def compute() -> HeadStats:
        per_input = default_survey_sums(m, progress=progress)
        return sum(per_input[1:], per_input[0]).finish()

    return memo(m, "survey", (), compute)


# --------------------------------------------------------------------------- pattern zoo


def pick_examples(labels: HeadLabels) -> dict[str, tuple[int, int]]:
    """For each label present, the head that shows it most clearly.

    self / previous / next: the largest mass of that kind; vertical: the
    largest [CLS]+[SEP] (or punctuation) mass; block: the largest own-sentence
    mass; broad: the highest entropy relative to uniform; heterogeneous: the
    head furthest from every fixed pattern (smallest largest fixed mass).
    """
    s = labels.stats
    punct = np.nan_to_num(s.punct_mass)
    score = {
        "self": s.self_mass, "previous": s.prev_mass, "next": s.next_mass,
        "vertical": np.maximum(s.special_mass, punct), "block": np.nan_to_num(s.segment_mass),
        "broad": s.relative_entropy,
        "heterogeneous": -np.max(np.stack([s.self_mass, s.prev_mass, s.next_mass, s.special_mass]), axis=0),
    }
    out = {}
    for name in LABELS:
        mask = labels.labels == name
        if mask.any():
            masked = np.where(mask, score[name], -np.inf)
            out[name] = tuple(int(v) for v in np.unravel_index(np.argmax(masked), masked.shape))
    return out
