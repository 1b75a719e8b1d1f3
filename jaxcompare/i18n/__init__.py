"""The app's languages: English (the source text) and Chinese, from gettext catalogs.

Two ways text gets translated, by where it is worded:

- Text worded for a reader when it is shown (the pages, the verdict, the checklist, the
  charts) calls ``_()`` / ``ngettext()`` with a whole template and fills it afterwards:
  ``_("JAX is **{factor} faster** per call").format(factor=...)``, so a translation can put
  the numbers where its word order wants them.
- Text worded where it is recorded or raised (an error, a stored note or unstable reason, a
  worker's report) stays English, marked with ``N_()`` so it is extracted. Where it is shown,
  ``translate_text()`` finds the template it was filled from and fills the translation with
  the same values, so saved results and errors from any process read in the reader's language.

The language is per reader: ``using(lang)`` for a block, and a front end serving several readers
at once installs a source (``set_language_source``) that says whose text is being worded now;
English otherwise (the CLI, the notebook). The catalogs are
``locale/<lang>/LC_MESSAGES/jaxcompare.po``; Babel reads them once per process, the first time
that language is asked for. English needs no catalog and imports nothing.
"""

from __future__ import annotations

import io
import re
import string
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

LANGUAGES = {"en": "English", "zh": "中文"}
SOURCE_LANGUAGE = "en"
DOMAIN = "jaxcompare"
LOCALE_DIR = Path(__file__).with_name("locale")
# The catalog's flag on messages marked N_(): only these are templates translate_text looks for,
# so a reader's own text is never mistaken for a filled-in _() message ("{n:,} calls").
RECORDED = "recorded"

_override: ContextVar[str | None] = ContextVar("jaxcompare_language", default=None)
_source: Callable[[], str | None] | None = None


def N_(message: str) -> str:
    """Marks a message for the catalog without translating it (see the module docstring)."""
    return message


# --- which language -----------------------------------------------------------------------------
def check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: choose one of {', '.join(LANGUAGES)}")
    return lang


@contextmanager
def using(lang: str) -> Iterator[None]:
    """Word the text made inside the block in ``lang`` (this thread only)."""
    token = _override.set(check_language(lang))
    try:
        yield
    finally:
        _override.reset(token)


def set_language_source(source: Callable[[], str | None] | None) -> None:
    """A front end serving many readers (the Streamlit app, one thread per session) tells whose
    language the current thread words text in; None from it means English."""
    global _source
    _source = source


def language() -> str:
    """The language text is worded in right now: ``using``'s, else the source's, else English."""
    lang = _override.get()
    if lang is None and _source is not None:
        lang = _source()
    return lang if lang in LANGUAGES else SOURCE_LANGUAGE


def negotiate(preferred: str | None) -> str | None:
    """The app's language for a browser's ('zh-CN', 'zh-Hant-TW', 'en-US'), None when it has none.
    Every Chinese variant gets the Simplified Chinese catalog."""
    if not preferred:
        return None
    from babel import negotiate_locale

    return negotiate_locale([preferred.replace("_", "-")], list(LANGUAGES), sep="-")


# --- translating ---------------------------------------------------------------------------------
def gettext(message: str) -> str:
    catalog = _catalog(language())
    return message if catalog is None else catalog.gettext(message)


_ = gettext


def ngettext(singular: str, plural: str, n: int) -> str:
    catalog = _catalog(language())
    if catalog is None:
        return singular if n == 1 else plural
    return catalog.ngettext(singular, plural, n)


def translate_text(text: str) -> str:
    """English text filled in elsewhere from an ``N_()`` template (an error message, a stored
    note), in the current language; text from no template (a user's own error) stays as it is."""
    catalog = _catalog(language())
    if catalog is None or not text:
        return text
    return catalog.translate_text(text)


