"""``attnlab report``: the source article's six conclusions checked on any BERT-family encoder.

    attnlab report --model M [--lang en|zh] [--smoke] [--out DIR] [--device D] [--precision P]
                   [--twin shuffled|fresh|none]
    attnlab report --compare DIR DIR ... [--out DIR]

The first form runs, headless and from the package, the measurements behind
conclusions 1-6 (lessons 05, 06, 08, 09, 10 and 11) and lesson 13's
faithfulness scoreboard (:mod:`attnlab.course.report_parts`), judges the
conclusions as lesson 12 does (:func:`attnlab.course.evidence.all_conclusions`)
and writes

* ``DIR/index.html``: self-contained (figures inline as PNG), opens offline;
* ``DIR/report.md``: the same in Markdown;
* ``DIR/report.json``: the results, in the course's one schema (:mod:`attnlab.course.results`);
* ``DIR/parts/``: each part's result, saved atomically when the part is done. A rerun
  skips every saved part whose settings (model, precision, device, sizes, run mode) match,
  so an interrupted report resumes where it stopped;
* ``DIR/twin/parts/`` (and ``DIR/twin/seed-N/parts/``): the same parts on the model's **untrained
  twins** (its weights shuffled within each tensor, one shuffle per seed, :mod:`attnlab.core.twins`),
  measured after the model by default; lesson 11's covering study only as far as conclusion 4 decides.
  Every claim about the model is held against the twins (:mod:`attnlab.course.twin_control`): the
  twin can only take a "holds" away, when the model does not beat it by the claim's floor (on the
  same resampled texts where the two runs' resamples match), and each card shows the twin's number
  beside the model's.

A model the report cannot read (one that only decodes, one that returns no
attention maps, fewer than :data:`MIN_HEADS` heads) is refused in one sentence
before any work, by :func:`attnlab.core.models.load_model`'s own checks. A conclusion that cannot be measured on a model says "cannot
tell" with the reason.

The second form reads finished reports and writes one table: the claims as
rows, the models as columns, each cell the verdict and its deciding number.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import os
import sys
import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from attnlab.core.atomic import write_text_atomic
from attnlab.core.config import is_smoke
from attnlab.core.language import _, language_option, speaking, translated
from attnlab.core.models import (
    REPORT_MIN_HEADS,
    LoadedModel,
    ModelLoadError,
    ModelRefused,
    NoAttentionError,
    load_model,
)
from attnlab.core.records import RecordError, to_plain
from attnlab.course import results
from attnlab.course.lesson_results import HeadCountResult
from attnlab.course.evidence import (
    LABELS,
    VERDICT_COLOURS,
    Evidence,
    checked_rows,
    claim_rows,
    conclusions_record,
    data_verdicts,
    deciding_number,
    row_titles,
    summary_line,
    twin_cell,
)
from attnlab.course.record_builders import unsplittable_reason
from attnlab.course.registry import RERUN, by_key
from attnlab.course.report_parts import PARTS, Stopping, sizes_of
from attnlab.course.verdicts import UNSURE, ClaimVerdict, shown
from attnlab.tools.lesson_runner import environment
from attnlab.viz.fonts import cjk_font_for
from attnlab.course.claims import conclusions as claims
from attnlab.course.claims.head_count import SELF_CLAIM
from attnlab.viz.conclusions_plots import plot_verdicts
from attnlab.tools.report_plots import plot_dispersion_by_layer, plot_view_rho
from attnlab.core.fast import choose_precision
from attnlab.core.twins import KINDS as TWIN_KINDS
from attnlab.core.twins import TWIN_SEEDS, shuffled_for_a_while, twins_name, untrained_twin
from attnlab.course.twin_control import pooled_twin_rows
from attnlab.course.twin_evidence import save_twin

#: a model needs at least this many heads per layer for the report (shares of heads, regrouping into 2)
MIN_HEADS = REPORT_MIN_HEADS
#: bumped when a part measures differently: saved parts of another version are measured again
REPORT_VERSION = 1
#: the saved name of a finished report, and of each part
REPORT_NAME = "report"
PART_FOLDER = "parts"
#: where the untrained twin's parts are saved, inside the report's folder
TWIN_FOLDER = "twin"
#: the parts measured on the twin: every part that feeds a conclusion (lesson 13's is only cited)
TWIN_PARTS = [part for part in PARTS if part != "attention_limits"]

#: a refusal: the model cannot be reported on; the message is one sentence saying why
Refusal = ModelRefused


# --------------------------------------------------------------------------- refusing before any work


def load_checked(name: str, *, device: str = "auto") -> LoadedModel:
    """The model ``name``, or a :class:`Refusal` with one sentence before any measurement: the checks are
    :func:`attnlab.core.models.load_model`'s own (:func:`attnlab.core.models.refusal`), with the report's
    :data:`MIN_HEADS`."""
    try:
        return load_model(name, device=device, min_heads=MIN_HEADS)
    except NoAttentionError as exc:
        raise Refusal(" ".join(str(exc).split())) from None


# --------------------------------------------------------------------------- running the parts


@dataclass
class PartRun:
    """One part of a report: its record (None when it failed), where it came from and what it cost."""

    name: str
    record: Any = None
    stopping: Stopping | None = None
    seconds: float = 0.0
    origin: str = "measured"  # "measured", "saved" or "failed"
    error: str = ""
    settings: dict = field(default_factory=dict)


def part_settings(m: LoadedModel, part: str, precision: str) -> dict:
    """What a saved part must match to be reused: model, shape, run mode, precision, device, sizes."""
    return to_plain({"version": REPORT_VERSION, "model": m.name, "n_layers": m.n_layers, "n_heads": m.n_heads,
                     "query_language": m.language, "smoke": is_smoke(), "precision": precision,
                     "device": str(m.device), "sizes": sizes_of(part)})


def _saved_part(folder: Path, m: LoadedModel, part: str, settings: dict) -> PartRun | None:
    data = results.load(f"part_{part}", None, model=m, folder=folder)
    if not isinstance(data, dict) or data.get("settings") != settings:
        return None
    try:
        record = by_key(part).kind.from_record(data["record"])
        stopping = Stopping.from_record(data["stopping"]) if data.get("stopping") else None
    except (RecordError, KeyError, TypeError, ValueError):
        return None
    return PartRun(part, record, stopping, float(data.get("seconds") or 0.0), "saved", settings=settings)


def run_part(m: LoadedModel, part: str, folder: Path, *, precision: str, progress: bool = True,
             **extra: Any) -> PartRun:
    """Measure one part (or read it back when saved with the same settings) and save it atomically.
    ``extra``: keyword arguments of the part's function (e.g. the training half lesson 10 lends a twin)."""
    settings = part_settings(m, part, precision)
    saved = _saved_part(folder, m, part, settings)
    if saved is not None:
        return saved
    _lesson, _what, measure = PARTS[part]
    kwargs = {"resume_dir": folder / "shards"} if part == "averaging" else {}
    kwargs.update(extra)
    start = time.perf_counter()
    try:
        record, stopping = measure(m, precision=precision, progress=progress, **kwargs)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - the claims it feeds say "cannot tell", with this reason
        if os.environ.get("ATTNLAB_DEBUG"):
            traceback.print_exc()
        message = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        return PartRun(part, None, None, time.perf_counter() - start, "failed",
                       f"{type(exc).__name__}: {message}", settings)
    seconds = time.perf_counter() - start
    results.save(f"part_{part}", {"settings": settings, "seconds": seconds, "stopping": stopping, "record": record},
                 model=m, folder=folder)
    return PartRun(part, record, stopping, seconds, "measured", settings=settings)


