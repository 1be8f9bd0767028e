"""Every command's ``--help`` reads whole: plain words, full sentences, an example line."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from docsbot.cli import build_parser

pytestmark = pytest.mark.unit


def commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Each command and nested command as its words after ``docsbot`` (("db", "stop"),...)."""
    found: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*prefix, name))
                found += commands(sub, (*prefix, name))
    return found


COMMANDS = commands(build_parser())


def help_text(words: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*words, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_every_command_is_covered():
    assert {"index", "refresh", "search", "sync", "embed"} <= {c[0] for c in COMMANDS} and ("db", "stop") in COMMANDS


@pytest.mark.parametrize("words", [(), *COMMANDS], ids=lambda w: " ".join(w) or "docsbot")
def test_help_reads_whole(words: tuple[str, ...], capsys: pytest.CaptureFixture[str]):
    text = help_text(words, capsys)
    assert "``" not in text and ":mod:" not in text  # no reStructuredText
    description = text.split("\n\n")[1]  # usage, blank line, the description's paragraph
    assert description.strip().endswith("."), description  # a whole sentence, not one cut mid-way
    lines = text.rstrip().splitlines()
    assert lines[-2] == "example:" and lines[-1].strip().startswith("docsbot ")
    example = lines[-1].split()
    # the example runs the command it documents (db's example may name its subcommand)
    assert example[1 : 1 + len(words)] == list(words) or (words == ("db",) and example[1] == "db") or not words


def test_each_example_parses():
    """An example a user pastes is accepted by the parser (arguments and options as the command defines them)."""
    import shlex

    from docsbot.cli.examples import EXAMPLES

    for example in EXAMPLES.values():
        build_parser().parse_args(shlex.split(example)[1:])


def test_docsbot_help_as_a_process_opens_with_a_whole_sentence():
    out = subprocess.run(
        [sys.executable, "-m", "docsbot.cli", "--help"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    first = out.split("\n\n")[1]
    assert first.startswith("Index and refresh documentation sites") and "``" not in out
