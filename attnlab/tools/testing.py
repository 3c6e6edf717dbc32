"""Tiny random BERT-family models for tests, exercises and offline demos.

They are built in code, saved with ``save_pretrained`` and reloaded like any
local model, so the whole loading path is exercised without a model hub.

* :func:`english_vocab` — a small word-piece vocabulary.
* :func:`chinese_vocab` — a character-level vocabulary shaped like
  ``bert-base-chinese`` (special tokens, then one entry per character).
* :func:`save_tiny_model` — a random model of a given architecture, 12 heads
  by default (like ``bert-base-chinese``) with a small hidden size.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnlab.core.models import quiet_transformers

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

_EN_WORDS = (
    "how do you play chess the a an is are what why where when who can i we to of in on for "
    "with and or not this that it game games best way learn rules move moves piece pieces board "
    "king queen win lose start good bad new old big small fast slow make get go see look find "
    "use work time day night people music song book movie phone water food city home school "
    "teacher student question answer head heads attention model word words token tokens layer"
).split()
_EN_PIECES = ["##s", "##ing", "##ed", "##er", "##ly", "##tion", "##a", "##e", "##i", "##o", "##n", "##t"]
_EN_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789") + [".", ",", "?", "!", "'", "-"]

# Common characters of search-style Chinese queries; the example query's first.
_ZH_CHARS = (
    "王者荣耀怎么玩手机游戏好看电影音乐推荐今天天气如何做菜的是在了不和有大小人我你他这那个"
    "什为吗呢吧去来上下中国北京上海学习英语数学考试工作哪里最新免费下载视频小说歌曲图片价格多少"
    "钱买卖车房子医院感冒发烧吃药减肥运动健身跑步篮球足球比赛直播新闻体育明星旅游攻略酒店机票"
    "火车时间地址电话号码怎样才能可以如果因为所以但是还是或者已经正在一二三四五六七八九十年月日"
    "春夏秋冬早晚饭水果蔬菜米面包牛奶咖啡茶猫狗鸟鱼花树山河海风雨雪电脑软件系统网络密码账号"
)


def english_vocab() -> list[str]:
    """A small English word-piece vocabulary (special tokens first)."""
    return SPECIALS + _EN_WORDS + _EN_PIECES + _EN_CHARS + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]


def chinese_vocab() -> list[str]:
    """A character-level Chinese vocabulary laid out like ``bert-base-chinese``."""
    seen: list[str] = []
    for ch in _ZH_CHARS:
        if ch not in seen:
            seen.append(ch)
    return SPECIALS + list("0123456789?!,.") + ["，", "。", "？", "！"] + seen


def _config(arch: str, vocab_size: int, n_layers: int, n_heads: int, hidden: int, max_positions: int):
    from transformers import AlbertConfig, BertConfig, DistilBertConfig, ElectraConfig, RobertaConfig

    common = dict(vocab_size=vocab_size, pad_token_id=0)
    if arch == "bert":
        return BertConfig(hidden_size=hidden, num_attention_heads=n_heads, num_hidden_layers=n_layers,
                          intermediate_size=2 * hidden, max_position_embeddings=max_positions, **common)
    if arch == "roberta":
        return RobertaConfig(hidden_size=hidden, num_attention_heads=n_heads, num_hidden_layers=n_layers,
                             intermediate_size=2 * hidden, max_position_embeddings=max_positions + 2,
                             type_vocab_size=1, bos_token_id=2, eos_token_id=3, **common)
    if arch == "distilbert":
        return DistilBertConfig(dim=hidden, n_heads=n_heads, n_layers=n_layers, hidden_dim=2 * hidden,
                                max_position_embeddings=max_positions, **common)
    if arch == "albert":
        return AlbertConfig(embedding_size=16, hidden_size=hidden, num_attention_heads=n_heads,
                            num_hidden_layers=n_layers, intermediate_size=2 * hidden,
                            max_position_embeddings=max_positions, **common)
    if arch == "electra":
        return ElectraConfig(embedding_size=16, hidden_size=hidden, num_attention_heads=n_heads,
                             num_hidden_layers=n_layers, intermediate_size=2 * hidden,
                             max_position_embeddings=max_positions, **common)
    raise ValueError(f"unknown architecture {arch!r}: use bert, roberta, distilbert, albert or electra")


ARCHITECTURES = ("bert", "roberta", "distilbert", "albert", "electra")


def save_tiny_model(
    path: str | Path,
    *,
    arch: str = "bert",
    language: str = "en",
    n_layers: int = 2,
    n_heads: int = 12,
    hidden: int = 48,
    max_positions: int = 64,
    seed: int = 0,
    mlm_head: bool = False,
) -> Path:
    """Build a random model and its tokenizer and save both to ``path``.

    Args:
        arch: ``bert``, ``roberta``, ``distilbert``, ``albert`` or ``electra``.
        language: ``"en"`` (word pieces) or ``"zh"`` (one token per character).
        n_heads: 12 by default, like ``bert-base-chinese``; ``hidden`` must be
            divisible by it.
        mlm_head: save a masked-language-model head too (``...ForMaskedLM``).

    Returns:
        The folder, ready for ``attnlab.load_model(path)``.
    """
    from transformers import AutoModel, AutoModelForMaskedLM, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = chinese_vocab() if language == "zh" else english_vocab()
    tokenizer = BertTokenizer(
        vocab={tok: i for i, tok in enumerate(vocab)},
        do_lower_case=True,
        tokenize_chinese_chars=True,
        model_max_length=max_positions,
    )
    cfg = _config(arch, len(vocab), n_layers, n_heads, hidden, max_positions)
    torch.manual_seed(seed)
    factory = AutoModelForMaskedLM if mlm_head else AutoModel
    model = factory.from_config(cfg)
    with quiet_transformers():
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return path
