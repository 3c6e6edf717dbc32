"""Lessons 08 and 12 run and save on a model whose heads attend evenly, and lesson 12 on lesson 06's
labels all alike.

The model has ``bert-base-chinese``'s full shape (12 x 12, hidden 768, a
21,128-entry character vocabulary) and random weights
(:func:`attnlab.tools.testing.save_bert_base_chinese_shaped`): its heads spread
their attention almost evenly, so fixedness is NaN for them by design. Lesson
08 must still save its result (NaN is written as null), and lesson 12 must
read it back as saved evidence and judge all conclusions. The seeded record of lesson 06 labels every
head alike (none follows the content): each group comparison must say "cannot tell" with its reason
(a group too small to compare), and nothing crash. Both degenerate cases share one run of lesson 12.

Lesson 12 reads a hand-made twin's evidence, as every lesson-12 run of the
tests does (tests/test_twins.py measures a reduced twin on a tiny model). Time:
64 s alone on a quiet 2-core machine (building the 400 MB folder about 15 s,
then lesson 08 and lesson 12 in smoke mode, each in its own kernel); 128 s
beside the other tests when lesson 12 still measured a twin; it is marked
``notebooks`` and ``slow`` like the other lesson runs,
and runs in the normal suite (deselect it with ``-m "not slow"``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lesson_records as rec  # tests/lesson_records.py
from attnlab.course import results
from attnlab.course.lesson_results import AveragingResult, ConclusionsResult
from attnlab.course.registry import RERUN
from attnlab.tools.lesson_runner import execute_notebook
from attnlab.tools.testing import save_bert_base_chinese_shaped

ROOT = Path(__file__).resolve().parents[1]
N_LAYERS = N_HEADS = 12


def seed_all_but_lesson_08(folder: Path, model_name: str) -> None:
    """Hand-made records of lessons 05-11 except 08 for ``model_name``, so lesson 12 re-runs nothing else;
    lesson 06's labels every head alike."""
    shape = {"n_layers": N_LAYERS, "n_heads": N_HEADS}
    regroup = [rec.group(N_HEADS, 0.2, 0.3, 0.6), rec.group(2, 0.7, 0.1, 0.3)]
    alike = [["neither"] * N_HEADS for _ in range(N_LAYERS)]  # lesson 06 found no content follower
    records = [rec.patterns(**shape), rec.perturbation(labels=alike, **shape), rec.diversity(),
               rec.head_count(regroup=regroup), rec.pruning(**shape)]
    for record in records:
        results.save(type(record).file_name, record, model=model_name)
    assert {type(r) for r in records} == {r.kind for r in RERUN} - {AveragingResult}
    rec.save_hand_made_twin(model_name)  # a twin measured: tests/test_twins.py


def run_lesson(name: str):
    """Lesson ``name`` executed in smoke mode: the notebook with its outputs."""
    import nbformat

    book = nbformat.read(str(ROOT / "notebooks" / f"{name}.ipynb"), as_version=4)
    execute_notebook(book, ROOT / "notebooks")
    return book


@pytest.mark.notebooks
@pytest.mark.slow
def test_lessons_08_and_12_run_and_save_on_uniform_heads(tmp_path, monkeypatch):
    folder = save_bert_base_chinese_shaped(tmp_path / "bert-base-chinese-shaped")
    model_name = str(folder)
    results_dir = tmp_path / "results"
    for key, value in {"ATTNLAB_SMOKE": "1", "ATTNLAB_RESULTS": str(results_dir), "ATTNLAB_MODEL": model_name,
                       "ATTNLAB_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    seed_all_but_lesson_08(results_dir, model_name)

    run_lesson("08_layer_averaging")
    saved = json.loads(results.path_of(AveragingResult.file_name).read_text(encoding="utf-8"))
    assert saved["model"] == model_name and saved["non_finite"] == "null"
    averaging = results.load(AveragingResult.file_name, AveragingResult, model=model_name)
    assert averaging is not None and averaging.fixedness.shape == (N_LAYERS, N_HEADS)
    # heads that attend evenly leave a layer without fixed heads, hence without a fixedness interval or
    # slope: NaN, saved as null and read back as NaN
    assert "null" in json.dumps(saved["data"])
    assert np.isnan(averaging.fixedness_per_layer.estimate).any() or np.isnan(averaging.slope.estimate)

    book = run_lesson("12_conclusions")
    conclusions = results.load(ConclusionsResult.file_name, ConclusionsResult, model=model_name)
    assert conclusions is not None
    assert conclusions.evidence_origin[AveragingResult.file_name] == "saved"
    assert all(origin == "saved" for origin in conclusions.evidence_origin.values())
    assert len(conclusions.verdicts) == len(conclusions.labels) > 0
    twin_said = "".join(o.get("text", "") for c in book.cells if c.cell_type == "code"
                        and "twin_evidence.twin_for" in c.source for o in c.outputs)
    assert "from your own report" in twin_said  # the seeded twin, not one measured in the test
    # lesson 06's labels all alike: the group comparisons cannot tell, and say why
    text = "".join(o.get("text", "") for c in book.cells if c.cell_type == "code" for o in c.outputs)
    assert "cannot compare" in text and f"too small to compare (sizes 0 and {N_LAYERS * N_HEADS}" in text
    assert "conclusion 6 (both halves): cannot tell" in text
