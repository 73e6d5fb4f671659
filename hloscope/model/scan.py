"""Bracket- and string-aware scanning of HLO text: matching brackets, top-level splits, comments.

All scanners jump from one interesting character to the next with a compiled regex, so long
metadata strings and literals cost one C-level search rather than a Python loop per character.
"""
from __future__ import annotations

import re

from hloscope.model.shape_text import TextSyntaxError

_OPEN_TO_CLOSE = {"(": ")", "{": "}", "[": "]"}
# A string may hold line breaks (XLA's lexer reads `"([^"\\]|\\.)*"`: a header's
# origin_recovery_table holds whole modules as strings).
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|"|[(){}\[\],]|/\*.*?\*/')
_STRINGS_AND_COMMENTS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|/\*.*?\*/|//')
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def find_matching(text: str, pos: int) -> int:
    """Index of the bracket closing the one at `pos`; raises TextSyntaxError if unclosed."""
    stack = [_OPEN_TO_CLOSE[text[pos]]]
    for match in _TOKENS.finditer(text, pos + 1):
        token = match.group()
        if token in _OPEN_TO_CLOSE:
            stack.append(_OPEN_TO_CLOSE[token])
        elif token in (")", "}", "]"):
            if token != stack.pop():
                raise TextSyntaxError(f"mismatched '{token}'", match.start())
            if not stack:
                return match.start()
        elif token == '"':
            raise TextSyntaxError("unterminated string", match.start())
    raise TextSyntaxError(f"'{text[pos]}' is never closed", pos)


def split_top_level(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) spans of the comma-separated items of text[start:end] at bracket depth 0."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    depth = 0
    item_start = start
    for match in _TOKENS.finditer(text, start, end):
        token = match.group()
        if token == ",":
            if depth == 0:
                spans.append((item_start, match.start()))
                item_start = match.end()
        elif token in _OPEN_TO_CLOSE:
            depth += 1
        elif token in (")", "}", "]"):
            depth -= 1
            if depth < 0:
                raise TextSyntaxError(f"unexpected '{token}'", match.start())
        elif token == '"':
            raise TextSyntaxError("unterminated string", match.start())
    if depth:
        raise TextSyntaxError("unbalanced brackets", item_start)
    if text[item_start:end].strip() or spans:
        spans.append((item_start, end))
    return spans


def strip_line_comment(line: str) -> str:
    """The line without a trailing `// comment` (a `//` inside a string is kept)."""
    for match in _STRINGS_AND_COMMENTS.finditer(line):
        if match.group() == "//":
            return line[: match.start()]
    return line


def blank_block_comments(text: str) -> str:
    """Replaces `/* ... */` comments by spaces so that offsets stay valid."""
    if "/*" not in text:
        return text
    return _BLOCK_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def bracket_balance(line: str) -> int:
    """Opened minus closed brackets on a line, ignoring strings and comments."""
    if '"' in line or "/" in line:
        line = _STRINGS_AND_COMMENTS.sub("", line)
    return (
        line.count("(") + line.count("{") + line.count("[")
        - line.count(")") - line.count("}") - line.count("]")
    )
