"""CJK fonts for matplotlib, so Chinese token labels are glyphs, not boxes.

:func:`use_cjk_font` looks for, in order: the PyPI package
``noto-cjk-sans-otc``, then a system CJK font (e.g. Debian's
``fonts-wqy-microhei`` or ``fonts-noto-cjk``). It registers the font with
matplotlib without a restart and puts it first in the sans-serif list. With
none found it warns once and the course still runs. Once this module is imported,
:func:`attnlab.core.language.set_language` to Chinese picks the font too.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable
from functools import lru_cache

import matplotlib as mpl
from matplotlib import font_manager

from attnlab.core import language
from attnlab.core.language import _, current_language

_SYSTEM_HINTS = ("wqy", "notosanscjk", "notoserifcjk", "droidsansfallback", "sourcehansans", "simhei", "pingfang", "msyh", "ukai", "uming")

_warned = False
#: code points from here up are CJK radicals, kana, ideographs and the like
_CJK_START = 0x2E80


@lru_cache(maxsize=1)
def find_cjk_font() -> tuple[str, str] | None:
    """``(path, family)`` of a CJK-capable font, or None when there is none."""
    candidates: list[str] = []
    try:
        import noto_cjk_sans_otc  # optional font package (the course extra)

        candidates.append(str(noto_cjk_sans_otc.FONT_PATH))
    except Exception:  # noqa: BLE001 - optional package
        pass
    for path in font_manager.findSystemFonts():
        low = path.lower().replace("-", "").replace("_", "")
        if any(h in low for h in _SYSTEM_HINTS):
            candidates.append(path)
    for path in candidates:
        try:
            font_manager.fontManager.addfont(path)
            family = font_manager.FontProperties(fname=path).get_name()
            return path, family
        except Exception:  # noqa: BLE001 - unreadable font file: try the next
            continue
    return None


def use_cjk_font(warn: bool = True) -> str | None:
    """Make matplotlib draw Chinese labels; return the font family or None.

    Without a CJK font, warns once (with how to install one) and returns None.
    """
    global _warned
    found = find_cjk_font()
    if found is None:
        if warn and not _warned:
            warnings.warn(
                _("No CJK font found: Chinese labels will show as boxes. Install one with "
                  "`pip install noto-cjk-sans-otc` or `apt-get install fonts-wqy-microhei`."),
                stacklevel=2,
            )
            _warned = True
        return None
    family = found[1]
    current = list(mpl.rcParams["font.sans-serif"])
    if family not in current:
        mpl.rcParams["font.sans-serif"] = [family, *current]
    mpl.rcParams["font.family"] = "sans-serif"
    mpl.rcParams["axes.unicode_minus"] = False
    # a CJK font often has one weight only: matplotlib then draws bold titles in the regular weight, which
    # is fine, but logs "findfont: Failed to find font weight bold" into the lesson's output; keep it quiet
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    return family


def has_cjk(labels: Iterable[object]) -> bool:
    """True when any label contains a character a Latin font cannot draw (CJK and above)."""
    return any(any(ord(ch) >= _CJK_START for ch in str(label)) for label in labels)


def cjk_font_for(labels: Iterable[object]) -> None:
    """Switch to a CJK font when ``labels`` (tokens, texts, titles) contain Chinese characters,
    or when the course speaks Chinese (its labels then do)."""
    if has_cjk(labels) or current_language() == "zh":
        use_cjk_font()


def _font_follows(code: str) -> None:
    """Chinese: matplotlib's font becomes a CJK one, so every figure drawn afterwards shows its Chinese
    labels as glyphs (the CJK font also draws Latin letters)."""
    if code == "zh":
        use_cjk_font()


# one switch, attnlab.core.language.set_language (``al.set_language``), and the font follows it
language.on_language_change(_font_follows)
