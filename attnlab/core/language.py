"""The language the course speaks: English by default, Chinese on request.

Printed words (verdicts, "What we found" lines, exercise feedback, progress and
error messages, figure labels) go through :func:`_`, Python's standard
``gettext`` lookup, so each message is written once in English and translated
from a catalogue. One switch picks the language::

    import attnlab as al
    al.set_language("zh")        # or ATTNLAB_LANG=zh in the environment

Messages with numbers keep the numbers out of the message id, so one
translation serves every run::

    print(_("{n} of {total} heads are fixed").format(n=3, total=144))

Saved results stay in English (they are data); only what is shown is
translated.
"""

from __future__ import annotations

import gettext
import os
from pathlib import Path

DOMAIN = "attnlab"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
LANGUAGES = ("en", "zh")

_state: dict[str, object] = {"lang": None, "translation": None}


def _from_environment() -> str:
    value = os.environ.get("ATTNLAB_LANG", "").strip().lower()
    return _normalise(value) if value else "en"


def _normalise(lang: str) -> str:
    lang = lang.strip().lower().replace("_", "-")
    if lang in ("zh", "zh-cn", "zh-hans", "cn", "chinese"):
        return "zh"
    if lang in ("en", "en-us", "en-gb", "english", "c", ""):
        return "en"
    raise ValueError(f"unknown language {lang!r}; choose one of {LANGUAGES}")


def set_language(lang: str) -> str:
    """Switch the course's printed language (``"en"`` or ``"zh"``); returns the code in use."""
    code = _normalise(lang)
    _state["lang"] = code
    _state["translation"] = None
    return code


def current_language() -> str:
    """``"en"`` or ``"zh"``: what :func:`set_language` chose, else ``ATTNLAB_LANG``, else English."""
    if _state["lang"] is None:
        _state["lang"] = _from_environment()
    return str(_state["lang"])


def _translation() -> gettext.NullTranslations:
    if _state["translation"] is None:
        lang = current_language()
        _state["translation"] = (gettext.NullTranslations() if lang == "en" else
                                 gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True))
    return _state["translation"]  # type: ignore[return-value]


def _(message: str) -> str:
    """``message`` in the current language (itself when no translation exists)."""
    return _translation().gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """Singular or plural form of a message for count ``n``, in the current language."""
    return _translation().ngettext(singular, plural, n)