def evidence_of(runs: dict[str, PartRun]) -> Evidence:
    """The parts' records as lesson 12's :class:`~attnlab.course.evidence.Evidence`."""
    ev = Evidence()
    for part, run in runs.items():
        setattr(ev, part, run.record)  # each part is named by its record's key
    for record in RERUN:
        ev.origin[record.name] = "recomputed" if getattr(ev, record.key) is not None else "missing"
    return ev


def data_rows(ev: Evidence) -> dict[str, ClaimVerdict]:
    """Every row's verdict from the data alone (:func:`~attnlab.course.evidence.data_verdicts`); one that
    cannot be judged (a part failed, a model too small for the measurement) is "cannot tell" with the
    reason, never an error."""
    rows = data_verdicts(ev, safe=True)
    if ev.head_count is not None and unsplittable_reason(max(ev.head_count.summaries())):
        why = unsplittable_reason(max(ev.head_count.summaries()))
        rows.update({"3a": ClaimVerdict.missing(SELF_CLAIM, why), "3b": ClaimVerdict.missing(claims.CLAIMS[3], why)})
    return rows


def judged(ev: Evidence, runs: dict[str, PartRun], twin: dict[str, ClaimVerdict] | None = None, *,
           twin_name: str = "") -> dict[str, ClaimVerdict]:
    """Every conclusion's verdict (:func:`data_rows`), each claim about the model held against ``twin``
    (:func:`data_rows` of its untrained twin; None: not measured)."""
    return _with_failures(checked_rows(data_rows(ev), twin, twin_name=twin_name), runs)