def sentences(*texts: str) -> str:
    """Whole sentences run together as one paragraph, empty ones left out: a space after an
    English sentence, none after a Chinese one (which ends in a full-width stop)."""
    out = ""
    for text in filter(None, texts):
        wide = out and unicodedata.east_asian_width(out[-1]) in ("W", "F")
        out += text if not out or wide else " " + text
    return out


# --- the catalogs --------------------------------------------------------------------------------
def fields(template: str) -> list[str]:
    """The replacement fields of a ``str.format`` template as written ('{rel:.0%}'), in order."""
    return [f"{{{name}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}"
            for _, name, spec, conv in string.Formatter().parse(template) if name is not None]


@dataclass(frozen=True)
class _Template:
    """An ``N_()`` template and its translation, to recognise text filled in from it."""

    pattern: re.Pattern[str]
    names: tuple[str, ...]
    translation: str
    literal: int  # how much fixed text it has: the more, the more specific
    reprs: tuple[str, ...] = ()  # the '{name!r}' fields: names and paths, never translated


# A '{name!r}' field holds a repr: a quoted string, a list or tuple, a number, None, True or False.
_REPR = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\[[^\]]*\]|\([^)]*\)|-?[\d.]+(?:e[+-]?\d+)?|None|True|False"""


def _compile(msgid: str, msgstr: str) -> _Template | None:
    """A pattern that matches ``msgid`` filled in with any values (None: it has no fields)."""
    parts, names, fixed, reprs = [], [], 0, []
    for literal, name, _spec, conversion in string.Formatter().parse(msgid):
        parts.append(re.escape(literal))
        fixed += len(literal)
        if name is not None:
            if not name.isidentifier() or name in names:
                return None  # '{0}', '{a.b}', a repeated field: not a template text is filled from
            names.append(name)
            if conversion == "r":
                reprs.append(name)
            parts.append(f"(?P<{name}>{_REPR if conversion == 'r' else '.+?'})")
    if not names:
        return None
    return _Template(re.compile("".join(parts), re.DOTALL), tuple(names), msgstr, fixed, tuple(reprs))


def _fill(template: str, values: dict[str, str]) -> str:
    """``template`` with its fields replaced by already-formatted text (specs are not reapplied)."""
    out = []
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        if name is not None:
            out.append(values.get(name, ""))
    return "".join(out)


class Catalog:
    """One language's translations, with the templates that ``translate_text`` recognises."""

    def __init__(self, translations: Any, templates: list[_Template]) -> None:
        self._translations = translations
        # Most fixed text first: "cannot import {name}: no such file" wins over "cannot import
        # {name}: {reason}" when both match.
        self._templates = sorted(templates, key=lambda t: -t.literal)

    def gettext(self, message: str) -> str:
        return self._translations.gettext(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return self._translations.ngettext(singular, plural, n)

    def translate_text(self, text: str) -> str:
        direct = self._translations.gettext(text)
        if direct != text:
            return direct
        for template in self._templates:
            found = template.pattern.fullmatch(text)
            if found:
                # A value may itself be text from a template ('... could not be loaded: {reason}').
                values = {name: found[name] if name in template.reprs else self.translate_text(found[name])
                          for name in template.names}
                return _fill(template.translation, values)
        return text


# Two sessions asking for a language first at once may both read its catalog: harmless, and no lock
# on the path every message takes.
@cache
def _load(lang: str) -> Catalog:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    from babel.support import Translations

    with (LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po").open("rb") as po:
        messages = read_po(po, locale=lang, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, messages)  # gettext reads the compiled form; fuzzy entries are left out
    compiled.seek(0)
    templates = [t for m in messages if RECORDED in m.flags and m.string and not m.fuzzy and isinstance(m.id, str)
                 for t in [_compile(m.id, str(m.string))] if t is not None]
    return Catalog(Translations(compiled, domain=DOMAIN), templates)


def _catalog(lang: str) -> Catalog | None:
    return None if lang == SOURCE_LANGUAGE else _load(lang)
