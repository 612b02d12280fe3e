"""How the documentation checks read the commands the docs show, as a shell would split them and
without running anything:

- which lines of a code block are commands: every line of a ``sh``/``bash``/``shell`` block, and
  the lines after a ``$`` prompt in a ``console`` block (the other lines there are output); a line
  ending in ``\\`` continues on the next, and the body of a here document (``<<'YAML'`` …
  ``YAML``) is text, not commands. A block that names no language is output, or a program's own
  transcript (``aimctl up --node --demo`` prints its steps as ``$ the status's address: …``): it is
  not read;
- each line as shlex tokenises it with the shell's operators apart (``|``, ``&&``, ``;``, ``>``),
  split into its simple commands; a redirection with its target, leading variable assignments,
  shell keywords (``do``, ``then``, ``if``...) and the wrappers that run another program
  (``sudo -E``, ``uv run``, ``python3 -m uv run``, ``time``, ``env``) are left out, so each command
  starts with the program it runs.

A line shlex cannot tokenise (an unclosed quote) raises ``ValueError``."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from tests.unit.docs.documents import Block, Piece

SHELL_LANGUAGES = frozenset({"sh", "bash", "shell"})
PROMPTED_LANGUAGES = frozenset({"console"})
PROMPT = re.compile(r"^\s*\$\s+")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "|&", "(", ")", ";;"})
REDIRECTIONS = frozenset({">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<<-"})
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "{", "}"})
WRAPPERS: tuple[tuple[str, ...], ...] = (
    ("sudo",),
    ("python3", "-m", "uv", "run"),
    ("python", "-m", "uv", "run"),
    ("uv", "run"),
    ("time",),
    ("env",),
    ("exec",),
)


def command_lines(block: Block) -> Iterator[Piece]:
    """The command lines of a code block (see the module's docstring), continuations joined, each at
    the line it starts on."""
    shell = block.language in SHELL_LANGUAGES
    if not shell and block.language not in PROMPTED_LANGUAGES:
        return
    pending: Piece | None = None
    heredoc: str | None = None
    for piece in block.lines:
        if heredoc is not None:
            heredoc = None if piece.text.strip() == heredoc else heredoc
            continue
        text = piece.text
        if pending is None:
            prompt = PROMPT.match(text)
            if not shell and not prompt:
                continue
            text = text[prompt.end() :] if prompt else text
            pending = Piece(piece.where, "")
        pending = Piece(pending.where, f"{pending.text} {text.strip()}".strip())
        if pending.text.endswith("\\"):
            pending = Piece(pending.where, pending.text[:-1])
            continue
        found = HEREDOC.search(pending.text)
        heredoc = found.group(2) if found else None
        yield pending
        pending = None
    if pending is not None:
        yield pending


def tokens(line: str) -> list[str]:
    """The line's words and operators, as a shell splits them (comments dropped)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def simple_commands(line: str) -> list[list[str]]:
    """The simple commands of a line, each starting with the program it runs."""
    commands: list[list[str]] = []
    current: list[str] = []
    words = tokens(line)
    while words:
        word = words.pop(0)
        if word in SEPARATORS:
            commands.append(current)
            current = []
        elif word in REDIRECTIONS:
            if current and current[-1].isdigit():
                current.pop()  # the descriptor of 2> or 2>&1
            if words:
                words.pop(0)
        else:
            current.append(word)
    commands.append(current)
    return [command for command in map(program, commands) if command]


def program(words: list[str]) -> list[str]:
    """``words`` without what precedes the program: assignments, keywords, wrappers and their flags."""
    words = list(words)
    while words:
        if ASSIGNMENT.match(words[0]) or words[0] in KEYWORDS:
            words.pop(0)
            continue
        wrapper = next((w for w in WRAPPERS if tuple(words[: len(w)]) == w), None)
        if wrapper is None:
            return words
        del words[: len(wrapper)]
        while words and words[0].startswith("-"):
            words.pop(0)  # sudo -E, env -i
    return words
