"""Seeded mutations of real HLO modules, baselines and manifests: the inputs of the no-crash tests.

`mutate(text, rng)` applies one of: a truncation (anywhere, or at a line end), a deleted,
duplicated or moved line, a few shuffled lines, flipped characters, or an inserted token from
HLO's own vocabulary. `garble_json(text, rng)` does the same to a JSON document. The seed modules
are small real ones (`seed_modules()`): the shared corpus's files under 20 kB that XLA's parser
and hloscope's checks accept, and the hand-written scheduled modules of `small_modules` (one
with a while loop and a conditional).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from small_modules import GOOD, LOOPS

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
MAX_SEED_BYTES = 20_000
TOKENS = ("ROOT ", "%x", "{", "}", "(", ")", "[", "]", ",", "=", "f32[]", "f32[4]{0}", "tuple(",
          "parameter(0)", "-1", "99999999999999999999", '"', "/*", "//", "\n", "ENTRY ",
          "HloModule m\n", "calls=", "to_apply=%x", "index=7", "{...}", "s32[<=4]", "token[]",
          "(f32[], (s32[]))", "control-predecessors={%p}", "is_scheduled=true", "0x", "nan",
          "while(", "body=", "condition=", "conditional(", "async-done(", "\t", " ", ";", "\\",
          "StackFrames\n1 {file_location_id=x parent_frame_id=y}\n", "FileLocations\n")


def seed_modules() -> list[tuple[str, str]]:
    """(name, text) of the small real modules mutations start from (the corpus's when present)."""
    found = [("small_modules.GOOD", GOOD), ("small_modules.LOOPS", LOOPS)]
    if CORPUS.is_dir():
        for path in sorted(CORPUS.glob("*")):
            if path.suffix in (".hlo", ".txt") and path.stat().st_size <= MAX_SEED_BYTES:
                found.append((path.name, path.read_text()))
    return found


def _truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def _truncate_at_line_end(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[: rng.randrange(len(lines) + 1)])


def _delete_line(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    del lines[rng.randrange(len(lines))]
    return "".join(lines)


def _duplicate_line(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    line = lines[rng.randrange(len(lines))]
    lines.insert(rng.randrange(len(lines) + 1), line)
    return "".join(lines)


def _move_line(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    line = lines.pop(rng.randrange(len(lines)))
    lines.insert(rng.randrange(len(lines) + 1), line)
    return "".join(lines)


def _shuffle_lines(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    start = rng.randrange(len(lines))
    window = lines[start : start + rng.randint(2, 6)]
    rng.shuffle(window)
    lines[start : start + len(window)] = window
    return "".join(lines)


def _flip_characters(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        position = rng.randrange(len(chars))
        chars[position] = rng.choice('{}()[],=%"x0-9.\n :\x00\xff') if rng.random() < 0.7 \
            else chr(rng.randrange(1, 0x3000))
    return "".join(chars)


def _insert_token(text: str, rng: random.Random) -> str:
    position = rng.randrange(len(text) + 1)
    return text[:position] + rng.choice(TOKENS) + text[position:]


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "truncate": _truncate, "truncate_at_line_end": _truncate_at_line_end,
    "delete_line": _delete_line, "duplicate_line": _duplicate_line, "move_line": _move_line,
    "shuffle_lines": _shuffle_lines, "flip_characters": _flip_characters,
    "insert_token": _insert_token,
}


def mutate(text: str, rng: random.Random, kind: str | None = None) -> tuple[str, str]:
    """(mutation kind, mutated text): one mutation of `text`, `kind` or one drawn by `rng`."""
    kind = kind or rng.choice(sorted(MUTATIONS))
    return kind, MUTATIONS[kind](text, rng) if text else text


def garble_json(text: str, rng: random.Random) -> str:
    """A JSON document cut, with a line lost or a character or token changed."""
    kind = rng.choice(("truncate", "truncate_at_line_end", "delete_line", "flip_characters",
                       "insert_token", "value"))
    if kind == "value":  # valid JSON, wrong types: numbers as strings, lists as numbers
        return text.replace(": [", ": 7, \"_\": [", 1) if rng.random() < 0.5 \
            else text.replace(": ", ': "', 1).replace(",", '",', 1)
    return MUTATIONS[kind](text, rng)