def _with_failures(verdicts: dict[str, ClaimVerdict], runs: dict[str, PartRun]) -> dict[str, ClaimVerdict]:
    """A verdict left without evidence by a part that failed says so, with the part's error."""
    pruning_run = runs.get("pruning")
    if pruning_run is not None and pruning_run.record is not None and pruning_run.record.tasks is None:
        for v in verdicts.values():
            for key in ("missing", "6b: missing"):
                if "task probes" in str(v.numbers.get(key, "")):
                    v.numbers[key] = _("the task probes cannot be trained on this model (one label only: e.g. "
                                       "every token starts a word)")
    for part, run in runs.items():
        if run.origin != "failed":
            continue
        name = by_key(part).name
        for v in verdicts.values():
            missing = str(v.numbers.get("missing", ""))
            if v.verdict == UNSURE and name and name in missing:
                v.numbers["missing"] = _("lesson {lesson}'s measurement cannot be made on this model ({error})").format(
                    lesson=PARTS[part][0], error=run.error)
    return verdicts


# --------------------------------------------------------------------------- writing the report


def _figure_png(fig) -> str:
    """A matplotlib figure as an inline ``data:`` PNG (closed afterwards)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def figures(m: LoadedModel, verdicts: dict[str, ClaimVerdict], ev: Evidence) -> list[tuple[str, str]]:
    """``(caption, data URL)`` of the report's key figures."""

    cjk_font_for([m.name, *(v.shown_claim for v in verdicts.values())])

    shown_ = [(_("The six conclusions on {model}: verdict and deciding number").format(model=m.name),
               plot_verdicts(list(verdicts.values()), VERDICT_COLOURS, model_name=m.name,
                             labels=row_titles(verdicts), details=[summary_line(v) for v in verdicts.values()]))]
    if ev.diversity is not None:
        shown_.append((_("Within-layer dispersion of the heads against depth (conclusion 2), interval over texts"),
                       plot_dispersion_by_layer(ev.diversity)))
    if ev.attention_limits is not None:
        shown_.append((_("Lesson 13's faithfulness scoreboard: how well each view ranks tokens like their effect"),
                       plot_view_rho(ev.attention_limits)))
    return [(caption, _figure_png(fig)) for caption, fig in shown_]


def run_settings(m: LoadedModel, precision: str, runs: dict[str, PartRun], lang: str, started: float) -> dict:
    """The run's settings as stored in the results JSON: model, languages, precision, device, sizes, seconds.

    ``seconds``: this run's time plus the measured time of the parts it read back from an earlier,
    interrupted run, so that a resumed report states what the whole report cost."""
    earlier = sum(run.seconds for run in runs.values() if run.origin == "saved")
    return to_plain({
        "model": m.name, "model_source": m.source, "model_path": m.path, "model_type": m.model_type,
        "layers": m.n_layers, "heads": m.n_heads, "head_dim": m.head_dim, "query_language": m.language,
        "report_language": lang, "precision": precision, "device": str(m.device), "smoke": is_smoke(),
        "seconds": time.perf_counter() - started + earlier, "version": REPORT_VERSION,
        "parts": {name: {"lesson": PARTS[name][0], "what": PARTS[name][1], "origin": run.origin,
                         "seconds": round(run.seconds, 2), "sizes": sizes_of(name), "error": run.error,
                         "stopping": run.stopping} for name, run in runs.items()},
    })


