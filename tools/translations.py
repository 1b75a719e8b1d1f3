"""The translation catalogs: extract the messages from the code, merge them into each language's
catalog, and check that every one is translated well enough to ship (docs/translating.md).

    python tools/translations.py update   # `make translations`: new messages in, removed ones out
    python tools/translations.py check    # what is missing or broken (tests/test_translations.py)

Babel does the extracting and merging; the catalogs are jaxcompare/i18n/locale/<lang>/LC_MESSAGES/
jaxcompare.po, and the source text is the English in the code.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jaxcompare.i18n import DOMAIN, LANGUAGES, LOCALE_DIR, RECORDED, SOURCE_LANGUAGE, fields  # noqa: E402

# What is extracted: every Python file of the package and the pages (only the marked strings count).
METHOD_MAP = [("jaxcompare/**.py", "python"), ("pages/**.py", "python"), ("app.py", "python")]
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Three words in a row: English prose that a translation must not leave as it is.
PROSE = re.compile(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}")
# Code spans and links keep their text; what is left of a message is what a reader reads.
NOT_PROSE = re.compile(r"`[^`]*`|\{[^{}]*\}|\]\([^)]*\)|:material/\w+:")
MARKUP = ("**", "`", "\n")


def catalog_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def extract() -> Catalog:
    """Every message the code marks with _(), N_() or ngettext(), with where it is;
    those marked N_() (recorded text, recognised by translate_text) carry the RECORDED flag."""
    recorded = {message for *_, message, _, _ in extract_from_dir(ROOT, METHOD_MAP, keywords={"N_": None})}
    template = Catalog(domain=DOMAIN, project="jaxcompare")
    for filename, lineno, message, comments, context in extract_from_dir(
            ROOT, METHOD_MAP, comment_tags=("Translators:",), strip_comment_tags=True):
        flags = [RECORDED] if message in recorded else []
        template.add(message, None, [(filename, lineno)], auto_comments=comments, context=context, flags=flags)
    return template


def read(lang: str) -> Catalog:
    with catalog_path(lang).open("rb") as po:
        return read_po(po, locale=lang, domain=DOMAIN)


def update(lang: str) -> Catalog:
    """The language's catalog brought up to the code: new messages added untranslated (or marked
    fuzzy with a close old translation as a hint), messages the code no longer has removed."""
    path = catalog_path(lang)
    if path.exists():
        catalog = read(lang)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog = Catalog(locale=lang, domain=DOMAIN, project="jaxcompare", version="0.1",
                          copyright_holder="the jaxcompare developers", fuzzy=False, msgid_bugs_address="",
                          last_translator="the jaxcompare developers", language_team=LANGUAGES[lang],
                          header_comment=f"# {LANGUAGES[lang]} translations of jaxcompare (docs/translating.md).")
        catalog.revision_date = catalog.creation_date
    code = extract()
    # The dates stay as they are, so an update changes the catalog only where the messages did.
    catalog.update(code, update_header_comment=False, update_creation_date=False)
    for message in catalog:  # Babel keeps old flags: RECORDED follows the code as it is now
        source = code.get(message.id, message.context) if message.id else None
        if source is not None and RECORDED in source.flags:
            message.flags.add(RECORDED)
        else:
            message.flags.discard(RECORDED)
    with path.open("wb") as po:
        # File names without line numbers: translators see where a message is used, and an
        # edit that moves code does not rewrite the catalog.
        write_po(po, catalog, width=100, ignore_obsolete=True, include_lineno=False)
    return catalog


def _ids(message: Message) -> list[str]:
    return list(message.id) if isinstance(message.id, tuple | list) else [message.id]


def _strings(message: Message) -> list[str]:
    return list(message.string) if isinstance(message.string, tuple | list) else [message.string]


def _emphasis_lost(original: str, text: str) -> bool:
    """True when the translation draws fewer **bold** or *italic* spans than the English: CommonMark
    closes one only next to a space or punctuation, so '**设置相同：**用例' keeps its asterisks."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    for filler in ("x", "甲"):  # fields filled with a Latin letter, then a Chinese one
        drawn = [md.renderInline(re.sub(r"\{[^{}]*\}", filler, t)) for t in (original, text)]
        if any(drawn[1].count(tag) < drawn[0].count(tag) for tag in ("<strong>", "<em>")):
            return True
    return False


def _prose(text: str) -> bool:
    return bool(PROSE.search(NOT_PROSE.sub(" ", text)))


def problems(lang: str, catalog: Catalog | None = None, code: Catalog | None = None) -> Iterator[str]:
    """What stops the catalog (the language's, unless given) from covering the code's messages
    (extracted, unless given): each a line naming the message."""
    code = extract() if code is None else code
    catalog = read(lang) if catalog is None else catalog
    for message in code:
        if not message.id:
            continue
        where = ", ".join(sorted({f for f, _ in message.locations}))
        name = f"{_ids(message)[0]!r} ({where})"
        entry = catalog.get(message.id, message.context)
        if entry is None or not all(_strings(entry)):
            yield f"untranslated: {name}"
            continue
        if entry.fuzzy:
            yield f"marked fuzzy (check the suggestion, then remove the flag): {name}"
            continue
        if (RECORDED in entry.flags) != (RECORDED in message.flags):
            yield f"N_() mark changed since the catalog was merged (run `make translations`): {name}"
        original = _ids(message)[-1]
        for text in _strings(entry):
            if sorted(fields(text)) != sorted(fields(original)):
                yield f"replacement fields differ ({fields(original)} vs {fields(text)}): {name}"
            for mark in MARKUP:
                if text.count(mark) != original.count(mark):
                    yield f"{mark!r} appears {original.count(mark)} time(s) in English, {text.count(mark)} here: {name}"
            if "*" in original and _emphasis_lost(original, text):
                yield f"a **bold** or *italic* that Markdown does not draw (keep punctuation outside it): {name}"
            if lang == "zh" and _prose(original) and not CJK.search(text):
                yield f"left in English: {name}"
    extracted = {(m.id if isinstance(m.id, str) else m.id[0], m.context) for m in code if m.id}
    for entry in catalog:
        if entry.id and (_ids(entry)[0], entry.context) not in extracted:
            yield f"no longer in the code (run `make translations`): {_ids(entry)[0]!r}"


def main(argv: list[str]) -> int:
    languages = [lang for lang in LANGUAGES if lang != SOURCE_LANGUAGE]
    if argv == ["update"]:
        for lang in languages:
            catalog = update(lang)
            missing = sum(1 for m in catalog if m.id and (not all(_strings(m)) or m.fuzzy))
            print(f"{catalog_path(lang).relative_to(ROOT)}: {len(catalog)} messages, {missing} to translate")
        return 0
    if argv == ["check"]:
        found = [f"{lang}: {line}" for lang in languages for line in problems(lang)]
        print("\n".join(found) or "every message is translated")
        return 1 if found else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
