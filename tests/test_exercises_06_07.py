"""Exercise checkers of lessons 06 and 07: 'not yet' for None, right for the truth, wrong otherwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis import compare
from attnlab.analysis.position import position_study
from attnlab.data import corpus
from attnlab.course.exercises import lesson_06 as ex6
from attnlab.course.exercises import lesson_07 as ex7

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own


@pytest.fixture(scope="module")
def study_zh(tiny_zh):
    return compare.perturbation_study(tiny_zh, corpus.queries("zh", 6))


def test_none_is_not_yet(tiny_zh, study_zh):
    for verdict in (
        ex6.check_token_permutation(tiny_zh, None),
        ex6.check_most_sensitive_head(tiny_zh, None, study=study_zh),
        ex6.check_position_follower_share(tiny_zh, None, study=study_zh),
        ex7.check_embedding_without_positions(tiny_zh, None),
        ex7.check_order_matters(tiny_zh, None),
        ex7.check_most_position_dependent_head(tiny_zh, None),
    ):
        assert not verdict and "not yet" in str(verdict)


def test_token_permutation_exercise(tiny_zh):
    # 怎么玩王者荣耀: written out by hand
    assert ex6.check_token_permutation(tiny_zh, [0, 5, 6, 7, 1, 2, 3, 4, 8])
    assert not ex6.check_token_permutation(tiny_zh, list(range(9)))


def test_sensitive_head_and_share(tiny_zh, study_zh):
    sens = study_zh.sensitivity("lexical", "position").estimate
    layer, head = np.unravel_index(int(np.argmax(sens)), sens.shape)
    assert ex6.check_most_sensitive_head(tiny_zh, (int(layer), int(head)), study=study_zh)
    assert not ex6.check_most_sensitive_head(tiny_zh, "L1H1", study=study_zh)
    share = float(np.mean(study_zh.followers("both") == "position"))
    assert ex6.check_position_follower_share(tiny_zh, share, study=study_zh)
    assert not ex6.check_position_follower_share(tiny_zh, share + 0.2, study=study_zh)


def test_lesson_07_checkers(tiny_en):
    emb = tiny_en.model.embeddings
    enc = tiny_en.encode(["how do you play chess"])
    with torch.no_grad():
        x = emb.word_embeddings(enc["input_ids"]) + emb.token_type_embeddings(enc["token_type_ids"])
        answer = torch.nn.functional.layer_norm(x, x.shape[-1:], emb.LayerNorm.weight, emb.LayerNorm.bias,
                                                emb.LayerNorm.eps)[0].numpy()
    assert ex7.check_embedding_without_positions(tiny_en, answer)
    assert not ex7.check_embedding_without_positions(tiny_en, answer + 0.1)
    assert ex7.check_order_matters(tiny_en, False)
    assert not ex7.check_order_matters(tiny_en, True)
    assert not ex7.check_order_matters(tiny_en, "no")
    study = position_study(tiny_en, corpus.texts("en", 5), interventions=("zero",))
    change = 1 - study.similarity["zero"].mean(axis=0)
    layer, head = np.unravel_index(int(np.argmax(change)), change.shape)
    assert ex7.check_most_position_dependent_head(tiny_en, (layer, head), study=study)
    wrong = ((layer + 1) % change.shape[0], head)
    assert not ex7.check_most_position_dependent_head(tiny_en, wrong, study=study)
