"""The registry lists each lesson record once, with what it decides, and the comparison of saved records can fail.

Each lesson's saving cell and ``attnlab report`` call the same builder (:mod:`attnlab.course.record_builders`);
that the notebooks' saved records are the report's on the same inputs is checked on the smoke runs of the
notebooks themselves (``test_records_compared_on_notebooks`` in tests/test_notebooks.py).
"""

from __future__ import annotations

import dataclasses
import json

import lesson_records as rec  # tests/lesson_records.py
from record_comparison import contained, differences  # tests/record_comparison.py

from attnlab.course import registry, report_parts
from attnlab.course.evidence import Evidence, data_verdicts


def test_every_record_the_report_reads_is_in_the_registry_with_its_builder():
    """The report's parts and lesson 12's evidence fields are made from the registry's rows: the same keys,
    each record with a builder, its sizes and its part (the function named by its key)."""
    keys = [r.key for r in registry.EVIDENCE]
    assert keys == list(report_parts.PARTS)
    assert keys == [f.name for f in dataclasses.fields(Evidence) if f.name != "origin"]
    assert all(r.build is not None and r.conclusions and r.sizes and r.what for r in registry.EVIDENCE)
    assert all(report_parts.PARTS[r.key][:2] == (r.lesson, r.what) for r in registry.EVIDENCE)
    assert len({r.name for r in registry.RECORDS}) == len(registry.RECORDS)
    assert [r.key for r in registry.RERUN] == [k for k in keys if k != "attention_limits"]


def test_registry_names_the_conclusions_each_record_decides():
    """Judged on hand-made evidence without one record, exactly the conclusions the registry names for it
    change (conclusion 6 counted once for its two halves)."""
    def rows(ev: Evidence) -> dict[str, str]:
        return {label: json.dumps([v.verdict, v.numbers], default=str, sort_keys=True)
                for label, v in data_verdicts(ev, safe=True).items()}

    everything = rows(rec.evidence())
    for record in registry.RERUN:
        without = rows(rec.evidence(**{record.key: None}))
        changed = sorted({label[0] for label in everything if without[label] != everything[label]})
        assert changed == sorted(record.conclusions), record.key


def test_the_comparison_sees_a_difference():
    """The comparison can fail: a number moved past the tolerance, a NaN against a number, a missing field."""
    assert differences({"a": [1.0, float("nan")]}, {"a": [1.0, float("nan")]}) == []
    assert differences({"a": 1.0}, {"a": 1.0 + 1e-9}) == []
    assert differences({"a": 1.0}, {"a": 1.001}) == [".a: 1.0 and 1.001"]
    assert differences({"a": float("nan")}, {"a": 0.0}) and differences({"a": 1}, {"b": 1})
    assert differences({"a": ["fixed"]}, {"a": ["varying"]})


def test_the_notebook_comparison_sees_a_difference():
    """A notebook's record may add lesson-only fields and keys to what the report's holds, never change them."""
    report = rec.perturbation(n_layers=2, n_heads=4)
    assert contained(report, report) == []
    more = dataclasses.replace(report, threshold_verdicts={"threshold=0.1 few=0.25": "holds"},
                               sensitivity={**report.sensitivity, "lexical_token": report.unchanged})
    assert contained(report, more) == []  # a lesson-only field, a key the report leaves out
    moved = dataclasses.replace(report, position_follower_share=report.position_follower_share + 0.01)
    assert contained(report, moved) == [f".position_follower_share: {report.position_follower_share!r} and "
                                        f"{moved.position_follower_share!r}"]
    labels = [row[:] for row in report.follower_labels]
    labels[0][0] = "content" if labels[0][0] != "content" else "position"
    assert contained(report, dataclasses.replace(report, follower_labels=labels))
    fewer = {"lexical_position": report.sensitivity["lexical_position"]}
    assert contained(report, dataclasses.replace(report, sensitivity=fewer))  # a key the notebook lacks
