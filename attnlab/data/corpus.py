"""Built-in query sets: search-style queries in Chinese and English.

The source article's experiments need many short queries of the kind people
type into a search box (``王者荣耀怎么玩``). No data set can be downloaded in a
classroom, so the course generates them from templates and a small lexicon
written for it. Generation is deterministic: the same ``seed`` always gives the
same list, in the same order, on every machine.

Every :class:`Query` carries its **words** (the units the lexical perturbation
breaks) and its **chunks** (the constituents the syntactic perturbation moves):

* Chinese: words are lexicon words of one or more characters; they concatenate
  to the text. ``王者荣耀怎么玩`` is ``("王者荣耀", "怎么", "玩")`` with chunks
  ``王者荣耀 | 怎么玩``.
* English: words are *lexical units* of one or more space-separated tokens,
  joined by single spaces to give the text. Multi-word units are fixed
  expressions and compounds (``"how do you"``, ``"ice cream"``): the English
  analogue of a Chinese multi-character word, because in an English model
  each of their words is one token, just as each Chinese character is. Words
  were chosen to be single tokens of a BERT uncased vocabulary;
  :func:`token_report` checks this for any tokenizer.

Typical use::

    from attnlab import corpus
    qs = corpus.queries("zh", n=1000, seed=0)
    qs[0].text, qs[0].words, qs[0].chunks
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Iterable, Sequence

from attnlab.core import class_setting
from attnlab.core.language import _

LANGUAGES = ("zh", "en")


@dataclass(frozen=True)
class Query:
    """One query with its word segmentation and movable constituents.

    Attributes:
        text: the query as typed.
        words: lexical units in order; ``"".join(words) == text`` for Chinese,
            ``" ".join(words) == text`` for English.
        chunks: constituents as half-open word-index spans ``(start, end)``
            covering all words in order, e.g. ``((0, 1), (1, 3))``.
        language: ``"zh"`` or ``"en"``.
        family: the template family the query came from (for reports).
    """

    text: str
    words: tuple[str, ...]
    chunks: tuple[tuple[int, int], ...] = ()
    language: str = "zh"
    family: str = ""

    def __post_init__(self) -> None:
        joiner = "" if self.language == "zh" else " "
        if joiner.join(self.words) != self.text:
            raise ValueError(
                f"words {list(self.words)} do not spell {self.text!r} "
                f"(joined with {joiner!r}); fix the segmentation."
            )
        if self.chunks:
            check_chunks(self.chunks, len(self.words))

    @property
    def joiner(self) -> str:
        """What goes between words: ``""`` for Chinese, ``" "`` for English."""
        return "" if self.language == "zh" else " "

    def chunk_words(self) -> list[tuple[str, ...]]:
        """The words of each chunk."""
        return [self.words[s:e] for s, e in self.chunks]


def check_chunks(chunks: Sequence[tuple[int, int]], n_words: int) -> None:
    """Raise ValueError unless ``chunks`` are contiguous spans covering ``0..n_words``."""
    pos = 0
    for s, e in chunks:
        if s != pos or e <= s:
            raise ValueError(
                f"chunks {list(chunks)} must be contiguous non-empty (start, end) word spans "
                f"covering all {n_words} words in order"
            )
        pos = e
    if pos != n_words:
        raise ValueError(f"chunks {list(chunks)} cover {pos} words, the query has {n_words}")


# --------------------------------------------------------------------------- Chinese lexicon
# Each slot filler is a tuple of words (one lexical unit or a short phrase).

_ZH_GAMES = [
    ("王者荣耀",), ("英雄联盟",), ("和平精英",), ("原神",), ("我的世界",), ("开心消消乐",),
    ("斗地主",), ("象棋",), ("围棋",), ("五子棋",), ("俄罗斯方块",), ("贪吃蛇",), ("炉石传说",),
    ("穿越火线",), ("梦幻西游",), ("阴阳师",), ("第五人格",), ("蛋仔派对",), ("麻将",),
    ("跳一跳",), ("狼人杀",), ("剧本杀",), ("植物大战僵尸",), ("魔兽世界",),
]
_ZH_GAME_VERBS = [
    ("怎么", "玩"), ("怎么", "上分"), ("怎么", "下载"), ("怎么", "充值"), ("怎么", "退款"),
    ("如何", "入门"), ("怎么", "组队"), ("怎么", "改名"), ("如何", "快速", "升级"), ("怎么", "注销"),
]
_ZH_DISHES = [
    ("红烧肉",), ("西红柿", "炒", "鸡蛋"), ("糖醋", "排骨"), ("宫保鸡丁",), ("麻婆豆腐",),
    ("酸菜鱼",), ("可乐", "鸡翅"), ("蛋炒饭",), ("水煮", "牛肉"), ("饺子",), ("包子",),
    ("蛋糕",), ("面包",), ("月饼",), ("火锅", "底料"), ("凉拌", "黄瓜"), ("土豆丝",), ("回锅肉",),
]
_ZH_COOK = [("怎么", "做"), ("怎么", "做", "好吃"), ("的", "做法"), ("家常", "做法")]
_ZH_CITIES = [
    ("北京",), ("上海",), ("广州",), ("深圳",), ("成都",), ("杭州",), ("西安",), ("重庆",),
    ("南京",), ("武汉",), ("长沙",), ("苏州",), ("厦门",), ("青岛",), ("大连",), ("昆明",),
]
_ZH_CITY_TOPICS = {  # topic -> fitting question tails
    ("天气",): [("怎么样",), ("冷", "不", "冷")],
    ("房价",): [("怎么样",), ("多少", "钱"), ("还", "会", "涨", "吗")],
    ("美食",): [("有哪些",), ("推荐",)],
    ("景点",): [("有哪些",), ("推荐",)],
    ("地铁", "线路"): [("怎么", "查"),],
    ("租房",): [("贵", "不", "贵"), ("多少", "钱")],
    ("工资", "水平"): [("怎么样",), ("高", "吗")],
    ("大学",): [("有哪些",), ("排名",)],
    ("夜景",): [("在", "哪里", "看"),],
}
_ZH_SYMPTOMS = [
    ("感冒",), ("发烧",), ("咳嗽",), ("头疼",), ("失眠",), ("胃疼",), ("嗓子", "疼"), ("拉肚子",),
    ("牙疼",), ("过敏",), ("便秘",), ("上火",),
]
_ZH_TREAT = [("吃", "什么", "药"), ("怎么", "办"), ("吃", "什么", "好"), ("怎么", "缓解"), ("要", "注意", "什么")]
_ZH_PRODUCTS = [
    ("手机",), ("笔记本", "电脑"), ("耳机",), ("空调",), ("洗衣机",), ("冰箱",), ("电动", "牙刷"),
    ("扫地", "机器人"), ("电饭煲",), ("跑步鞋",), ("护肤品",), ("奶粉",), ("吸尘器",), ("投影仪",),
]
_ZH_PICK = [("哪个", "牌子", "好"), ("怎么", "选"), ("推荐",), ("排行榜",), ("多少", "钱"), ("哪款", "性价比", "高")]
_ZH_PRICE = [("一千", "元"), ("两千", "元"), ("三千", "元"), ("五千", "元")]
_ZH_SKILLS = [
    ("吉他",), ("钢琴",), ("英语",), ("日语",), ("游泳",), ("素描",), ("书法",), ("编程",),
    ("摄影",), ("瑜伽",), ("滑雪",), ("围棋",), ("化妆",), ("跳舞",), ("驾照",), ("数学",),
]
_ZH_LEARN = [("入门", "教程"), ("自学", "方法"), ("怎么", "学"), ("难", "不", "难"), ("从", "零", "开始"), ("学习", "技巧")]
_ZH_TERMS = [
    ("内卷",), ("躺平",), ("区块链",), ("元宇宙",), ("人工智能",), ("通货膨胀",), ("量子",),
    ("碳中和",), ("基因",), ("黑洞",), ("光年",), ("算法",), ("社保",), ("公积金",),
]
_ZH_MEAN = [("是", "什么", "意思"), ("是", "什么"), ("的", "原理"), ("有", "什么", "用")]
_ZH_SHOWS = [
    ("流浪地球",), ("西游记",), ("红楼梦",), ("甄嬛传",), ("三体",), ("哪吒",), ("庆余年",),
    ("狂飙",), ("琅琊榜",), ("长安", "十二", "时辰"), ("大话西游",), ("熊出没",),
]
_ZH_WATCH = [("在", "哪里", "看"), ("好看", "吗"), ("讲", "的", "什么"), ("结局", "是", "什么"), ("有", "几", "集")]
_ZH_DEVICES = [("手机",), ("电脑",), ("路由器",), ("打印机",), ("平板",), ("电视",), ("微信",), ("网络",)]
_ZH_PROBLEMS = [("很", "卡"), ("连", "不", "上"), ("没有", "声音"), ("老是", "死机"), ("充", "不", "进", "电"), ("很", "慢")]
_ZH_PEOPLE = [("孩子",), ("老人",), ("孕妇",), ("学生",), ("上班族",), ("小狗",), ("小猫",)]
_ZH_NEEDS = [
    ("吃", "什么", "水果"), ("适合", "什么", "运动"), ("每天", "睡", "多久"), ("喝", "什么", "牛奶"),
    ("能", "吃", "辣", "吗"), ("需要", "补", "钙", "吗"),
]
_ZH_TRIPS = [("高铁",), ("飞机",), ("自驾",), ("大巴",)]
_ZH_ROUTE = [("多久",), ("多少", "钱"), ("怎么", "买票")]


def _zh_two_part(family: str, heads: list[tuple[str, ...]], tails: list[tuple[str, ...]],
                 middle: tuple[str, ...] = ()) -> list[Query]:
    """Queries ``head + middle + tail`` with chunks ``head+middle | tail``."""
    out = []
    for head, tail in itertools.product(heads, tails):
        words = head + middle + tail
        cut = len(head) + len(middle)
        out.append(Query("".join(words), words, ((0, cut), (cut, len(words))), "zh", family))
    return out


def _zh_family_city() -> list[Query]:
    # 北京的天气怎么样  ->  chunks 北京的天气 | 怎么样
    out = []
    pairs = [(topic, how) for topic, hows in _ZH_CITY_TOPICS.items() for how in hows]
    for city, (topic, how) in itertools.product(_ZH_CITIES, pairs):
        words = city + ("的",) + topic + how
        cut = len(words) - len(how)
        out.append(Query("".join(words), words, ((0, cut), (cut, len(words))), "zh", "city"))
    return out


def _zh_family_route() -> list[Query]:
    # 北京到上海高铁多久 -> chunks 北京到上海 | 高铁多久
    out = []
    for (a,), (b,) in itertools.permutations(_ZH_CITIES[:6], 2):
        for trip, route in itertools.product(_ZH_TRIPS, _ZH_ROUTE):
            words = (a, "到", b) + trip + route
            out.append(Query("".join(words), words, ((0, 3), (3, len(words))), "zh", "route"))
    return out


def _zh_family_price() -> list[Query]:
    # 三千元手机推荐 -> chunks 三千元 | 手机推荐 (the price phrase moves)
    out = []
    for price, prod in itertools.product(_ZH_PRICE, _ZH_PRODUCTS):
        words = price + ("左右", "的") + prod + ("推荐",)
        out.append(Query("".join(words), words, ((0, 4), (4, len(words))), "zh", "price"))
    return out


def _chinese_queries() -> list[Query]:
    families = [
        _zh_two_part("game", _ZH_GAMES, _ZH_GAME_VERBS),
        _zh_two_part("cook", _ZH_DISHES, _ZH_COOK),
        _zh_family_city(),
        _zh_two_part("health", _ZH_SYMPTOMS, _ZH_TREAT),
        _zh_two_part("shop", _ZH_PRODUCTS, _ZH_PICK),
        _zh_two_part("learn", _ZH_SKILLS, _ZH_LEARN),
        _zh_two_part("define", _ZH_TERMS, _ZH_MEAN),
        _zh_two_part("watch", _ZH_SHOWS, _ZH_WATCH),
        _zh_two_part("fix", [("我的",) + d for d in _ZH_DEVICES], _ZH_PROBLEMS, ),
        _zh_two_part("care", _ZH_PEOPLE, _ZH_NEEDS),
        _zh_family_route(),
        _zh_family_price(),
    ]
    return _interleave(families)


# --------------------------------------------------------------------------- English lexicon
# Multi-word entries written with a space ("ice cream") are one lexical unit;
# entries given as tuples are separate words.

_EN_GAMES = ["chess", "poker", "golf", "tennis", "cricket", "baseball", "hockey", "basketball",
             "rugby", "volleyball", "badminton", "bowling", "darts", "monopoly", "soccer",
             "table tennis", "video games", "card games", "board games"]
_EN_INSTRUMENTS = ["the piano", "the guitar", "the drums", "the violin", "the flute", "the cello",
                   "the harp", "electric guitar", "bass guitar"]
_EN_DISHES = ["pizza", "bread", "soup", "salad", "curry", "noodles", "pancakes", "cookies", "pasta",
              "steak", "fried rice", "ice cream", "chicken soup", "apple pie", "birthday cake",
              "orange juice", "green tea", "hot chocolate", "peanut butter", "french fries",
              "hot dogs", "banana bread", "potato salad", "chocolate cake"]
_EN_FIX = ["a flat tire", "a leaking roof", "the kitchen sink", "a broken phone", "the washing machine",
           "a slow computer", "the air conditioning", "a broken zipper", "the car radio",
           "a stuck door", "the shower head", "a broken window", "a broken chair", "the front door"]
_EN_BUY = ["ice cream", "running shoes", "a winter coat", "a road bike", "solar panels",
           "an electric car", "a gaming computer", "a yoga mat", "dog food", "cat food",
           "a coffee table", "olive oil", "golf clubs", "guitar strings", "a used car",
           "train tickets", "concert tickets", "a phone case", "fresh fish", "cheap flights",
           "a birthday cake", "green tea", "a sofa bed", "a desk lamp"]
_EN_PLACES = ["new york", "london", "paris", "tokyo", "chicago", "boston", "texas", "california",
              "los angeles", "hong kong", "san francisco", "my area", "the city", "this town",
              "seattle", "berlin", "rome", "sydney"]
_EN_BEST = ["pizza", "coffee", "ice cream", "hot dogs", "fried rice", "steak", "noodles", "hotels",
            "restaurants", "high schools", "swimming pools", "museums", "beaches", "parks", "bars",
            "cafes", "coffee shops", "book stores"]
_EN_FOR = {  # things that are good for a group
    "board games": ["kids", "families", "adults", "two players", "small children"],
    "video games": ["kids", "adults", "two players"],
    "books": ["kids", "students", "adults", "new parents", "teenagers"],
    "movies": ["kids", "families", "teenagers", "date night"],
    "toys": ["kids", "dogs", "cats", "small children", "babies"],
    "snacks": ["kids", "dogs", "students", "school lunch", "long trips"],
    "shoes": ["runners", "nurses", "flat feet", "walking", "kids"],
    "phones": ["seniors", "kids", "students", "gaming"],
    "cameras": ["students", "travel", "kids"],
    "jackets": ["winter", "hiking", "kids", "rain"],
    "bikes": ["kids", "adults", "city riding", "long trips"],
    "apps": ["students", "kids", "learning english", "running"],
    "gifts": ["kids", "men", "teachers", "new parents", "friends"],
    "dogs": ["kids", "families", "small apartments", "seniors"],
}
_EN_WHY = {  # device -> plausible complaints
    "phone": ["so slow", "so hot", "not charging", "not working", "so loud"],
    "computer": ["so slow", "so loud", "so hot", "not working", "not starting"],
    "car": ["so loud", "not starting", "so slow", "leaking oil", "making noise"],
    "dog": ["so tired", "not eating", "always hungry", "so loud", "so sad"],
    "cat": ["not eating", "so loud", "always hungry", "so tired"],
    "internet": ["so slow", "not working", "always down"],
    "printer": ["not working", "so slow", "so loud", "not printing"],
    "tv": ["so loud", "not working", "so dark", "so slow"],
    "fridge": ["so loud", "not cold", "leaking water", "making noise"],
    "water bill": ["so high", "so expensive"],
    "credit card": ["not working", "being declined"],
    "baby": ["not sleeping", "always crying", "not eating", "so tired"],
    "garden": ["so dry", "not growing"],
}
_EN_SKILLS = [("speak", "english"), ("speak", "french"), ("speak", "spanish"), ("learn", "japanese"),
              ("draw",), ("paint",), ("sing",), ("dance",), ("swim",), ("run", "faster"),
              ("sleep", "better"), ("save", "money"), ("lose", "weight"), ("write", "code"),
              ("play", "chess"), ("cook", "rice"), ("drive", "a", "car"), ("ride", "a", "bike"),
              ("learn", "math"), ("play", "the guitar"), ("play", "the piano"), ("make", "bread")]
_EN_SKILL_WHERE = ["at home", "for free", "in a week", "as an adult", "on a budget", "every day",
                   "in one month", "without help"]
_EN_EVENTS = ["the world cup", "summer school", "the super bowl", "the new season",
              "the olympics", "tax season", "the school year", "winter break", "spring break",
              "the first game", "the new show", "daylight saving time"]
_EN_WHEN = ["start", "end", "begin"]
_EN_COST = ["new car", "used car", "house", "wedding", "dog", "cat", "passport", "driving test",
            "phone", "computer", "trip to paris", "trip to tokyo", "coffee table", "road bike",
            "gym membership", "piano lesson", "swimming pool"]
_EN_OPEN = ["bank", "post office", "library", "museum", "grocery store", "pharmacy", "gym",
            "swimming pool", "coffee shop", "train station"]
_EN_DAYS = ["today", "on sunday", "on monday", "on saturday", "tomorrow", "this weekend"]


def _en(words: Sequence[str], cut: int, family: str) -> Query:
    words = tuple(words)
    return Query(" ".join(words), words, ((0, cut), (cut, len(words))), "en", family)


def _english_queries() -> list[Query]:
    games_and_instruments = _EN_GAMES + _EN_INSTRUMENTS
    families = [
        # how do you play chess -> chunks "how do you play" | "chess"
        [_en(("how do you", "play", g), 2, "play") for g in games_and_instruments]
        + [_en(("how do you", "get", "better", "at", g), 4, "play") for g in _EN_GAMES]
        + [_en(("how do you", "learn", g), 2, "play") for g in _EN_INSTRUMENTS],
        # how do you make pizza (at home)
        [_en(("how do you", "make", d), 2, "make") for d in _EN_DISHES]
        + [_en(("how do you", "make", d, "at home"), 2, "make") for d in _EN_DISHES]
        + [_en(("what is the", "best", "way", "to", "make", d), 5, "make") for d in _EN_DISHES],
        # how do you fix a flat tire
        [_en(("how do you", v, x), 2, "fix") for v in ("fix", "clean", "repair") for x in _EN_FIX],
        # where can i buy ice cream (in boston) -> "where can i buy" | "ice cream"
        [_en(("where can i", v, b), 2, "buy") for v in ("buy", "find", "get") for b in _EN_BUY]
        + [_en(("where can i", "buy", b, "in", p), 3, "buy") for b in _EN_BUY for p in _EN_PLACES[:6]],
        # what are the best hotels in new york -> "what are the best hotels" | "in new york"
        [_en(("what are the", "best", b, "in", p), 3, "best") for b in _EN_BEST for p in _EN_PLACES],
        [_en(("what are the", "best", g, "for", k), 3, "best") for g, ks in _EN_FOR.items() for k in ks],
        # why is my phone so slow -> "why is my phone" | "so slow"
        [_en(("why is my", d, a), 2, "why") for d, adjs in _EN_WHY.items() for a in adjs],
        # how to speak english at home -> "how to speak english" | "at home"
        [_en(("how to",) + s + (w,), 1 + len(s), "skill") for s in _EN_SKILLS for w in _EN_SKILL_WHERE],
        # when does the world cup start -> "when does the world cup" | "start"
        [_en(("when does", e, w), 2, "when") for e in _EN_EVENTS for w in _EN_WHEN],
        # how much does a new car cost -> "how much does" | "a new car cost"
        [_en(("how much does", "a", c, "cost"), 1, "cost") for c in _EN_COST],
        # what time does the bank open today -> "what time does the bank open" | "today"
        [_en(("what time does", "the", p, "open", d), 4, "open") for p in _EN_OPEN for d in _EN_DAYS],
        # best ice cream near me -> "best ice cream" | "near me"
        [_en((adj, b, "near me"), 2, "near") for adj in ("best", "cheap") for b in _EN_BEST],
    ]
    return _interleave(families)


# --------------------------------------------------------------------------- assembly


def _interleave(families: list[list[Query]]) -> list[Query]:
    """Round-robin over families (each shuffled with a fixed seed), dropping duplicates,
    so that any prefix of the list mixes all families."""
    rng = random.Random(12345)
    pools = []
    for fam in families:
        fam = list(fam)
        rng.shuffle(fam)
        pools.append(fam)
    out, seen = [], set()
    for group in itertools.zip_longest(*pools):
        for q in group:
            if q is not None and q.text not in seen:
                seen.add(q.text)
                out.append(q)
    return out


_CACHE: dict[str, list[Query]] = {}


def all_queries(language: str) -> list[Query]:
    """Every built-in query of ``language`` (``"zh"`` or ``"en"``), in canonical order."""
    if language not in LANGUAGES:
        raise ValueError(_("language must be one of {languages}, got {language!r}").format(
            languages=LANGUAGES, language=language))
    if language not in _CACHE:
        _CACHE[language] = _chinese_queries() if language == "zh" else _english_queries()
    return list(_CACHE[language])


def queries(language: str, n: int | None = None, seed: int = 0) -> list[Query]:
    """A deterministic sample of built-in queries.

    Args:
        language: ``"zh"`` or ``"en"`` (use ``m.language``).
        n: how many; None for all of them.
        seed: shuffling seed; the same seed always gives the same list.

    Returns:
        ``n`` distinct :class:`Query` objects.

    Raises:
        ValueError: unknown language, or ``n`` larger than the built-in set.
    """
    pool = all_queries(language)
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(_("n must be a positive int or None, got {n!r}").format(n=n))
        if n > len(pool):
            raise ValueError(
                _("only {count} built-in {language} queries exist, asked for {n}; "
                  "lower n or bring your own list of texts").format(count=len(pool), language=language, n=n))
    random.Random(class_setting.student_seed(seed)).shuffle(pool)  # per student in a class
    return pool if n is None else pool[:n]


def texts(language: str, n: int | None = None, seed: int = 0) -> list[str]:
    """Just the query strings of :func:`queries`."""
    return [q.text for q in queries(language, n, seed)]


def example(language: str) -> Query:
    """The course's example query with its words and chunks.

    ``王者荣耀怎么玩`` = ``王者荣耀 | 怎么 玩``; its English analogue
    ``how do you play chess`` = ``how do you | play | chess`` with chunks
    ``how do you play | chess``.
    """
    if language == "zh":
        return Query("王者荣耀怎么玩", ("王者荣耀", "怎么", "玩"), ((0, 1), (1, 3)), "zh", "example")
    if language == "en":
        return Query("how do you play chess", ("how do you", "play", "chess"), ((0, 2), (2, 3)), "en", "example")
    raise ValueError(_("language must be one of {languages}, got {language!r}").format(
            languages=LANGUAGES, language=language))


def lexicon(language: str = "zh") -> set[str]:
    """Every word of the built-in queries (for segmenting new Chinese text)."""
    words = {w for q in all_queries(language) for w in q.words}
    words |= set(example(language).words)
    return words


def token_report(tokenizer, qs: Iterable[Query]) -> dict[str, int]:
    """How many tokens each distinct space-separated word becomes under ``tokenizer``.

    Returns ``{word: n_tokens}`` for the words that are *not* a single token,
    so an empty dict means every word is one token.
    """
    words = {w for q in qs for unit in q.words for w in unit.split(" ")}
    return {w: len(tokenizer.tokenize(w)) for w in sorted(words) if len(tokenizer.tokenize(w)) != 1}
