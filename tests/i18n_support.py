"""What a Chinese page still says in English (english_left), read from everything AppTest sees a
person read: for tests/test_i18n_pages.py and the pages' own tests after a run in Chinese."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from streamlit.testing.v1 import AppTest

from jaxcompare import all_cases

# Three words in a row, after code, links, names and fields are taken out: English prose.
PROSE = re.compile(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}")
CODE = re.compile(r"```.*?```|`[^`]*`|\]\([^)]*\)|:material/\w+:|https?://\S+", re.DOTALL)
TEXT_FIELDS = {"body", "label", "help", "placeholder", "options", "content", "caption"}
# Words a Chinese page keeps as they are: names of things (docs/translating.md).
NAMES = [name for case in all_cases() for name in (case.name, case.numpy_name, case.jax_name)]
NAMES += ["Open trace file"]  # Perfetto's button, named as the reader will see it there


def _proto_texts(message) -> Iterator[str]:
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            for item in (value if field.is_repeated else [value]):
                yield from _proto_texts(item)
        elif field.type == field.TYPE_STRING and field.name in TEXT_FIELDS:
            yield from (value if field.is_repeated else [value])


def _chart_texts(spec) -> Iterator[str]:
    """Titles, subtitles, axis and legend titles, and the data a chart writes as labels."""
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key in ("title", "subtitle", "text") and isinstance(value, str):
                yield value
            elif key in ("title", "subtitle") and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            elif key in ("label", "side", "group", "role", "part", "component", "row", "stable", "kind"):
                if isinstance(value, str):
                    yield value
            else:
                yield from _chart_texts(value)
    elif isinstance(spec, list):
        for item in spec:
            yield from _chart_texts(item)


def _walk(node) -> Iterator:
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from _walk(child)


def page_texts(at: AppTest, *, tables: bool = True) -> list[str]:
    """Everything a person reads on the page as AppTest sees it (code blocks left out)."""
    texts: list[str] = []
    for node in _walk(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or type(proto).__name__ == "Code":
            continue
        if type(proto).__name__ == "ArrowVegaLiteChart":
            texts += _chart_texts(json.loads(proto.spec))
        elif type(proto).__name__ == "Arrow" and tables:
            frame = node.value
            texts += [str(c) for c in frame.columns]
            texts += [v for v in frame.to_numpy().ravel().tolist() if isinstance(v, str)]
        else:
            texts += _proto_texts(proto)
    return texts


def english_left(at: AppTest, *, tables: bool = True, also_names: tuple[str, ...] = ()) -> list[str]:
    """The page's texts that still hold English prose."""
    left = []
    for text in page_texts(at, tables=tables):
        bare = CODE.sub(" ", text)
        for name in (*NAMES, *also_names):
            bare = bare.replace(name, " ")
        if PROSE.search(bare):
            left.append(text)
    return left


def cpu_model() -> tuple[str, ...]:
    from jaxcompare.app import resources

    env = resources.known_environment() or {}
    return tuple(filter(None, [env.get("cpu_model")]))