def verdict_html(label: str, v: ClaimVerdict) -> str:
    """A verdict as HTML: its own card when it has one (``_repr_html_``), else a plain block."""
    card = getattr(v, "_repr_html_", None)
    if callable(card):
        return f'<section class="verdict"><h3>{html.escape(label)}</h3>{card()}</section>'
    rows = "".join(f"<tr><td>{html.escape(translated(str(k)))}</td><td>{html.escape(_plain(x))}</td></tr>"
                   for k, x in v.numbers.items())
    return (f'<section class="verdict {html.escape(v.verdict.replace(" ", "-"))}"><h3>{html.escape(label)}. '
            f'{html.escape(v.shown_claim)}</h3><p class="word">{html.escape(shown(v.verdict))}</p>'
            f'<p class="deciding">{html.escape(summary_line(v))}</p>'
            f"<details><summary>{html.escape(_('all numbers'))}</summary><table>{rows}</table></details></section>")


def _plain(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, str):
        return translated(x)
    return str(x)


STYLE = """body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#212121}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;
vertical-align:top}.word{font-weight:bold;font-size:1.2em}.holds .word{color:#2e7d32}.does-not-hold .word{color:#c62828}
.cannot-tell .word{color:#616161}.verdict{border-left:4px solid #bbb;padding-left:1em;margin:1em 0}
img{max-width:100%}figure{margin:1em 0}"""


def _settings_rows(settings: dict) -> list[tuple[str, str]]:
    keys = (("model", _("model")), ("model_type", _("architecture")), ("layers", _("layers")),
            ("heads", _("heads per layer")), ("query_language", _("language of the queries")),
            ("report_language", _("language of the report")), ("precision", _("precision")),
            ("device", _("device")), ("smoke", _("smoke run")), ("seconds", _("seconds in all")))
    return [(title, f"{settings[k]:.1f}" if isinstance(settings[k], float) else str(settings[k])) for k, title in keys]


def _part_rows(settings: dict) -> list[tuple[str, ...]]:
    rows = []
    for name, part in settings["parts"].items():
        stop = part.get("stopping")
        if stop:
            where = _("{used} of at most {maximum} {unit}; {how}; looks at {looks}").format(
                used=stop["used"], maximum=stop["maximum"], unit=_(stop["unit"]),
                how=_("settled") if stop["settled"] else _("did not settle: stopped at the maximum"),
                looks=", ".join(map(str, stop["looks"])))
        else:
            where = _("fixed size")
        sizes = ", ".join(f"{k} {v}" for k, v in part["sizes"].items())
        origin = _(part["origin"]) + (f" ({part['error']})" if part.get("error") else "")
        rows.append((f"{part['lesson']} {name}", f"{part['seconds']:.1f}", origin, sizes, where))
    return rows


