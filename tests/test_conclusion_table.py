"""The one table of lesson 12's conclusions: every list about the rows is derived from it, a row missing a
field fails loudly, and every "cannot tell" it produces says why in one line."""

from __future__ import annotations

import dataclasses
import re

import pytest

import lesson_records as rec
from attnlab.course import evidence as c
from attnlab.course import twin_control
from attnlab.course.claims import conclusions as claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.tools import course_numbers

BIG = {"n_layers": 6, "n_heads": 12}
FIELDS = [f.name for f in dataclasses.fields(claims.Conclusion)]


def test_conclusion_table_is_the_one_list():
    """Labels, judges, claims, readings, the twin's directions, the rows not about the model and the numbers
    check's row pattern all come from the table."""
    table = claims.CONCLUSIONS
    assert list(c.JUDGES) == [row.label for row in table]
    assert c.ROW_CLAIMS == {row.label: row.claim for row in table}
    assert c.READINGS == {row.label: row.reading for row in table if row.reading}
    assert set(c.TOWARD_HOLDS) | set(c.NOT_ABOUT_THE_MODEL) == {row.label for row in table}
    assert c.NOT_ABOUT_THE_MODEL == ("5a", "5b")
    assert c.LABELS == ("1", "2", "3a", "3b", "4a", "4b", "5a", "5b", "6")
    pattern = course_numbers.VERDICT["en"]
    for row in table:
        assert pattern.search(f"conclusion {row.label} holds").group("id") == row.label
    assert pattern.search("conclusion 7 holds") is None  # no such row


@pytest.mark.parametrize("missing", FIELDS)
def test_conclusion_missing_a_field_fails(missing):
    row = claims.BY_LABEL["2"]
    given = {f: getattr(row, f) for f in FIELDS if f != missing}
    with pytest.raises(TypeError, match=missing):
        claims.Conclusion(**given)


@pytest.mark.parametrize(("field", "value", "match"), [
    ("toward", 0, "toward"), ("toward", None, "toward"), ("label", "seven", "label"), ("reads", (), "records"),
])
def test_conclusion_with_a_bad_field_fails(field, value, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(claims.BY_LABEL["2"], **{field: value})


def test_a_new_row_reaches_every_derived_list(monkeypatch):
    """Adding a row to the table (and its judge) is all it takes: judged, checked against the twin, shown."""
    extra = claims.Conclusion("7", "a seventh claim", lambda diversity: claims.conclusion_2(diversity),
                              ("diversity",), -1, True, "", {})
    table = claims.CONCLUSIONS + (extra,)
    rows = {row.label: row.judged(rec.evidence()) for row in table}
    assert rows["7"].verdict == rows["2"].verdict
    checked = c.against_twins({"2": rows["2"]}, {"2": rows["2"]})["2"]
    assert checked.verdict in (UNSURE, FAILS)


def test_every_cannot_tell_row_says_why_and_waits_only_where_data_could_decide():
    """On planted evidence with and without a twin: each "cannot tell" of the report's rows has a one-line
    reason; a row the twin gates never says it waits for evidence; a missing lesson says what to run."""
    ev = rec.evidence()
    for twin in (None, c.data_verdicts(ev)):
        verdicts = c.all_conclusions(ev, twin)
        for label, v in verdicts.items():
            line = c.summary_line(v)
            assert "\n" not in line
            if v.verdict != UNSURE:
                continue
            if label == "6":
                assert any(line.count(part) for part in ("6a:", "6b:")), line
            else:
                assert v.reason() and v.reason() in line, (label, line)
                if v.because == "interval":  # the line its interval reaches, not "the details show them"
                    assert "reaches the line at" in v.reason(), (label, v.reason())
            if v.because == "twin":
                assert "waits for evidence" not in v.what_would_change()
    missing = c.all_conclusions(c.Evidence())["1"]
    assert missing.because == "missing" and "08_layer_averaging" in missing.reason()
    for label, v in c.all_conclusions(c.Evidence()).items():  # what to run is said once, as the reason
        line = c.summary_line(v)
        if label == "6":
            assert line.startswith("6a: The evidence is missing") and line.count("The evidence is missing") == 2, line
        else:
            assert line == v.reason(), (label, line)
    assert "It waits for evidence" in missing.what_would_change()


def test_a_model_that_does_not_show_a_claim_does_not_hold_with_a_holding_twin():
    """C1 on the model fails (a tenth of the heads fixed), while its twin holds: "does not hold", and the
    figure's line says training removed it."""
    model_ev = rec.evidence(averaging=rec.averaging(0.1, **BIG), perturbation=rec.perturbation(0.05, **BIG))
    twin_ev = rec.evidence(averaging=rec.averaging(0.9, **BIG), perturbation=rec.perturbation(0.05, **BIG))
    assert c.data_verdicts(model_ev)["1"].verdict == FAILS and c.data_verdicts(twin_ev)["1"].verdict == HOLDS
    one = c.all_conclusions(model_ev, c.data_verdicts(twin_ev))["1"]
    assert one.verdict == FAILS
    assert re.search("training removed it", c.summary_line(one))
