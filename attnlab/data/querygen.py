"""Many distinct, natural-looking search queries of one exact token length, and a control set.

Averaging attention maps cell by cell needs queries that all have the same
number of tokens: the source article used 100,000 of them. No data set can be
downloaded in a classroom, so this module writes them:

* :class:`VariedQueryGenerator` (the lessons' default) expands a phrase
  grammar over word lists tagged by part of speech
  (:mod:`attnlab.data.wordlists`): many sentence shapes and optional parts,
  so a token position holds a noun in one query and a verb or a function word
  in the next. Without that, a head that follows one role looks "fixed".
* :class:`QueryGenerator` fills about 30 templates with a lexicon made for
  this course (search-box style: weather, recipes, games, travel, health,
  pets, shopping, study, apps); each slot always holds the same role.
* :func:`random_token_queries` is the **control**: strings of random
  vocabulary pieces of the same length, with no content at all.

* Chinese (``bert-base-chinese`` is character level): token count =
  character count, so a query of ``n_tokens`` tokens has ``n_tokens``
  characters. With a word-piece tokenizer (the multilingual default) the
  phrase grammar counts each word's pieces instead.
* English: every word is meant to be one word piece; with a tokenizer the
  word lists are filtered to words that really are one token, and every
  query is re-tokenised and dropped unless it has exactly ``n_tokens`` tokens.

``n_tokens`` counts the query's own tokens; the model adds ``[CLS]`` and
``[SEP]``, so its maps are ``(n_tokens + 2) x (n_tokens + 2)``.

Generation is deterministic: the same seed gives the same queries in the
same order on every machine. Repeats are skipped and counted
(``duplicates``), as are candidates of the wrong length (``wrong_length``).

Typical use::

    from attnlab.data.querygen import VariedQueryGenerator, random_token_queries, same_length_queries
    gen = VariedQueryGenerator("zh", n_tokens=10, seed=0)
    queries = gen.take(100_000)
    print(gen.report(), gen.role_shares())
    al.mean_attention(m, same_length_queries(m, 100_000, n_tokens=10))   # streamed
    al.mean_attention(m, random_token_queries(m, 20_000, n_tokens=10))   # the control
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator

from attnlab.core import class_setting
from attnlab.core.checks import check_positive_int
from attnlab.core.language import _
from attnlab.core.memo import memo
from attnlab.core.models import LoadedModel
from attnlab.data.wordlists import EN_GRAMMAR, EN_WORDS, ZH_GRAMMAR, ZH_WORDS

LANGUAGES = ("zh", "en")

#: Tokens per query used by the lessons in both languages (maps of 12 x 12 with [CLS] and [SEP]).
DEFAULT_N_TOKENS = 10

# --------------------------------------------------------------------------- Chinese lexicon

_ZH: dict[str, str] = {
    "GAME": "王者荣耀 和平精英 原神 英雄联盟 我的世界 象棋 围棋 五子棋 斗地主 麻将 炉石传说 穿越火线 第五人格 "
            "蛋仔派对 开心消消乐 植物大战僵尸 俄罗斯方块 火影忍者 阴阳师 梦幻西游 狼人杀 跳棋 魔方",
    "GAME_V": "玩 上分 升级 赚金币 快速上手 组队 改名字 加好友 开黑 练技术 退款 下载 换账号 获得皮肤",
    "GAME_N": "英雄 出装 阵容 角色 武器 皮肤 攻略 玩法 打法 技巧",
    "CITY": "北京 上海 广州 深圳 杭州 成都 重庆 武汉 西安 南京 天津 苏州 长沙 郑州 青岛 厦门 昆明 大连 沈阳 "
            "哈尔滨 济南 合肥 福州 南昌 贵阳 南宁 兰州 太原 石家庄 三亚 丽江 桂林 洛阳 无锡 宁波 温州 珠海 "
            "拉萨 乌鲁木齐 呼和浩特 扬州 大理 烟台 威海 泉州 佛山 东莞 常州 徐州 绍兴 嘉兴 金华 "
            "台州 惠州 中山 汕头 湛江 柳州 北海 遵义 绵阳 宜昌 襄阳 岳阳 九江 赣州 黄山 秦皇岛 承德 "
            "保定 唐山 开封 西宁 银川 海口 舟山",
    "TIME": "今天 明天 后天 周末 下周 五一 国庆 春节 这几天 今晚 明早 下个月",
    "WEATHER_Q": "天气怎么样 会下雨吗 冷不冷 热不热 穿什么衣服 适合出门吗 有雾霾吗 气温多少度 刮大风吗",
    "SPOT": "景点 公园 博物馆 夜市 古镇 商场 海边 酒店 民宿 小吃街 游乐园 动物园",
    "ADJ": "好玩 免费 小众 人少 适合拍照 适合带娃 便宜 有名",
    "TRANSPORT": "高铁 火车 飞机 开车 大巴 动车",
    "TRIP_Q": "要多久 多少钱 怎么买票 几个小时 最快多久 方便吗",
    "DISH": "红烧肉 糖醋排骨 宫保鸡丁 鱼香肉丝 麻婆豆腐 西红柿炒鸡蛋 可乐鸡翅 水煮鱼 酸菜鱼 回锅肉 小龙虾 "
            "饺子 包子 面条 炒饭 蛋糕 火锅 烤鸭 凉皮 粽子 月饼 汤圆 红烧鱼 清蒸鲈鱼 土豆丝 蛋炒饭 牛肉面 "
            "排骨汤 鸡蛋羹 手抓饼 煎饺 炸酱面 烤鱼 麻辣烫 酸辣粉 馄饨 春卷 卤牛肉",
    "DISH_Q": "的做法 的家常做法 热量高吗 怎么做好吃 怎么做才嫩 放多久会坏 用什么锅 需要什么材料 孕妇能吃吗",
    "PRODUCT": "苹果手机 华为手机 小米手机 笔记本电脑 平板电脑 蓝牙耳机 电动牙刷 空气净化器 扫地机器人 洗衣机 "
               "冰箱 空调 电饭煲 微波炉 投影仪 显示器 机械键盘 无线鼠标 智能手表 相机 自行车 电动车 跑步机 "
               "吹风机 加湿器 路由器 充电宝 打印机",
    "PRODUCT_Q": "多少钱 哪个牌子好 怎么选 推荐 坏了怎么办 充不进电 怎么连接手机 声音小 怎么清洗 有辐射吗 "
                 "耗电吗 值得买吗 保修多久 怎么设置",
    "APP": "微信 支付宝 抖音 淘宝 京东 美团 百度 微博 快手 拼多多 小红书 高德地图 钉钉 知乎 今日头条 "
           "腾讯视频 爱奇艺 网易云音乐 饿了么 携程",
    "APP_Q": "怎么注销账号 怎么改密码 怎么删除好友 怎么开发票 怎么退款 怎么换头像 怎么清理缓存 怎么设置字体 "
             "登录不上去 闪退怎么办 怎么实名认证 怎么关闭广告 怎么找客服 怎么绑定银行卡",
    "WHO": "小孩 孩子 宝宝 老人 孕妇 女生 男生 大人 学生 老公 老婆 妈妈 爸爸",
    "SYMPTOM": "发烧 咳嗽 感冒 拉肚子 头疼 失眠 牙疼 便秘 过敏 嗓子疼 流鼻涕 胃疼 腰疼 长痘",
    "ILL_Q": "怎么办 吃什么药 吃什么好 要去医院吗 能洗澡吗 怎么缓解 是什么原因 能运动吗 多久能好",
    "SUBJECT": "英语 数学 物理 化学 语文 编程 钢琴 吉他 书法 游泳 画画 日语 摄影 舞蹈 历史 地理 围棋 口语",
    "LEARN_Q": "怎么提高成绩 入门书籍推荐 从零开始怎么学 学习方法 培训班哪家好 怎么快速提高 自学难吗 "
               "要学多久 有什么技巧 考试怎么复习",
    "PET": "猫 狗 小猫 小狗 兔子 仓鼠 金鱼 乌龟 鹦鹉 柯基 金毛 泰迪 布偶猫 橘猫 哈士奇 边牧",
    "PET_Q": "不吃东西怎么办 吃什么好 能吃葡萄吗 怎么养 一直叫是什么原因 掉毛严重怎么办 多大可以洗澡 "
             "拉肚子怎么办 怎么训练 能活多久 怎么剪指甲",
    "TRAVEL": "旅游 玩 出差 看海 爬山 看雪 过年 吃美食 带娃玩 自驾游",
    "TRAVEL_Q": "攻略 要注意什么 住哪里方便 带什么衣服 人多吗 怎么安排 玩几天合适 花多少钱 有什么推荐",
    "SPOT_Q": "几点开门 门票多少钱 怎么去 要预约吗 好玩吗 停车方便吗 人多吗 在哪里",
    "COMPARE": "热量高 更好吃 更容易做 更健康 更便宜 更下饭",
    "MEAL": "早上 晚上 中午 睡前 半夜 减肥期间 每天",
    "ASK": " 请问 求问 问一下 想知道 急问",
    "END": " 呢 啊 呀",
}

#: Templates: slot names in braces, other characters literal. A leading
#: ``{ASK}`` / trailing ``{END}`` may be empty (the first entry is "").
_ZH_TEMPLATES = [
    "{ASK}{GAME}怎么{GAME_V}{END}",
    "{ASK}{GAME}{GAME_N}推荐",
    "{ASK}{GAME}新手{GAME_N}{END}",
    "{ASK}{CITY}有什么{ADJ}的{SPOT}{END}",
    "{ASK}{CITY}{ADJ}的{SPOT}推荐",
    "{ASK}{CITY}到{CITY}{TRANSPORT}{TRIP_Q}",
    "{ASK}{CITY}哪里有好吃的{DISH}{END}",
    "{ASK}{CITY}的{DISH}哪家好吃",
    "{ASK}{DISH}{DISH_Q}{END}",
    "{ASK}{PRODUCT}{PRODUCT_Q}{END}",
    "{ASK}{APP}{APP_Q}{END}",
    "{ASK}{WHO}{SYMPTOM}{ILL_Q}{END}",
    "{ASK}{WHO}{SYMPTOM}了{ILL_Q}",
    "{ASK}{SUBJECT}{LEARN_Q}{END}",
    "{ASK}{WHO}学{SUBJECT}{LEARN_Q}",
    "{ASK}{PET}{PET_Q}{END}",
    "{ASK}{TIME}去{CITY}{TRANSPORT}{TRIP_Q}",
    "{ASK}{TIME}去{CITY}{TRAVEL}{TRAVEL_Q}{END}",
    "{ASK}{CITY}{TRAVEL}{TRAVEL_Q}{END}",
    "{ASK}{CITY}的{SPOT}{SPOT_Q}{END}",
    "{ASK}{CITY}{TIME}{WEATHER_Q}{END}",
    "{ASK}{DISH}和{DISH}哪个{COMPARE}",
    "{ASK}{MEAL}吃{DISH}会胖吗{END}",
    "{ASK}{PRODUCT}和{PRODUCT}哪个好{END}",
    "{ASK}{WHO}{SYMPTOM}能吃{DISH}吗",
]

# --------------------------------------------------------------------------- English lexicon

_EN: dict[str, str] = {
    "GAME": "chess poker tennis golf soccer football basketball baseball hockey cricket bridge checkers minecraft "
            "guitar piano violin drums",
    "CITY": "paris london berlin rome madrid tokyo beijing shanghai boston chicago seattle dallas denver miami "
            "toronto sydney dublin vienna prague moscow cairo delhi bangkok seoul lisbon athens oslo "
            "venice florence milan naples munich hamburg amsterdam brussels geneva zurich stockholm "
            "helsinki warsaw budapest istanbul dubai singapore manila jakarta hanoi osaka kyoto "
            "vancouver montreal houston phoenix atlanta detroit portland austin nashville orlando "
            "edinburgh glasgow manchester liverpool",
    "TIME": "today tomorrow tonight now this|weekend next|week in|winter in|summer in|spring",
    "WEATHER": "weather rain snow wind temperature",
    "PLACE": "museum park beach hotel restaurant market zoo garden church castle bridge library",
    "ADJ": "best cheap free quiet famous old small big nice good",
    "TRANSPORT": "train bus car plane ship bike",
    "DISH": "rice pasta bread soup chicken beef pork fish eggs salad pizza cake cookies potatoes beans noodles "
            "steak turkey corn cheese",
    "COOK": "cook bake boil fry grill roast make",
    "DEVICE": "phone laptop computer printer camera tv tablet keyboard mouse router watch speaker",
    "PROBLEM": "is|slow is|broken is|hot is|loud wont|start keeps|crashing",
    "WHO": "my|son my|daughter my|baby my|dog my|cat my|wife my|husband my|mother my|father a|child",
    "SYMPTOM": "fever cough cold headache rash flu",
    "SUBJECT": "english math physics chemistry history spanish french german japanese music art biology",
    "PET": "dog cat puppy kitten rabbit bird fish horse",
    "FOOD": "grapes chocolate milk cheese bread apples eggs rice chicken fish",
    "TOOL": "pan pot oven wok microwave grill",
    "WHO3": "kids families couples students children",
    "VISIT": "safe nice cheap fun expensive crowded cold hot busy",
    "ITEM": "shoes books coffee tea flowers clothes bread wine toys gifts",
    "ASK": " please quick",
    "END": " today now fast again",
}

_EN_TEMPLATES = [
    "{ASK} how do you play {GAME} {END}",
    "{ASK} how do i learn {GAME} {END}",
    "{ASK} what is the weather in {CITY} {TIME}",
    "{ASK} will it {WEATHER} in {CITY} {TIME}",
    "{ASK} what is the {ADJ} {PLACE} in {CITY}",
    "{ASK} where is a {ADJ} {PLACE} in {CITY}",
    "{ASK} how long is the {TRANSPORT} from {CITY} to {CITY}",
    "{ASK} how much is a {TRANSPORT} from {CITY} to {CITY}",
    "{ASK} how do you {COOK} {DISH} {END}",
    "{ASK} how long to {COOK} {DISH} {END}",
    "{ASK} what can i {COOK} with {DISH} and {DISH}",
    "{ASK} why my {DEVICE} {PROBLEM} {END}",
    "{ASK} what to do if my {DEVICE} {PROBLEM}",
    "{ASK} what to do when {WHO} has a {SYMPTOM}",
    "{ASK} can {WHO} take a bath with a {SYMPTOM}",
    "{ASK} how to learn {SUBJECT} {END}",
    "{ASK} what is the {ADJ} way to learn {SUBJECT}",
    "{ASK} can a {PET} eat {FOOD}",
    "{ASK} is {FOOD} good for a {PET}",
    "{ASK} how do i take care of a {PET} {END}",
    "{ASK} how to get from {CITY} to {CITY} by {TRANSPORT} {END}",
    "{ASK} is {CITY} {VISIT} to visit {TIME}",
    "{ASK} what to see in {CITY} {TIME} {END}",
    "{ASK} {ADJ} {PLACE} in {CITY} for {WHO3} {END}",
    "{ASK} where can i buy {ADJ} {ITEM} in {CITY} {END}",
    "{ASK} how do you {COOK} {DISH} in a {TOOL} {END}",
    "{ASK} what to do in {CITY} with {WHO3} {TIME}",
    "{ASK} how to get from {CITY} to {CITY} by {TRANSPORT} {TIME} {END}",
    "{ASK} what is the {ADJ} {PLACE} in {CITY} for {WHO3} {TIME}",
]


def _split(entry: str) -> list[str]:
    """Lexicon entry -> fillers; ``|`` joins words of one filler; a leading space means "" is a filler."""
    items = entry.split(" ")
    return [w.replace("|", " ") for w in items]


# --------------------------------------------------------------------------- exact-length enumeration


@dataclass
class _Block:
    """All fillings of one template whose slot fillers have one combination of lengths."""

    template: int
    choices: list[list[str]]  # per slot, the fillers of the chosen length
    count: int


def _parse(template: str) -> list[tuple[str, str]]:
    """Template -> [("lit", text) | ("slot", name)]."""
    parts, pos = [], 0
    while (start := template.find("{", pos)) >= 0:
        end = template.index("}", start)
        parts.append(("lit", template[pos:start]))
        parts.append(("slot", template[start + 1:end]))
        pos = end + 1
    parts.append(("lit", template[pos:]))
    return [p for p in parts if p != ("lit", "")]


class QueryGenerator:
    """Distinct queries of exactly ``n_tokens`` tokens, deterministic for a seed.

    How: every template's slot fillers are grouped by length; every
    combination of filler lengths that adds up (with the template's fixed
    words) to ``n_tokens`` is a block of ``prod(len(fillers))`` queries.
    A template is drawn with probability proportional to the square root of
    its number of fillings, then a random filling of it: every draw has the
    right length; a text drawn twice counts as a duplicate and is skipped.

    Args:
        language: ``"zh"`` or ``"en"``.
        n_tokens: tokens per query, special tokens *not* counted.
        seed: the random seed; same seed, same sequence.
        tokenizer: optional tokenizer to verify lengths with (a model's
            ``m.tokenizer``). Without it, Chinese counts characters and
            English counts words (each lexicon word is one word piece of a
            BERT uncased vocabulary). With it, English fillers that are not
            one token per word are left out, and every query is re-tokenised.
        max_tries: give up after this many repeats in a row (the space is
            used up).

    Attributes:
        capacity: how many different fillings of this length exist.
        produced: queries yielded so far.
        duplicates: draws skipped because the text was already yielded.
        wrong_length: queries dropped because the tokenizer disagreed.
    """

    def __init__(self, language: str = "zh", n_tokens: int = 10, *, seed: int = 0,
                 tokenizer: Any = None, max_tries: int = 10_000) -> None:
        if language not in LANGUAGES:
            raise ValueError(_("language must be one of {languages}, got {language!r}").format(
                languages=LANGUAGES, language=language))
        n_tokens = check_positive_int(n_tokens, "n_tokens (tokens per query, without [CLS]/[SEP])")
        self.language, self.n_tokens, self.seed = language, n_tokens, seed
        self.tokenizer, self.max_tries = tokenizer, max_tries
        self.produced = self.duplicates = self.wrong_length = 0
        lexicon = _ZH if language == "zh" else _EN
        slots = {k: _split(v) for k, v in lexicon.items()}
        if tokenizer is not None and language == "en":
            slots = {k: [w for w in ws if self._one_token_per_word(w)] for k, ws in slots.items()}
        self._templates = [_parse(t) for t in (_ZH_TEMPLATES if language == "zh" else _EN_TEMPLATES)]
        self._blocks = self._make_blocks(slots)
        self._starts = list(itertools.accumulate([0] + [b.count for b in self._blocks]))
        self.capacity = self._starts[-1]
        # index range of each template; templates are drawn with weight sqrt(size) so that the
        # large combinatorial ones (city to city) do not drown the small ones
        spans: dict[int, list[int]] = {}
        for b, start, end in zip(self._blocks, self._starts, self._starts[1:]):
            spans.setdefault(b.template, [start, end])[1] = end
        self._spans = list(spans.values())
        self._weights = list(itertools.accumulate(math.sqrt(e - s) for s, e in self._spans))

    def _one_token_per_word(self, filler: str) -> bool:
        return all(len(self.tokenizer.tokenize(w)) == 1 for w in filler.split())

    def _length(self, text: str) -> int:
        return len(text) if self.language == "zh" else len(text.split())

    def _make_blocks(self, slots: dict[str, list[str]]) -> list[_Block]:
        blocks = []
        for t, parts in enumerate(self._templates):
            fixed = sum(self._length(text) for kind, text in parts if kind == "lit")
            names = [text for kind, text in parts if kind == "slot"]
            by_len = []
            for name in names:
                groups: dict[int, list[str]] = {}
                for filler in dict.fromkeys(slots[name]):
                    groups.setdefault(self._length(filler), []).append(filler)
                by_len.append(groups)
            for lengths in itertools.product(*[sorted(g) for g in by_len]):
                if fixed + sum(lengths) == self.n_tokens:
                    choices = [g[n] for g, n in zip(by_len, lengths)]
                    count = 1
                    for c in choices:
                        count *= len(c)
                    blocks.append(_Block(t, choices, count))
        return blocks

    def query(self, index: int) -> str:
        """The query with this index in ``0 .. capacity - 1`` (mixed-radix decoding)."""
        if not 0 <= index < self.capacity:
            raise IndexError(_("index {index} outside 0..{last}").format(index=index, last=self.capacity - 1))
        k = bisect.bisect_right(self._starts, index) - 1
        block, rest = self._blocks[k], index - self._starts[k]
        picked = []
        for fillers in reversed(block.choices):
            rest, r = divmod(rest, len(fillers))
            picked.append(fillers[r])
        picked.reverse()
        out, it = [], iter(picked)
        for kind, text in self._templates[block.template]:
            out.append(text if kind == "lit" else next(it))
        text = "".join(out)
        return " ".join(text.split()) if self.language == "en" else text

    def __iter__(self) -> Iterator[str]:
        """Yield distinct queries of the right length until the space runs dry."""
        if self.capacity == 0:
            return
        rng = random.Random(class_setting.student_seed(self.seed))  # per student in a class
        seen: set[str] = set()
        misses = 0
        batch: list[str] = []
        while misses < self.max_tries:
            start, end = rng.choices(self._spans, cum_weights=self._weights)[0]
            text = self.query(rng.randrange(start, end))
            if text in seen:
                self.duplicates += 1
                misses += 1
                continue
            misses = 0
            seen.add(text)
            batch.append(text)
            if len(batch) >= 256:
                yield from self._verified(batch)
                batch = []
        yield from self._verified(batch)

    def _verified(self, texts: list[str]) -> Iterator[str]:
        if self.tokenizer is not None and texts:
            lengths = [len(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]
        else:
            lengths = [self.n_tokens] * len(texts)
        for text, n in zip(texts, lengths):
            if n == self.n_tokens:
                self.produced += 1
                yield text
            else:
                self.wrong_length += 1

    def take(self, n: int) -> list[str]:
        """The first ``n`` queries as a list; ValueError if fewer exist at this length."""
        out = list(itertools.islice(iter(self), n))
        if len(out) < n:
            raise ValueError(
                _("only {made} distinct {language} queries of {n_tokens} tokens could be "
                  "made ({n} asked; {capacity} fillings exist): try a length between {low} and {high}").format(
                    made=len(out), language=self.language, n_tokens=self.n_tokens, n=n, capacity=self.capacity,
                    low=_good_lengths(self.language)[0], high=_good_lengths(self.language)[1]))
        return out

    def report(self) -> str:
        """One line: how many queries, repeats skipped and wrong lengths dropped."""
        return _("{n} distinct {language} queries of {k} tokens from {capacity} possible fillings ({d} repeats "
                 "skipped, {w} dropped for another token count)").format(
            n=self.produced, language=self.language, k=self.n_tokens, capacity=self.capacity, d=self.duplicates,
            w=self.wrong_length)


def _good_lengths(language: str) -> tuple[int, int]:
    return (9, 14) if language == "zh" else (7, 13)


# --------------------------------------------------------------------------- varied word order

#: Probability that an optional part of a grammar rule is used (longer queries above 1/2).
KEEP_OPTIONAL = 0.65


class VariedQueryGenerator:
    """Distinct queries of exactly ``n_tokens`` tokens from a phrase grammar, deterministic for a seed.

    The template corpus above puts the same role in the same slot (position
    1 is almost always a question word, the object sits at the same place).
    Here :mod:`attnlab.data.wordlists`'s grammar is expanded at random: many
    sentence shapes, optional parts, words of different lengths, so a token
    position holds different parts of speech from one query to the next
    (:meth:`role_shares` measures it).

    Every draw has the right length by construction (:meth:`draw_exact`): the
    grammar is expanded *given* its length in tokens, with each word's token
    count from :meth:`pieces`, so no draw of another length is made and thrown
    away. For a character-level tokenizer (bert-base-chinese) and for English
    this is exactly the distribution of the old way (draw freely, keep the
    draws of the right length). For a word-piece tokenizer reading Chinese
    (the offline multilingual default) the length is now counted in pieces,
    not characters: a query has ``n_tokens`` pieces and any number of
    characters (before, it needed ``n_tokens`` characters *and* pieces, which
    only about 1 draw in 33 had, and favoured one-character pieces). Each
    query is still re-tokenised; the few whose pieces merge across word
    boundaries (so the count differs) are skipped and counted as
    ``wrong_length``, as is a repeat (``duplicates``).

    Args:
        language: ``"zh"`` or ``"en"``.
        n_tokens: tokens per query, special tokens *not* counted.
        seed: the random seed; same seed, same sequence.
        tokenizer: optional tokenizer to verify lengths with (``m.tokenizer``).
            English words that are not one token are left out of the word lists;
            every query is re-tokenised and kept only with exactly ``n_tokens``.
        max_tries: stop after this many misses in a row (the space is used up).

    Attributes:
        produced: queries yielded so far.
        duplicates: draws skipped because the text was already yielded.
        wrong_length: draws skipped for another token count.
    """

    def __init__(self, language: str = "zh", n_tokens: int = DEFAULT_N_TOKENS, *, seed: int = 0,
                 tokenizer: Any = None, max_tries: int = 20_000) -> None:
        if language not in LANGUAGES:
            raise ValueError(_("language must be one of {languages}, got {language!r}").format(
                languages=LANGUAGES, language=language))
        self.n_tokens = check_positive_int(n_tokens, "n_tokens (tokens per query, without [CLS]/[SEP])")
        self.language, self.seed, self.tokenizer, self.max_tries = language, seed, tokenizer, max_tries
        self.produced = self.duplicates = self.wrong_length = 0
        self.grammar = ZH_GRAMMAR if language == "zh" else EN_GRAMMAR
        words = ZH_WORDS if language == "zh" else EN_WORDS
        self.words = {name: (tag, list(dict.fromkeys(ws))) for name, (tag, ws) in words.items()}
        if tokenizer is not None and language == "en":
            self.words = {name: (tag, [w for w in ws if len(tokenizer.tokenize(w)) == 1])
                          for name, (tag, ws) in self.words.items()}
        #: per token position, how many produced queries hold each tag there
        self.roles: list[Counter] = [Counter() for _position in range(self.n_tokens)]
        self._pieces: dict[tuple[str, bool], int] = {}   # (word, at the start?) -> tokens
        self._memo: dict[tuple, object] = {}   # length distributions of rule tails and symbols
        self._rules = {name: [tuple(r.split()) for r in rules] for name, rules in self.grammar.items()}

    def draw(self, rng: random.Random) -> list[tuple[str, str]] | None:
        """One expansion of the grammar: ``[(word, tag), ...]``; None when it needs an empty word list."""
        out: list[tuple[str, str]] = []
        return out if self._expand("Q", rng, out) else None

    def _expand(self, symbol: str, rng: random.Random, out: list[tuple[str, str]]) -> bool:
        for item in rng.choice(self.grammar[symbol]).split():
            if item.endswith("?"):
                item = item[:-1]
                if rng.random() >= KEEP_OPTIONAL:
                    continue
            if "/" in item:
                word, tag = item.split("/")
                out.append((word, tag))
            elif item in self.grammar:
                if not self._expand(item, rng, out):
                    return False
            else:
                tag, words = self.words[item]
                if not words:
                    return False
                out.append((rng.choice(words), tag))
        return True

    # ----------------------------------------------------------------- drawing by piece count

    def pieces(self, word: str, first: bool) -> int:
        """Tokens ``word`` adds to a query: at the start (``first``) or after other words.

        English: 1 per word (the word lists keep one-token words). Chinese
        without a tokenizer: 1 per character (bert-base-chinese). Chinese with
        a tokenizer: its pieces, less a bare word-start marker (``▁``) after
        the first word, since only a query's start gets one.
        """
        key = (word, first)
        if key not in self._pieces:
            if self.language == "en":
                n = len(word.split())
            elif self.tokenizer is None:
                n = len(word)
            else:
                toks = self.tokenizer.tokenize(word)
                bare_marker = bool(toks) and self.tokenizer.convert_tokens_to_string(toks[:1]).strip() == ""
                n = len(toks) - (1 if bare_marker and not first else 0)
            self._pieces[key] = n
        return self._pieces[key]

    def _item(self, item: str) -> tuple[bool, str, str]:
        """``(optional, kind, name)``, kind one of "word" (a literal), "symbol", "list"."""
        optional = item.endswith("?")
        item = item[:-1] if optional else item
        if "/" in item:
            return optional, "word", item
        return optional, ("symbol" if item in self.grammar else "list"), item

    def _options(self, item: str, started: bool, need: int) -> dict[int, float]:
        """Length (in pieces, at most ``need``) -> probability of what one rule item adds (skips included)."""
        key = ("options", item, started, need)
        if key not in self._memo:
            self._memo[key] = self._item_lengths(item, started, need)
        return self._memo[key]

    def _item_lengths(self, item: str, started: bool, need: int) -> dict[int, float]:
        optional, kind, name = self._item(item)
        if kind == "word":
            dist = {self.pieces(name.split("/")[0], not started): 1.0}
        elif kind == "symbol":
            dist = {n: p for n in range(need + 1) if (p := self._symbol_prob(name, started, n)) > 0}
        else:
            words = self.words[name][1]
            dist = {}
            for w in words:
                n = self.pieces(w, not started)
                dist[n] = dist.get(n, 0.0) + 1.0 / len(words)
        if optional:
            dist = {n: p * KEEP_OPTIONAL for n, p in dist.items()}
            dist[0] = dist.get(0, 0.0) + (1.0 - KEEP_OPTIONAL)
        return {n: p for n, p in dist.items() if n <= need}

    def _rest(self, items: tuple[str, ...], j: int, started: bool, need: int) -> float:
        """Probability that ``items[j:]`` add exactly ``need`` pieces."""
        key = (items, j, started, need)
        if key in self._memo:
            return self._memo[key]
        if j == len(items):
            p = 1.0 if need == 0 else 0.0
        else:
            p = sum(q * self._rest(items, j + 1, started or n > 0, need - n)
                    for n, q in self._options(items[j], started, need).items())
        self._memo[key] = p
        return p

    def _symbol_prob(self, symbol: str, started: bool, need: int) -> float:
        """Probability that ``symbol`` expands to exactly ``need`` pieces (the grammar may
        recurse: every cycle through ``Q`` passes required words first, so ``need`` shrinks)."""
        key = ("symbol", symbol, started, need)
        if key not in self._memo:
            rules = self._rules[symbol]
            self._memo[key] = sum(self._rest(r, 0, started, need) for r in rules) / len(rules)
        return self._memo[key]

    def draw_exact(self, rng: random.Random) -> list[tuple[str, str]] | None:
        """One expansion of the grammar with exactly ``n_tokens`` pieces (by :meth:`pieces`), drawn
        directly: the distribution of :meth:`draw` given that length, without rejecting any draw.

        Each choice (rule, optional part kept or not, word) is made with its
        grammar probability times the probability that the rest can still
        reach the length, which is Bayes' rule for the conditioned draw.
        None when no expansion has that length.
        """
        if self._symbol_prob("Q", False, self.n_tokens) <= 0:
            return None
        out: list[tuple[str, str]] = []
        self._expand_exact("Q", False, self.n_tokens, rng, out)
        return out

    def _choice(self, key: tuple, make) -> tuple[list, list[float]]:
        """Cached ``(choices, cumulative weights)`` for one decision of the conditioned draw."""
        if key not in self._memo:
            choices, weights = make()
            self._memo[key] = (choices, list(itertools.accumulate(weights)))
        return self._memo[key]

    def _expand_exact(self, symbol: str, started: bool, need: int, rng: random.Random,
                      out: list[tuple[str, str]]) -> None:
        rules = self._rules[symbol]
        choices, cum = self._choice(("rule", symbol, started, need),
                                    lambda: (rules, [self._rest(r, 0, started, need) for r in rules]))
        items = rng.choices(choices, cum_weights=cum)[0]
        for j, item in enumerate(items):
            def make(j=j, item=item, started=started, need=need):
                options = self._options(item, started, need)
                return list(options), [q * self._rest(items, j + 1, started or n > 0, need - n)
                                       for n, q in options.items()]
            choices, cum = self._choice(("item", items, j, started, need), make)
            n = rng.choices(choices, cum_weights=cum)[0]
            if n > 0:
                self._emit(item, started, n, rng, out)
                started = True
            need -= n

    def _emit(self, item: str, started: bool, n: int, rng: random.Random, out: list[tuple[str, str]]) -> None:
        """Add what ``item`` produces with exactly ``n`` pieces."""
        _optional, kind, name = self._item(item)
        if kind == "word":
            out.append(tuple(name.split("/")))
        elif kind == "symbol":
            self._expand_exact(name, started, n, rng, out)
        else:
            key = ("words", name, started, n)
            if key not in self._memo:
                self._memo[key] = [w for w in self.words[name][1] if self.pieces(w, not started) == n]
            out.append((rng.choice(self._memo[key]), self.words[name][0]))

    def _text(self, words: list[tuple[str, str]]) -> str:
        return ("" if self.language == "zh" else " ").join(w for w, _tag in words)

    def _tags(self, words: list[tuple[str, str]]) -> list[str]:
        """One tag per token (piece): each word's tag repeated over its pieces."""
        return [t for k, (w, t) in enumerate(words) for _piece in range(self.pieces(w, k == 0))]

    def __iter__(self) -> Iterator[str]:
        """Yield distinct queries of the right length until ``max_tries`` misses in a row."""
        rng = random.Random(class_setting.student_seed(self.seed))  # per student in a class
        seen: set[str] = set()   # the queries yielded
        misses = 0
        batch: dict[str, list[str]] = {}   # text -> tags, waiting for the tokenizer
        while misses < self.max_tries:
            words = self.draw_exact(rng)
            if words is None:
                return
            text = self._text(words)
            if text in seen or text in batch:
                self.duplicates += 1
                misses += 1
                continue
            misses = 0
            batch[text] = self._tags(words)
            if len(batch) >= 256:
                yield from self._verified(batch, seen)
                batch = {}
        yield from self._verified(batch, seen)

    def _verified(self, batch: dict[str, list[str]], seen: set[str]) -> Iterator[str]:
        texts = list(batch)
        if self.tokenizer is not None and texts:
            lengths = [len(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]
        else:
            lengths = [self.n_tokens] * len(texts)
        for (text, tags), n in zip(batch.items(), lengths):
            if n != self.n_tokens:
                self.wrong_length += 1
                continue
            seen.add(text)
            for counter, tag in zip(self.roles, tags):
                counter[tag] += 1
            self.produced += 1
            yield text

    def take(self, n: int) -> list[str]:
        """The first ``n`` queries as a list; ValueError if fewer exist at this length."""
        out = list(itertools.islice(iter(self), check_positive_int(n, "n")))
        if len(out) < n:
            raise ValueError(_("only {made} distinct {language} queries of {n_tokens} tokens "
                               "could be made ({n} asked): try another length or a larger vocabulary").format(
                made=len(out), language=self.language, n_tokens=self.n_tokens, n=n))
        return out

    def role_shares(self) -> list[float]:
        """Per token position, the share of produced queries holding the most common tag there.

        1.0 at a position means every query has the same part of speech there;
        the template corpus comes close to that, this one should not.
        """
        return [max(c.values()) / sum(c.values()) if c else float("nan") for c in self.roles]

    def report(self) -> str:
        """One line: how many queries, repeats skipped and wrong lengths dropped."""
        return _("{n} distinct {language} queries of {k} tokens from the phrase grammar ({d} repeats and {w} wrong "
                 "lengths skipped)").format(n=self.produced, language=self.language, k=self.n_tokens,
                                            d=self.duplicates, w=self.wrong_length)


# --------------------------------------------------------------------------- the control: no content


def vocabulary_pieces(tokenizer: Any, *, chunk: int = 4096) -> list[str]:
    """Pieces of ``tokenizer``'s vocabulary that stand alone as one token.

    Special tokens, ``[unused...]`` slots, continuation pieces (``##ing``),
    punctuation and anything that does not tokenise back to itself are left out.
    The candidates are tokenised ``chunk`` at a time: the ids of a whole
    250,000-piece vocabulary at once took 170 MB, for a moment.
    """
    chunk = check_positive_int(chunk, "chunk")
    specials = set(getattr(tokenizer, "all_special_tokens", []))
    pieces = [p for p in tokenizer.get_vocab()
              if p not in specials and not p.startswith(("##", "[", "<")) and p.isalnum() and p.strip() == p]
    pieces.sort()
    kept = []
    for start in range(0, len(pieces), chunk):
        part = pieces[start : start + chunk]
        ids = tokenizer(part, add_special_tokens=False, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]
        kept.extend(p for p, row in zip(part, ids) if len(row) == 1)
    return kept


def random_token_queries(m: LoadedModel, n: int, n_tokens: int | None = None, *, seed: int = 0) -> Iterator[str]:
    """The control set: ``n`` strings of ``n_tokens`` random vocabulary pieces, no content at all.

    Each piece is drawn uniformly from :func:`vocabulary_pieces` of ``m``'s
    tokenizer (found once per model, :func:`attnlab.core.memo.memo`), pieces
    separated by spaces (a character-level Chinese tokenizer ignores them); every string is re-tokenised and kept only with
    exactly ``n_tokens`` tokens. Averaged like the real queries, they show
    how "fixed" a head looks when nothing in the input means anything.
    """
    n = check_positive_int(n, "n (number of strings)")
    n_tokens = check_positive_int(DEFAULT_N_TOKENS if n_tokens is None else n_tokens, "n_tokens")
    pieces = memo(m, "vocabulary pieces", (), lambda: vocabulary_pieces(m.tokenizer))
    if len(pieces) < 2:
        raise ValueError(_("{model}'s vocabulary has fewer than 2 stand-alone pieces: no control set").format(
            model=m.name))
    rng = random.Random(class_setting.student_seed(seed))  # per student in a class
    made = 0
    while made < n:
        batch = [" ".join(rng.choice(pieces) for _token in range(n_tokens)) for _query in range(min(256, n - made))]
        for text, ids in zip(batch, m.tokenizer(batch, add_special_tokens=False)["input_ids"]):
            if len(ids) == n_tokens and made < n:
                made += 1
                yield text


# --------------------------------------------------------------------------- the lessons' entry point

#: Corpora of :func:`same_length_queries`.
CORPORA = ("varied", "templates")


def same_length_queries(m: LoadedModel, n: int, n_tokens: int | None = None, *, seed: int = 0,
                        corpus: str = "varied") -> Iterator[str]:
    """A generator of ``n`` distinct queries in ``m``'s language, verified with its tokenizer.

    Args:
        m: the model whose language and tokenizer decide the queries.
        n: how many queries.
        n_tokens: tokens per query without [CLS]/[SEP] (default :data:`DEFAULT_N_TOKENS`).
        seed: the generator's seed.
        corpus: ``"varied"`` (:class:`VariedQueryGenerator`, roles move between
            positions) or ``"templates"`` (:class:`QueryGenerator`, one role per slot).

    Lazy: nothing is materialised, so it can feed :func:`attnlab.mean_attention`
    directly. Raises ValueError (when exhausted) if fewer than ``n`` exist.
    """
    n = check_positive_int(n, "n (number of queries)")
    if corpus not in CORPORA:
        raise ValueError(_("corpus must be one of {corpora}, got {corpus!r}").format(corpora=CORPORA, corpus=corpus))
    n_tokens = DEFAULT_N_TOKENS if n_tokens is None else n_tokens
    make = VariedQueryGenerator if corpus == "varied" else QueryGenerator
    gen = make(m.language, n_tokens, seed=seed, tokenizer=m.tokenizer)
    count = 0
    for text in itertools.islice(iter(gen), n):
        count += 1
        yield text
    if count < n:
        raise ValueError(_("only {made} distinct queries of {n_tokens} tokens could be made ({n} asked)").format(
            made=count, n_tokens=n_tokens, n=n))