def write_html(path: Path, settings: dict, verdicts: dict[str, ClaimVerdict], figs: list[tuple[str, str]]) -> Path:
    """``index.html``: self-contained, no reference outside the file."""
    lang = settings["report_language"]
    title = _("The source article's six conclusions, checked on {model}").format(model=settings["model"])
    summary = "".join(f"<tr><td>{html.escape(label)}</td><td>{html.escape(v.shown_claim)}</td>"
                      f"<td><b>{html.escape(shown(v.verdict))}</b></td><td>{html.escape(summary_line(v))}</td>"
                      f"<td>{html.escape(twin_cell(v))}</td></tr>"
                      for label, v in zip(row_titles(verdicts), verdicts.values()))
    settings_table = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                             for k, v in _settings_rows(settings))
    head = [_("part"), _("seconds"), _("origin"), _("sizes"), _("where it stopped")]
    parts_table = ("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>" +
                   "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                           for row in _part_rows(settings)))
    body = "".join(verdict_html(label, v) for label, v in verdicts.items())
    images = "".join(f'<figure><img alt="{html.escape(c)}" src="{src}"><figcaption>{html.escape(c)}</figcaption>'
                     f"</figure>" for c, src in figs)
    page = (f'<!DOCTYPE html><html lang="{html.escape(lang)}"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<h2>{html.escape(_('Verdicts'))}</h2><table><tr><th>#</th><th>{html.escape(_('claim'))}</th>"
            f"<th>{html.escape(_('verdict'))}</th><th>{html.escape(_('deciding number [interval]'))}</th>"
            f"<th>{html.escape(_('untrained twin'))}</th></tr>"
            f"{summary}</table>{images}<h2>{html.escape(_('Each verdict'))}</h2>{body}"
            f"<h2>{html.escape(_('Settings of this run'))}</h2><table>{settings_table}</table>"
            f"<h2>{html.escape(_('Parts'))}</h2><table>{parts_table}</table></body></html>")
    return write_text_atomic(path, page)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_markdown(path: Path, settings: dict, verdicts: dict[str, ClaimVerdict]) -> Path:
    """``report.md``: the verdicts, the settings and the parts as Markdown tables."""
    title = _("The source article's six conclusions, checked on {model}").format(model=settings["model"])
    lines = [f"# {title}", "",
             f"| # | {_('claim')} | {_('verdict')} | {_('deciding number [interval]')} | {_('untrained twin')} |",
             "|---|---|---|---|---|"]
    for label, v in zip(row_titles(verdicts), verdicts.values()):
        lines.append(f"| {_md_cell(label)} | {_md_cell(v.shown_claim)} | **{shown(v.verdict)}** | "
                     f"{_md_cell(summary_line(v))} | {_md_cell(twin_cell(v))} |")
    lines += ["", f"## {_('Settings of this run')}", "", "| | |", "|---|---|"]
    lines += [f"| {_md_cell(k)} | {_md_cell(v)} |" for k, v in _settings_rows(settings)]
    lines += ["", f"## {_('Parts')}", "",
              f"| {_('part')} | {_('seconds')} | {_('origin')} | {_('sizes')} | {_('where it stopped')} |",
              "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in _part_rows(settings)]
    return write_text_atomic(path, "\n".join(lines) + "\n")


def run_parts(m: LoadedModel, folder: Path, parts: list[str], *, precision: str, progress: bool = True,
              desc: str = "", extra: dict[str, dict] | None = None) -> dict[str, PartRun]:
    """Run ``parts`` of :data:`PARTS` on ``m`` in order (each resumed from ``folder`` when saved), with a
    progress bar; ``extra``: part -> keyword arguments of its function."""
    folder.mkdir(parents=True, exist_ok=True)
    runs: dict[str, PartRun] = {}
    bar = tqdm(parts, desc=desc or _("report parts"), unit=_("part"), disable=not progress)
    for part in bar:
        bar.set_postfix_str(f"{PARTS[part][0]} {part}")
        runs[part] = run_part(m, part, folder, precision=precision, progress=progress, **(extra or {}).get(part, {}))
        if runs[part].origin == "failed":
            tqdm.write(_("part {part} could not be measured: {error}").format(part=part, error=runs[part].error))
    return runs


def twin_extra(trained: HeadCountResult | None) -> dict[str, dict]:
    """The twin's keyword arguments per part: lesson 10's training half borrowed from the model (it does
    not depend on the model's weights), and lesson 11's covering study measured only as far as
    conclusion 4 decides (its random sets and LayerNorm null only describe)."""
    return {"pruning": {"describe": False}, **({"head_count": {"trained": trained}} if trained else {})}


def measure_twin(m: LoadedModel, out: Path, runs: dict[str, PartRun], *, kind: str, precision: str,
                 progress: bool = True, seeds: tuple[int, ...] = TWIN_SEEDS) -> tuple[dict[str, ClaimVerdict], dict]:
    """The same parts on ``m``'s untrained twins (:func:`attnlab.core.twins.untrained_twin`), one per shuffle
    seed, and the rows judged on them (:func:`data_rows`) pooled over the seeds
    (:func:`attnlab.course.twin_control.pooled_twin`: the spread between seeds inside each interval).

    A shuffled twin is made in ``m``'s own weights and put back after each seed (one model's memory, not
    two); a fresh twin replaces ``m``'s weights, so call this after every measurement of ``m``. Lesson 13's
    part is left out (it decides no conclusion); lesson 10's training half does not depend on the model,
    so the twin borrows ``m``'s. The first seed's parts are saved in ``out/twin/parts``, the others' in
    ``out/twin/seed-N/parts``.

    The twins' evidence is also saved in the course's results folder
    (:func:`attnlab.course.twin_evidence.save_twin`), where lesson 12 finds it.

    Returns:
        ``(rows, settings)``: the pooled rows, and the twins' name, kind, seeds and parts (seconds summed
        over the seeds) as the results JSON stores them.
    """
    head_count_run = runs.get("head_count")
    trained = head_count_run.record if head_count_run is not None else None
    evidences, parts = [], {}
    for i, seed in enumerate(seeds):
        folder = out / TWIN_FOLDER / (PART_FOLDER if i == 0 else f"seed-{seed}/{PART_FOLDER}")
        making = (shuffled_for_a_while(m, seed=seed) if kind == "shuffled"
                  else nullcontext(untrained_twin(m, kind=kind, seed=seed, in_place=True)))
        with making as twin:
            twin_runs = run_parts(twin, folder, TWIN_PARTS, precision=precision, progress=progress,
                                  desc=_("untrained twin, seed {seed}").format(seed=seed),
                                  extra=twin_extra(trained))
        evidences.append(evidence_of(twin_runs))
        for name, r in twin_runs.items():
            part = parts.setdefault(name, {"origin": r.origin, "seconds": 0.0, "error": r.error})
            part["seconds"] = round(part["seconds"] + r.seconds, 2)
            if r.origin != "saved":
                part["origin"] = r.origin
    name = twins_name(m.name, kind, seeds)
    save_twin(m, evidences, name=name, kind=kind, precision=precision)
    settings = {"name": name, "kind": kind, "seeds": list(seeds), "parts": parts}
    return pooled_twin_rows([data_rows(ev) for ev in evidences]), settings


def make_report(model: str = "auto", *, out: str | Path = "report", lang: str | None = None,
                device: str = "auto", precision: str = "auto", progress: bool = True,
                twin: str | None = "shuffled") -> Path:
    """Run every part for ``model`` (resuming from ``out/parts``) and write the report into ``out``.

    ``twin``: the kind of untrained twin measured beside the model (``"shuffled"``, ``"fresh"``;
    None: none, and every verdict says it was not checked against one). The twin's evidence is also
    saved in the course's results folder (:data:`attnlab.course.twin_evidence.TWIN_RESULT`), where
    lesson 12 finds it.

    ``lang``: the language the report is written in (any spelling the course accepts; default: the
    language speaking now), spoken for the whole run and restored afterwards.

    Raises:
        Refusal: the model cannot be reported on (one sentence; nothing measured).
    """
    with speaking(lang) as code:
        return _measure_and_write(model, Path(out), code, device=device, precision=precision, progress=progress,
                                  twin=twin)


def _measure_and_write(model: str, out: Path, lang: str, *, device: str, precision: str, progress: bool,
                       twin: str | None) -> Path:
    """:func:`make_report`'s work, in the language ``lang`` that is speaking."""
    started = time.perf_counter()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder for the report")
    if twin is not None and twin not in TWIN_KINDS:
        raise ValueError(f"twin must be one of {TWIN_KINDS} or None, got {twin!r}")
    m = load_checked(model, device=device)
    chosen = choose_precision(m, precision)[0]
    runs = run_parts(m, out / PART_FOLDER, list(PARTS), precision=chosen, progress=progress)
    ev = evidence_of(runs)
    settings = run_settings(m, chosen, runs, lang, started)
    twin_rows, twin_settings = None, None
    if twin is not None:
        twin_started = time.perf_counter()
        twin_rows, twin_settings = measure_twin(m, out, runs, kind=twin, precision=chosen, progress=progress)
        earlier = sum(p["seconds"] for p in twin_settings["parts"].values() if p["origin"] == "saved")
        settings["twin"] = to_plain(twin_settings)
        settings["seconds"] += time.perf_counter() - twin_started + earlier
    verdicts = judged(ev, runs, twin_rows, twin_name=twin_settings["name"] if twin_settings else "")
    record = {"settings": settings, **conclusions_record(verdicts, ev.origin).to_record()}  # lesson 12's shape
    if twin_rows is not None:
        record["twin_rows"] = claim_rows(twin_rows)
    results.save(REPORT_NAME, record, model=m, folder=out)
    write_markdown(out / "report.md", settings, verdicts)
    write_html(out / "index.html", settings, verdicts, figures(m, verdicts, ev))
    return out


# --------------------------------------------------------------------------- comparing reports


def read_report(folder: str | Path) -> dict:
    """A finished report's results JSON (``settings`` and ``claims``), from any run mode."""
    path = Path(folder) / f"{REPORT_NAME}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        data = record["data"]
        data["settings"]["model"], data["claims"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"{folder} holds no finished report ({path.name} missing or damaged): "
                         "run attnlab report --out there first") from None
    return data


def compare_table(folders: list[str | Path]) -> str:
    """One Markdown table: the claims as rows, one column per report, each cell verdict and deciding number;
    a report that measured an untrained twin brings a second column, the twin's verdict and number."""
    reports = [read_report(f) for f in folders]
    columns = []  # (report, which cell: "model" or "twin")
    names = []
    for r in reports:
        name = r["settings"]["model"] + (" (smoke)" if r["settings"].get("smoke") else "")
        columns.append((r, "model"))
        names.append(name)
        if r["settings"].get("twin"):
            columns.append((r, "twin"))
            names.append(_("{model}: untrained twin").format(model=name))
    lines = [f"| {_('claim')} | " + " | ".join(_md_cell(n) for n in names) + " |",
             "|---" * (len(names) + 1) + "|"]
    for label, title in zip(LABELS, row_titles(LABELS)):
        cells = []
        for r, which in columns:
            claim = r["claims"].get(label)
            if claim is None:
                cells.append(_("not in this report"))
            elif which == "twin":
                cells.append(claim.get("twin", ""))
            else:
                deciding = claim.get("deciding", "")
                cells.append(f"**{shown(claim['verdict'])}**" + (f" {deciding}" if deciding else ""))
        lines.append(f"| {_md_cell(title)} | " + " | ".join(_md_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the command


def _report_cmd(args: argparse.Namespace) -> int:
    with speaking(args.lang):  # the CJK font too, for Chinese; default: the language speaking now
        return _report_or_compare(args)


def _report_or_compare(args: argparse.Namespace) -> int:
    if args.compare:
        table = compare_table(args.compare)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            write_text_atomic(out / "compare.md", table)
        print(table, end="")
        return 0
    switches = {"ATTNLAB_SMOKE": "1"} if args.smoke else {}
    with environment(**switches):
        try:
            out = make_report(args.model, out=args.out or "report", lang=args.lang, device=args.device,
                              precision=args.precision, twin=None if args.twin == "none" else args.twin)
        except Refusal as exc:
            print(f"attnlab report: {exc}", file=sys.stderr)
            return 2
        except ModelLoadError as exc:
            print(f"attnlab report: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
            return 2
    print(_("wrote {html}, {md} and {json}").format(html=out / "index.html", md=out / "report.md",
                                                    json=out / f"{REPORT_NAME}.json"))
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab report``."""
    p = subparsers.add_parser("report", help="check the source article's six conclusions on a model")
    p.add_argument("--model", default="auto", help="a folder, a hub id, bundled, or auto (the offline default here)")
    p.add_argument("--lang", type=language_option, default=None, help="language of the report (default: ATTNLAB_LANG)")
    p.add_argument("--smoke", action="store_true", help="a fast pass with reduced sizes")
    p.add_argument("--out", default=None, help="folder of the report (default: report); with --compare, where "
                                               "compare.md goes")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    p.add_argument("--precision", default="auto", help="auto (bf16 where native), fp32 or bf16")
    p.add_argument("--twin", choices=(*TWIN_KINDS, "none"), default="shuffled",
                   help="the untrained twin measured beside the model, against which every claim about the model "
                        "is held: its weights shuffled within each tensor (default), a fresh initialisation, or "
                        "none (faster; the verdicts then say they were not checked against one)")
    p.add_argument("--compare", nargs="+", metavar="DIR", help="finished reports to set side by side")
    p.set_defaults(func=_report_cmd)
