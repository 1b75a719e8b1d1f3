"""The CLI in Chinese (--lang zh, $JAXCOMPARE_LANG): every table's columns line up by display
width in a terminal, JSON stays English, and a language without a catalog is one line, exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from support import cli

# An independent measure of terminal columns (not the package's own): wcwidth comes with IPython.
wcwidth = pytest.importorskip("wcwidth")
RUN = ("run", "--case", "matmul", "--shape", "100x100", "--timing", "quick")
CELL = re.compile(r"\S+(?: \S+)*")  # cells are kept apart by two spaces or more
CHECK = re.compile(r"^(  \[.+?\] )(.+?  +)(\S.*)$")


def width(text: str) -> int:
    return wcwidth.wcswidth(text)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One measured run in each language; the Chinese one saved and written as JSON."""
    tmp = tmp_path_factory.mktemp("lang")
    db, doc = str(tmp / "r.sqlite3"), tmp / "r.json"
    zh = cli(*RUN, "--lang", "zh", "--save", "--db", db, "--json", str(doc))
    en = cli(*RUN)
    assert zh.returncode == 0 and en.returncode == 0, zh.stderr + en.stderr
    return {"zh": zh.stdout, "en": en.stdout, "db": db, "json": json.loads(doc.read_text())}


def phase_table(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] in (["phase"], ["阶段"]))
    end = lines.index("", start)
    return lines[start:end]


def assert_columns_line_up(lines: list[str]) -> None:
    """Every line has as many cells as the header, and each column's cells start (left-aligned)
    or end (right-aligned) at the same display column."""
    spans = [[(width(line[:m.start()]), width(line[:m.end()])) for m in CELL.finditer(line)] for line in lines]
    columns = len(spans[0])
    assert columns >= 4, lines[0]
    for i in range(columns):
        starts, ends = {s[i][0] for s in spans}, {s[i][1] for s in spans}
        assert len(starts) == 1 or len(ends) == 1, (i, "\n".join(lines))


def checklist_rows(text: str) -> list[re.Match[str]]:
    return [m for m in map(CHECK.match, text.splitlines()) if m]


def test_the_phase_table_and_the_checklist_line_up_in_chinese(runs):
    table = phase_table(runs["zh"])
    assert table[0].split()[0] == "阶段" and "NumPy 运行时间" in runs["zh"] and "可信度检查清单" in runs["zh"]
    assert any(width(line) != len(line) for line in table)  # wide characters: the case that needs it
    assert_columns_line_up(table)
    rows = checklist_rows(runs["zh"])
    assert len(rows) >= 10
    for group in (2, 3):  # the title and the reason start at one display column on every row
        assert len({width(m.string[:m.start(group)]) for m in rows}) == 1, "\n".join(m.string for m in rows)


def test_the_agreement_line_names_its_method_in_chinese(runs):
    line = next(line for line in runs["zh"].splitlines() if "rtol" in line)
    assert "direct" not in line and "invariants" not in line, line  # a word of the code's, untranslated


def test_english_output_keeps_its_shape(runs):
    en, zh = phase_table(runs["en"]), phase_table(runs["zh"])
    assert en[0].split()[:2] == ["phase", "median"] and len(en) == len(zh)
    assert_columns_line_up(en)
    assert len(checklist_rows(runs["en"])) == len(checklist_rows(runs["zh"]))
    assert "credibility checklist: " in runs["en"] and "可信度" not in runs["en"]


def test_json_stays_english(runs):
    titles = {c["title"] for c in runs["json"]["checklist"]}
    assert "Outputs agree" in titles and not any(width(t) != len(t) for t in titles)


def test_history_in_chinese_lines_up(runs):
    proc = cli("history", "--db", runs["db"], "--lang", "zh")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "创建时间", "用例"] and "共 1 个结果" in lines[-1]
    # The header and the one row; a run set aside adds a line under them ("?：已搁置 ..."), not a row
    assert_columns_line_up(lines[:2])
    assert all(line.startswith("?：已搁置") for line in lines[2:-1] if "?" in line), lines


def test_sweep_in_chinese():
    proc = cli("sweep", "--case", "matmul", "--sizes", "8", "16", "--quick", "--lang", "zh")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[0] == "形状" and len(lines) == 4
    assert re.search("[\u4e00-\u9fff]", lines[-1]), lines[-1]  # the verdict too
    assert_columns_line_up(lines[:3])


def test_the_language_comes_from_lang_else_the_environment():
    env = os.environ | {"JAXCOMPARE_LANG": "zh"}

    def listing(*args: str) -> subprocess.CompletedProcess[str]:
        return cli("list", *args, env=env, timeout=120)

    assert "矩阵乘积" in listing().stdout
    assert "Matrix product" in listing("--lang", "en").stdout  # --lang wins
    for args, where in ((["--lang", "fr"], "--lang 'fr'"), ([], None)):
        env["JAXCOMPARE_LANG"] = "klingon"
        proc = listing(*args)
        assert proc.returncode == 2 and proc.stdout == "", proc
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert (where or "JAXCOMPARE_LANG 'klingon'") in proc.stderr and "en, zh" in proc.stderr


def test_a_wrong_command_line_is_said_in_the_language_it_asks_for(capsys, monkeypatch):
    """argparse's own errors came in English under --lang zh (a new user's walk-through); the language is
    read from the command line before argparse has parsed it, and argparse is left as it was."""
    import argparse

    from jaxcompare.cli import main

    monkeypatch.delenv("JAXCOMPARE_LANG", raising=False)
    before, plural_before = argparse._, argparse.ngettext
    for argv, said in ((["run", "--case", "matmul", "--precision", "x16", "--lang", "zh"],
                        "jaxcompare: 错误：参数 --precision：无效的选项：'x16'（可选：'x32', 'x64'）"),
                       (["run", "--lang=zh", "--case", "matmul", "--shape"],
                        "jaxcompare: 错误：参数 --shape：需要一个值"),
                       (["atlas", "--lang", "zh", "--diff", "a.json"],  # argparse's one plural word
                        "jaxcompare: 错误：参数 --diff：需要 2 个值"),
                       (["run", "--case", "matmul", "--precision", "x16"],
                        "jaxcompare: error: argument --precision: invalid choice: 'x16' (choose from 'x32', 'x64')")):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2 and capsys.readouterr().err.strip() == said, argv
        assert argparse._ is before and argparse.ngettext is plural_before
    monkeypatch.setenv("JAXCOMPARE_LANG", "zh")
    with pytest.raises(SystemExit):
        main(["list", "--bogus"])
    assert capsys.readouterr().err.strip() == "jaxcompare: 错误：无法识别的参数：--bogus"


def test_lang_before_the_command_is_the_same_as_after_it(capsys, monkeypatch):
    """`--lang zh list` read as a command named 'zh' (argparse's 'invalid choice'); the language goes
    before the command too, the one after it winning, and a bad one there is the same one line."""
    from jaxcompare.cli import main

    monkeypatch.delenv("JAXCOMPARE_LANG", raising=False)
    for argv, expected in ((["--lang", "zh", "list"], "矩阵乘积"),
                           (["--lang=zh", "list", "--lang", "en"], "Matrix product")):
        assert main(argv) == 0
        assert expected in capsys.readouterr().out, argv
    assert main(["--lang", "fr", "list"]) == 2
    assert capsys.readouterr().err.strip() == ("jaxcompare: error: --lang 'fr' is not a language jaxcompare speaks: "
                                               "choose one of en, zh")
