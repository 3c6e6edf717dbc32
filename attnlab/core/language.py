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

The catalogue is a plain gettext ``.po`` file,
``attnlab/locale/zh/LC_MESSAGES/attnlab.po``, edited by hand. There is no
build step: at first use :func:`compile_po` turns it into the binary ``.mo``
form in memory and Python's :class:`gettext.GNUTranslations` reads that.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gettext
import io
import os
import re
import string
import struct
import sys
from pathlib import Path
from typing import Callable, Iterator

DOMAIN = "attnlab"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
LANGUAGES = ("en", "zh")

_state: dict[str, object] = {"lang": None, "translation": None, "heard": None}
_templates: dict[str, "re.Pattern[str]"] = {}  # templates marked with N_, and the pattern of their filled-in text


#: every spelling of each language the course speaks, compared case-blind with ``_`` read as ``-``
SPELLINGS: dict[str, tuple[str, ...]] = {
    "en": ("en", "en-us", "en-gb", "english", "c"),
    "zh": ("zh", "zh-cn", "zh-hans", "cn", "chinese", "中文"),
}
#: the spellings the refusal names (the codes first)
NAMED_SPELLINGS = "en, English, zh, zh-CN, zh_CN, chinese or 中文"

_listeners: list[Callable[[str], None]] = []


def environment_language() -> str:
    """``"en"`` or ``"zh"`` as ``ATTNLAB_LANG`` says now (English when unset), whatever
    :func:`set_language` chose in this process: the edition a script or a kernel it starts runs."""
    value = os.environ.get("ATTNLAB_LANG", "").strip()
    return normalise_language(value) if value else "en"


def normalise_language(lang: str) -> str:
    """``"en"`` or ``"zh"`` for any accepted spelling of a language (:data:`SPELLINGS`, any case,
    ``zh_CN`` as ``zh-CN``): the one place the course, its scripts and ``course.sh`` read a language.

    Raises:
        ValueError: anything else (``zh-TW`` included: the course is in Simplified Chinese), with one
            sentence naming what is accepted.
    """
    key = str(lang).strip().lower().replace("_", "-")
    for code, spellings in SPELLINGS.items():
        if key in spellings:
            return code
    refusal = N_("unknown language '{lang}': write {accepted}.")
    if _state["lang"] is not None:  # a language is in use: say it in that one (else the lookup would ask again)
        refusal = _(refusal)
    raise ValueError(refusal.format(lang=str(lang).strip(), accepted=NAMED_SPELLINGS))


