"""Lesson 06's interactive pieces: type your own perturbation, move a threshold.

Both need ipywidgets and a live notebook front end. Without ipywidgets (or in a
headless run) they print what the widget would first show and return None, so
a lesson runs top to bottom anywhere.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from attnlab.analysis.compare import compare_texts
from attnlab.core.checks import check_index
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.data.corpus import Query
from attnlab.viz.plot import quoted


def _widgets():
    """ipywidgets and IPython's display, or None when they are not installed."""
    try:
        # optional front-end packages (the course extra): imported only when a widget is built
        import ipywidgets as W
        from IPython.display import display
    except ImportError:
        return None
    return W, display


def change_table(position: np.ndarray, token: np.ndarray, layer: int) -> str:
    """One line per head of ``layer``: change (1 - similarity) in position and token space.

    Args:
        position, token: ``[L, H]`` similarities.
    """
    layer = check_index(layer, position.shape[0], "layer")
    lines = [_("layer {layer}: change (1 - similarity) of each head").format(layer=layer + 1),
             _("head   position  token")]
    for h in range(position.shape[1]):
        p, t = 1 - position[layer, h], 1 - token[layer, h]
        lines.append(f"H{h + 1:<4d} {p:9.3f} {t:6.3f}  " + "#" * int(round(20 * max(p, 0.0))))
    return "\n".join(lines)


def describe_custom(m: LoadedModel, original: Query | str, new_text: str, layer: int) -> str:
    """What a student sees for one typed perturbation: the two texts and
    :func:`change_table`, or why the texts cannot be compared."""
    try:
        position, token, p = compare_texts(m, original, new_text)
    except ValueError as err:
        return _("Cannot compare {text}: {error}").format(text=quoted(new_text), error=err)
    head = f"{quoted(p.source.text)} -> {quoted(p.text)}" + (_(" (respelled units: {units})").format(units=list(p.respelled)) if p.respelled else "")
    return head + "\n" + change_table(position, token, layer)


def perturbation_box(m: LoadedModel, original: Query | str, new_text: str, *, layer: int = 0):
    """A text box: type a perturbation of ``original`` (same characters, or the same
    words, moved or respelled with their own letters) and see every head's change
    in one layer.

    Returns:
        The ipywidgets ``VBox``, or None (after printing the first view) when
        ipywidgets is not installed.
    """
    layer = m.check_layer(layer)
    found = _widgets()
    if found is None:
        print(_("(ipywidgets is not installed: showing the first view only)"))
        print(describe_custom(m, original, new_text, layer))
        return None
    W, display = found
    box = W.Text(value=new_text, description=_("perturbed"), continuous_update=False, layout=W.Layout(width="480px"))
    layer_dd = W.Dropdown(options=[(str(l + 1), l) for l in range(m.n_layers)], value=layer, description=_("layer"),
                          layout=W.Layout(width="150px"))
    out = W.Output()

    def redraw(_change: Any = None) -> None:
        with out:
            out.clear_output(wait=True)
            print(describe_custom(m, original, box.value.strip(), layer_dd.value))

    for widget in (box, layer_dd):
        widget.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox([box, layer_dd]), out])


def threshold_slider(describe: Callable[[float], str], values: Sequence[float], value: float, *,
                     description: str | None = None):
    """A slider over ``values``; below it, ``describe(value)`` (e.g. a verdict at that threshold).

    ``description`` is the slider's label (default: "threshold" in the reader's language).

    Returns:
        The ipywidgets ``VBox``, or None (after printing ``describe(value)``) when
        ipywidgets is not installed.
    """
    values = [float(v) for v in values]
    if float(value) not in values:
        raise ValueError(f"value {value} is not one of the slider's values {values}")
    found = _widgets()
    if found is None:
        print(_("(ipywidgets is not installed: showing the starting value only)"))
        print(describe(float(value)))
        return None
    W, _display = found
    slider = W.SelectionSlider(options=values, value=float(value), description=description or _("threshold"),
                               continuous_update=False)
    out = W.Output()

    def redraw(_change: Any = None) -> None:
        with out:
            out.clear_output(wait=True)
            print(describe(slider.value))

    slider.observe(redraw, names="value")
    redraw()
    return W.VBox([slider, out])
