"""Interactive attention views: bertviz when it can work, the offline view otherwise.

bertviz draws with d3 and jQuery loaded from a public CDN; without network
access (a classroom firewall, CI, a saved notebook opened offline) it renders
an empty box. :func:`head_view` and :func:`model_view` therefore check first:

* ``ATTNLAB_OFFLINE=1`` (or ``true``/``yes``) forces the offline view;
* bertviz must be importable;
* its CDN host must accept a TCP connection within about 2 seconds (tried in
  a daemon thread, so a hanging network never blocks the notebook).

If all hold, the example goes to bertviz; otherwise the self-contained
:class:`attnlab.viz.offline_views.HeadView` / :class:`~attnlab.viz.offline_views.ModelView` is returned
with one printed line saying why.

In Chinese (``set_language("zh")``) the offline views are the default even where bertviz
could render: they speak Chinese, bertviz's interface speaks English. bertviz stays one
call away, ``head_view(att, 0, bertviz=True)``, and the printed line says so.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from attnlab.core.checks import check_index
from attnlab.core.config import is_offline
from attnlab.core.extract import Attention
from attnlab.core.language import _, current_language
from attnlab.core.models import tcp_reachable
from attnlab.viz.offline_views import HeadView, ModelView

#: The host bertviz loads require.js, d3 and jQuery from.
BERTVIZ_CDN = ("cdnjs.cloudflare.com", 443)



#: seconds a CDN probe's answer is reused, so a lesson does not probe on every view
PROBE_TTL = 300.0
_probes: dict[tuple[str, int], tuple[float, bool]] = {}


def _reachable(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when a TCP connection to ``host:port`` opens within ``timeout`` seconds
    (the answer is remembered for :data:`PROBE_TTL` seconds)."""
    now = time.monotonic()
    known = _probes.get((host, port))
    if known is not None and now - known[0] < PROBE_TTL:
        return known[1]
    answer = tcp_reachable(host, port, timeout)
    _probes[(host, port)] = (now, answer)
    return answer


def bertviz_status(timeout: float = 2.0) -> tuple[bool, str]:
    """``(usable, reason)``: whether bertviz can render here, and why not."""
    if is_offline():
        return False, _("ATTNLAB_OFFLINE is set")
    try:
        import bertviz  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not usable"
        return False, _("bertviz is not installed")
    if not _reachable(*BERTVIZ_CDN, timeout=timeout):
        return False, _("bertviz's CDN ({host}) is not reachable").format(host=BERTVIZ_CDN[0])
    return True, "bertviz and its CDN are available"


def _choice(bertviz: bool | None, call: str) -> tuple[bool, str]:
    """``(use bertviz, why not)`` for a view asked with ``bertviz`` (None: the language's default)."""
    if bertviz is None and current_language() == "zh":
        return False, _("the Chinese view; bertviz's own view, in English, is one call away: {call}").format(call=call)
    if bertviz is False:
        return False, _("asked for with bertviz=False")
    return bertviz_status()


def _example(att: Attention, i: int) -> tuple[Any, list[str], int | None]:
    """``(maps [L, H, n, n], tokens, sentence_b_start)`` of text ``i`` (0-based) of an Attention."""
    if not isinstance(att, Attention):
        raise TypeError(
            f"expected an Attention from attnlab.attention(m, texts), got {type(att).__name__}"
        )
    i = check_index(i, len(att), "text")
    maps = att[i]
    tokens = list(att.tokens[i])
    b_start = None
    if getattr(att, "pairs", None) is not None and att.segments:
        seg = list(att.segments[i])[: len(tokens)]
        b_start = seg.index(1) if 1 in seg else None
    return maps, tokens, b_start


def _title(att: Attention, i: int) -> str:
    """Text ``i`` of ``att`` as a view's title ("" when it keeps no texts)."""
    return f"{att.texts[i] if getattr(att, 'texts', None) else ''}"


def _shown(att: Attention, i: int, view: Any, name: str, offline_line: str, *, verbose: bool,
           bertviz: bool | None, **options: Any):
    """Text ``i`` of ``att`` in bertviz's view ``name`` (``head_view`` or ``model_view``, with ``options``)
    when :func:`_choice` says bertviz, else the offline ``view``, after printing ``offline_line`` (with
    ``{reason}``) when ``verbose``."""
    usable, reason = _choice(bertviz, f"views.{name}(att, {i}, bertviz=True)")
    if not usable:
        if verbose:
            print(offline_line.format(reason=reason))
        return view
    import bertviz as bertviz_package  # optional: imported only when it can render

    attention, toks = att.to_bertviz(i)
    return getattr(bertviz_package, name)(attention, toks, **options)


def head_view(att: Attention, i: int = 0, layer: int | None = None, heads: Sequence[int] | None = None,
              *, verbose: bool = True, bertviz: bool | None = None):
    """Line view of text ``i`` (bertviz's ``head_view`` when online).

    Args:
        att: an :class:`attnlab.core.extract.Attention`.
        i: which text (0-based).
        layer: layer shown first (0-based; default the first).
        heads: heads shown first (0-based; default all).
        verbose: print the one line saying which view is used offline.
        bertviz: True for bertviz's view wherever it can render, False for the offline view;
            None (default): bertviz when it can render, except in Chinese (the offline view speaks Chinese).

    Returns:
        bertviz's return value (it displays itself) when online, else an
        :class:`attnlab.viz.offline_views.HeadView` (displays itself as the cell's result;
        ``.save(path)`` writes an HTML file).
    """
    maps, tokens, b_start = _example(att, i)
    view = HeadView(maps, tokens, layer=0 if layer is None else layer, heads=heads, title=_title(att, i))
    return _shown(att, i, view, "head_view", _("Offline head view ({reason})."), verbose=verbose, bertviz=bertviz,
                  sentence_b_start=b_start, layer=layer, heads=list(heads) if heads is not None else None)


def model_view(att: Attention, i: int = 0, *, verbose: bool = True, bertviz: bool | None = None):
    """Every layer x head of text ``i`` (bertviz's ``model_view`` when online; ``bertviz`` as in
    :func:`head_view`).

    Returns bertviz's return value online, else an :class:`attnlab.viz.offline_views.ModelView`.
    """
    maps, tokens, b_start = _example(att, i)
    view = ModelView(maps, tokens, title=_title(att, i))
    return _shown(att, i, view, "model_view", _("Offline model view ({reason})."), verbose=verbose, bertviz=bertviz,
                  sentence_b_start=b_start)
