"""Lesson 13's claim code end to end on a model laid out like ``bert-base-chinese``.

The model is small and random (2 layers x 12 heads), but its tokenizer has the
article model's layout: one piece per Chinese character, ``[CLS]``/``[SEP]`` at
ids 101/102, a vocabulary built from the texts below. Every analysis of the lesson
runs on it and every one of its eleven claims answers with one of the three words,
never a crash; the separator share is measured on ``[SEP]`` alone.
"""

from __future__ import annotations

import pytest

import attnlab as al
from attnlab.analysis.faithfulness import scoreboard
from attnlab.analysis.mean_map_replacement import mean_map_replacement, replace_together
from attnlab.analysis.sinks import sink_intervention, sink_profile
from attnlab.course.claims import attention_limits as claims
from attnlab.course.verdicts import UNSURE, WORDS
from attnlab.tools.testing import save_bert_chinese_like

# eight-character queries (10 tokens with [CLS] and [SEP]), so their maps can be averaged
TEXTS = ["王者荣耀怎么玩好", "今天天气怎么样呢", "我想学习打篮球了", "这个游戏很好玩吗",
         "明天我们去爬山吧", "晚饭吃什么比较好", "怎么学好数学题目", "周末去看一场电影",
         "手机没电了怎么办", "哪里可以买到书包", "春天的花开得很好", "他每天早上跑步去"]


@pytest.fixture(scope="module")
def article_model(tmp_path_factory):
    folder = save_bert_chinese_like(tmp_path_factory.mktemp("bbc"), texts=TEXTS)
    return al.load_model(str(folder), verbose=False)


def test_lesson_13_claims_run_on_a_bert_base_chinese_shaped_model(article_model):
    m = article_model
    assert (m.n_heads, m.cls_token, m.sep_token) == (12, "[CLS]", "[SEP]")
    assert all(len(m.tokenizer.tokenize(t)) == 8 for t in TEXTS)  # one piece per character

    profile = sink_profile(m, TEXTS)
    intervention = sink_intervention(m, TEXTS)
    board = scoreboard(m, TEXTS)
    mean = al.mean_attention(m, TEXTS[:8], progress=False)
    replacement = mean_map_replacement(m, TEXTS[8:], mean)
    together = replace_together(m, TEXTS[8:], mean, n_random=3, steps=4)

    verdicts = claims.verdicts(profile, intervention, board, replacement, together)
    assert len(verdicts) == 11
    assert all(v.verdict in WORDS for v in verdicts.values())
    # 4 held-out texts and 12 scored queries are fewer units than deciding needs: the interval-based
    # claims must say so rather than decide
    assert verdicts[claims.HEADS_TOGETHER].verdict == UNSURE