def language_option(value: str) -> str:
    """A ``--lang`` option's reading of ``value`` (argparse's ``type=``): ``"en"`` or ``"zh"`` for every
    spelling :func:`normalise_language` accepts, so each command accepts what the course accepts.

    Raises:
        argparse.ArgumentTypeError: the normaliser's one sentence, which argparse prints as the error.
    """
    try:
        return normalise_language(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def edition_folder(base: Path, lang: str) -> Path:
    """The folder of ``lang``'s edition under ``base``: ``base`` itself for English, ``base/zh`` for
    Chinese (the lessons in ``notebooks/``, ``notebooks/zh/``; their executed copies in
    ``build/notebooks/``, ``build/notebooks/zh/``)."""
    return base / "zh" if normalise_language(lang) == "zh" else base


def lessons_folder(root: Path, lang: str) -> Path:
    """Where the lessons of ``lang``'s edition are in the course folder ``root``: ``notebooks/`` or
    ``notebooks/zh/``."""
    return edition_folder(root / "notebooks", lang)


def set_language(lang: str) -> str:
    """Switch the course's printed language (any spelling :func:`normalise_language` accepts); returns
    ``"en"`` or ``"zh"``. Whatever follows the language (matplotlib's CJK font, once
    :mod:`attnlab.viz.fonts` is imported) is told through :func:`on_language_change`."""
    code = normalise_language(lang)
    _state["lang"] = code
    _state["translation"] = None
    for listener in list(_listeners):
        listener(code)
    return code


@contextlib.contextmanager
def speaking(lang: str | None) -> Iterator[str]:
    """Speak ``lang`` (default: the language speaking now) for the duration of the ``with`` block, also
    to lessons run meanwhile in kernels of their own (``ATTNLAB_LANG``); then what was spoken before.
    Yields ``"en"`` or ``"zh"``."""
    before, env = current_language(), os.environ.get("ATTNLAB_LANG")
    code = set_language(lang or before)
    os.environ["ATTNLAB_LANG"] = code
    try:
        yield code
    finally:
        set_language(before)
        if env is None:
            os.environ.pop("ATTNLAB_LANG", None)
        else:
            os.environ["ATTNLAB_LANG"] = env


def on_language_change(listener: Callable[[str], None]) -> None:
    """Call ``listener(code)`` on every :func:`set_language` from now on, and at once when a language
    was set already, so a layer above ``core`` (the figures' font) follows the one switch."""
    if listener not in _listeners:
        _listeners.append(listener)
    if _state["lang"] is not None:
        listener(str(_state["lang"]))


def current_language() -> str:
    """``"en"`` or ``"zh"``: what :func:`set_language` chose, else ``ATTNLAB_LANG``, else English."""
    if _state["lang"] is None:
        _state["lang"] = environment_language()
    return str(_state["lang"])


def po_path(lang: str) -> Path:
    """Where the catalogue of ``lang`` lives: ``attnlab/locale/<lang>/LC_MESSAGES/attnlab.po``."""
    return LOCALE_DIR / normalise_language(lang) / "LC_MESSAGES" / f"{DOMAIN}.po"


def read_po(text: str, *, untranslated: bool = False) -> dict[str, str]:
    """The translated entries of a ``.po`` file's ``text``, keyed as a ``.mo`` keys them.

    ``{msgid: msgstr}``; a plural entry is ``{"singular\\0plural": "form0\\0form1..."}``.
    The header (``msgid ""``) is kept; entries marked ``#, fuzzy`` and empty
    translations are left out (unless ``untranslated``), so an untranslated
    message shows in English.
    A malformed line raises ValueError naming its line number.
    """
    entries: list[dict] = []
    entry: dict = {}
    key: str | None = None

    def finish() -> None:
        nonlocal entry, key
        if "msgid" in entry:
            entries.append(entry)
        entry, key = {}, None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            finish()
        elif line.startswith("#"):
            if key is not None and key.startswith("msgstr"):
                finish()
            if line.startswith("#,") and "fuzzy" in line:
                entry["fuzzy"] = True
        elif line.startswith('"'):
            if key is None:
                raise ValueError(f"line {number}: a string outside any msgid/msgstr")
            entry[key] += _po_string(line, number)
        else:
            word, _sep, rest = line.partition(" ")
            if word not in ("msgctxt", "msgid", "msgid_plural") and not word.startswith("msgstr"):
                raise ValueError(f"line {number}: unknown keyword {word!r}")
            if word in ("msgctxt", "msgid") and key is not None and key.startswith("msgstr"):
                finish()
            key = word
            entry[key] = _po_string(rest.strip(), number)
    finish()

    out: dict[str, str] = {}
    for e in entries:
        if "msgctxt" in e:
            raise ValueError(f"msgctxt is not used in this catalogue (msgid {e['msgid']!r})")
        if e.get("fuzzy") and e["msgid"] and not untranslated:
            continue
        if "msgid_plural" in e:
            forms = [e[k] for k in sorted((k for k in e if k.startswith("msgstr[")),
                                          key=lambda k: int(k[len("msgstr["):-1]))]
            if forms and (all(forms) or untranslated):
                out[e["msgid"] + "\0" + e["msgid_plural"]] = "\0".join(forms)
        elif e.get("msgstr") or e["msgid"] == "" or untranslated:
            out[e["msgid"]] = e.get("msgstr", "")
    return out


def _po_string(token: str, number: int) -> str:
    if not (len(token) >= 2 and token.startswith('"') and token.endswith('"')):
        raise ValueError(f"line {number}: expected a quoted string, got {token!r}")
    return ast.literal_eval(token)  # a .po's C escapes (newline, quote, backslash, tab) are Python's too


def compile_mo(catalogue: dict[str, str]) -> bytes:
    """The GNU ``.mo`` bytes of ``catalogue`` (as :func:`read_po` returns it).

    Layout (little-endian 32-bit words): magic ``0x950412de``, revision 0, N,
    offset of the originals' table, offset of the translations' table, hash
    size 0, hash offset; then each table's N (length, offset) pairs; then the
    NUL-terminated strings, keys in sorted (byte) order.
    """
    catalogue = {"": "Content-Type: text/plain; charset=UTF-8\n", **catalogue}  # gettext decodes by it
    pairs = {k.encode("utf-8"): v.encode("utf-8") for k, v in catalogue.items()}
    keys = sorted(pairs)
    n = len(keys)
    offset = 7 * 4 + 16 * n  # strings start after the header and the two tables
    originals, translations = [], []
    for k in keys:
        originals += [len(k), offset]
        offset += len(k) + 1
    for k in keys:
        translations += [len(pairs[k]), offset]
        offset += len(pairs[k]) + 1
    header = struct.pack("<7I", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, 0)
    tables = struct.pack(f"<{4 * n}I", *originals, *translations)
    strings = b"".join(k + b"\0" for k in keys) + b"".join(pairs[k] + b"\0" for k in keys)
    return header + tables + strings


def catalogue(lang: str) -> dict[str, str]:
    """The translated entries of ``lang``'s ``.po`` file (empty for English or when there is none)."""
    path = po_path(lang)
    if normalise_language(lang) == "en" or not path.exists():
        return {}
    return read_po(path.read_text(encoding="utf-8"))


def _translation() -> gettext.NullTranslations:
    if _state["translation"] is None:
        entries = catalogue(current_language())
        _state["translation"] = (gettext.GNUTranslations(io.BytesIO(compile_mo(entries))) if entries
                                 else gettext.NullTranslations())
    return _state["translation"]  # type: ignore[return-value]


def _(message: str) -> str:
    """``message`` in the current language (itself when no translation exists; ``""`` stays
    ``""``, where gettext would return the catalogue's header)."""
    shown = _translation().gettext(message) if message else message
    _hear((message,), shown)
    return shown


def ngettext(singular: str, plural: str, n: int) -> str:
    """Singular or plural form of a message for count ``n``, in the current language."""
    shown = _translation().ngettext(singular, plural, n)
    _hear((singular, plural, n), shown)
    return shown


def _hear(lookup: tuple, shown: str) -> None:
    heard = _state["heard"]
    if heard is not None and lookup[0]:
        heard[lookup] = shown  # type: ignore[index]


@contextlib.contextmanager
def listening() -> Iterator[dict[tuple, str]]:
    """Within the block, remember every message looked up and what it showed: the dict yielded maps
    ``(message,)`` (or ``(singular, plural, n)``) to the text shown, e.g. the catalogue's strings a
    figure was drawn with, so a later check can tell whether the catalogue has changed since."""
    before, heard = _state["heard"], {}
    _state["heard"] = heard
    try:
        yield heard
    finally:
        _state["heard"] = before


def N_(template: str) -> str:
    """Mark ``template`` as a message without translating it now; returns it unchanged.

    For text that is stored in English and shown later, such as a verdict's
    missing-evidence reason with numbers in it::

        why = N_("the interval rests on {n} resampled units").format(n=4)   # kept in the record
        print(translated(why))   # in Chinese: the catalogue's template, filled with the same 4

    The message tools find ``N_`` literals as they find ``_`` ones.
    """
    if template not in _templates:
        _templates[template] = _pattern(template)
    return template


def _pattern(template: str) -> "re.Pattern[str]":
    """A regular expression matching ``template`` filled in, one named group per field."""
    parts = []
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is not None:
            group = re.sub(r"\W", "_", name)
            parts.append(f"(?P={group})" if f"(?P<{group}>" in "".join(parts) else f"(?P<{group}>.+?)")
    return re.compile("".join(parts), re.DOTALL)


def _fill(template: str, values: dict[str, str]) -> str:
    """``template`` with each field replaced by its text in ``values`` (format specs ignored:
    the values are already formatted)."""
    out = []
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        if name is not None:
            out.append(values[re.sub(r"\W", "_", name)])
    return "".join(out)


def translated(text: str) -> str:
    """``text`` in the current language: its catalogue entry, else, when it is a template
    marked with :func:`N_` filled in, the template's translation filled with the same values;
    else ``text`` itself. The empty string stays empty (gettext would give the catalogue's header)."""
    if not text:
        return text
    direct = _(text)
    if direct != text or current_language() == "en":
        return direct
    for template, pattern in _templates.items():
        match = pattern.fullmatch(text)
        if match:
            shown = _(template)
            return _fill(shown, match.groupdict()) if shown != template else text
    return text


def filled_template(text: str, field: Callable[[str], str]) -> str | None:
    """When ``text`` is a template marked with :func:`N_` filled in: the template in the current
    language, filled with ``field(value)`` for each value (e.g. a number's key shown as its label);
    else None."""
    for template, pattern in _templates.items():
        if "{" not in template:
            continue
        match = pattern.fullmatch(text)
        if match:
            return _fill(_(template), {name: field(value) for name, value in match.groupdict().items()})
    return None


def main(argv: list[str] | None = None) -> int:
    """``python -m attnlab.core.language LANG`` prints ``en`` or ``zh``; with ``--lessons`` the edition's
    lessons folder (``notebooks`` or ``notebooks/zh``). Bad input: the sentence on stderr, exit code 2.
    Needs only the standard library, so ``course.sh`` reads its ``--lang`` before any set-up."""
    args = list(sys.argv[1:] if argv is None else argv)
    lessons = "--lessons" in args
    words = [a for a in args if a != "--lessons"]
    if len(words) != 1:
        print(_("usage: python -m attnlab.core.language [--lessons] LANG"), file=sys.stderr)
        return 2
    try:
        code = normalise_language(words[0])
    except ValueError as exc:
        print(_("attnlab: {error}").format(error=exc), file=sys.stderr)
        return 2
    print(lessons_folder(Path(), code).as_posix() if lessons else code)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
