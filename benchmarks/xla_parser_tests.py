"""XLA's own parser (and verifier) test modules through hloscope's loader: does hloscope accept
the modules XLA's tests accept and refuse, at a located error, the ones they refuse?

The test sources are read, never committed: pass the path of XLA's `hlo_parser_test.cc` (and,
optionally, `hlo_verifier_test.cc`) and the XLA commit they come from. Every module-like raw string
(`R"(...)"` holding an `ENTRY` or an `HloModule` header) is one case:

- in the `TestData` tables (`CreateTestCases`, `CreateShortTestCases`,
  `CreateNonRoundtripTestCases`) it is valid: the parameterized tests parse and verify it;
- in a `TEST_F`/`TEST` body, its verdict is read from the assertions between the call that parses
  (or verifies) it and the next such call: a status expected not OK (`EXPECT_FALSE(...ok())`,
  `ExpectHasSubstr(...status().message()...)`, `StatusIs(...)`, `EXPECT_NE(OkStatus, ...)`,
  `HasSubstr` on a status) makes it invalid, else it is valid. Strings fed to `absl::StrFormat`,
  `StrReplaceAll` or `StrCat` are templates and are left out (counted).

A valid module agrees when `hloscope.loader.load_all` loads it; an invalid one when it raises a
`ParseError` (it carries file:line:col). Any other hloscope error on an invalid module is counted
as "refused, not located"; any exception that is not hloscope's is a crash. With `--jaxlib`, each
disagreement also says what the installed jaxlib's XLA parser (`hlo_module_from_text`, which
parses without verifying) makes of the module, which tells syntax that changed between that XLA
and the tests' commit from a rule hloscope lacks.

    python benchmarks/xla_parser_tests.py PATH/hlo_parser_test.cc [PATH/hlo_verifier_test.cc]
        --xla-commit SHA [--jaxlib] [--show NAME]
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from hloscope.errors import HloscopeError, ParseError  # noqa: E402
from hloscope.loader import load_all  # noqa: E402

RAW_STRING = re.compile(r'R"([A-Za-z_]*)\(')
TABLE_START = re.compile(r"^std::vector<(?:NonRoundtrip)?TestData> (\w+)\(\) \{", re.M)
TEST_START = re.compile(r"^TEST(?:_F|_P)?\((\w+),\s*(\w+)\)", re.M)
BLOCK_END = re.compile(r"^}\s*$", re.M)
DECLARED = re.compile(r"(\w+)(?:\[\])?\s*(?:=|\(|\{)\s*$")
PARSE_CALL = re.compile(r"ParseAndReturn(?:Un)?[Vv]erifiedModule|ParseAndVerifyModule|"
                        r"ParseHloModule|ParseModule")
VERIFIER_RUN = re.compile(r"verifier\(\)\.Run|HloVerifier[({]|\.Run\(module")
FAILURE = re.compile(
    r"(?:EXPECT|ASSERT)_FALSE\([^;]*\bok\(\)|!\s*[\w.>()-]*\bok\(\)|ExpectHasSubstr\([^;]*status\(\)"
    r"|StatusIs\((?!\s*(?:absl::StatusCode::|tsl::error::)?(?:kOk|OK)\b)|EXPECT_NE\(absl::OkStatus\(\)|HasSubstr\([^;]*\n?[^;]*status|"
    r"status\(\)\.message\(\)|status\.message\(\)|Not\(IsOk\(\)\)"
    r"|EXPECT_THAT\(status,|EXPECT_THAT\(\s*\w*[sS]tatus")
TEMPLATE = "a template (StrFormat, StrReplaceAll, StrCat) or never parsed"
# Fixtures of hlo_verifier_test.cc that run it with options hloscope does not model.
VERIFIER_FIXTURES = ("LayoutSensitive", "AllowMixedPrecision", "LayoutFusion",
                     "CollectiveDeadlocks", "SkipCheck")
EDITED = re.compile(r"->(?:Replace\w*|set_\w+|mutable_\w+|Remove\w*|Add\w*|Set\w*)\(|"
                    r"\.set_\w+\(|ReplaceAllUsesWith|RemoveInstruction")
_FILECHECK = re.compile(r"\s*(?://|;)?\s*CHECK")
TEMPLATE_USE = re.compile(r"absl::Str(?:Format|ReplaceAll|Cat|Replace)\s*\(\s*$")


@dataclass(frozen=True)
class Case:
    """One module of XLA's tests and what the test expects of it."""

    source: str  # the test file's name
    test: str  # Fixture.Name, or the table's name and the entry's number
    line: int  # where the raw string starts in the test file
    text: str
    valid: bool
    verified: bool  # whether XLA's test runs the verifier on it (else the parser alone)

    @property
    def name(self) -> str:
        return f"{self.test}@{self.source}:{self.line}"


@dataclass(frozen=True)
class Outcome:
    case: Case
    verdict: str  # "loaded", "refused" (a ParseError), "refused, not located", "crash"
    detail: str

    @property
    def agrees(self) -> bool:
        return self.verdict == ("loaded" if self.case.valid else "refused")


def raw_strings(source: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of every raw string literal: start at `R"`, end after the closing
    quote."""
    found = []
    for match in RAW_STRING.finditer(source):
        close = ")" + match.group(1) + '"'
        end = source.index(close, match.end())
        found.append((match.start(), end + len(close), source[match.end():end]))
    return found


def _masked(source: str, strings: list[tuple[int, int, str]]) -> str:
    """The source with each raw string's text blanked (offsets kept), so that a module's `}` or
    words are not read as C++."""
    parts, at = [], 0
    for start, end, _ in strings:
        parts += [source[at:start], re.sub(r"[^\n]", " ", source[start:end])]
        at = end
    return "".join(parts) + source[at:]


def _blocks(source: str, pattern: re.Pattern[str]) -> list[tuple[int, int, str]]:
    """(start, end, name) of each top-level block that starts with `pattern` and ends at the
    next `}` in column 0."""
    blocks = []
    for match in pattern.finditer(source):
        end = BLOCK_END.search(source, match.end())
        name = ".".join(g for g in match.groups() if g)
        blocks.append((match.start(), end.end() if end else len(source), name))
    return blocks


def _is_module(text: str) -> bool:
    """Holds `ENTRY` or starts with `HloModule` outside FileCheck lines (`// CHECK: ENTRY`,
    `; CHECK-NEXT:`, `CHECK:`), which are expected output, not a module."""
    text = "\n".join(line for line in text.splitlines() if not _FILECHECK.match(line))
    return "ENTRY" in text or text.lstrip().startswith("HloModule")


def extract(path: Path) -> tuple[list[Case], Counter[str]]:
    """Every module of one test file with its expected verdict, and what was left out."""
    source = path.read_text()
    strings = raw_strings(source)
    source = _masked(source, strings)
    tables = _blocks(source, TABLE_START)
    tests = _blocks(source, TEST_START)
    cases, left_out = [], Counter[str]()
    for start, end, text in strings:
        if not _is_module(text):
            left_out["not a module (a shape, sharding or other attribute string)"] += 1
            continue
        line = source.count("\n", 0, start) + 1
        table = next((t for t in tables if t[0] <= start < t[1]), None)
        if table is not None:
            cases.append(Case(path.name, table[2], line, text, True, True))
            continue
        test = next((t for t in tests if t[0] <= start < t[1]), None)
        if test is None:
            left_out["outside any test or table"] += 1
            continue
        verdict = _test_verdict(source, start, end, test)
        if isinstance(verdict, str):
            left_out[verdict] += 1
            continue
        cases.append(Case(path.name, test[2], line, text, *verdict))
    return cases, left_out


def _test_verdict(source: str, start: int, end: int,
                  test: tuple[int, int, str]) -> tuple[bool, bool] | str:
    """(valid, verified) from the assertions on the string's parse, or why the string is left
    out: a template, never parsed, run under a verifier option, or edited in C++ first."""
    before = source[test[0]:start]
    statement_head = before[before.rfind(";") + 1:]
    if TEMPLATE_USE.search(statement_head.rstrip()):
        return TEMPLATE
    declared = DECLARED.search(statement_head.rstrip())
    body_after = source[end:test[1]]
    named = bool(declared) and declared.group(1) not in ("ParseAndReturnUnverifiedModule",
                                                         "ParseAndReturnVerifiedModule")
    if named:
        variable = declared.group(1)
        uses = [m.start() for m in re.finditer(rf"\b{re.escape(variable)}\b", body_after)]
        if any(TEMPLATE_USE.search(body_after[:u].rstrip()) for u in uses):
            return TEMPLATE
        call = next((u for u in uses if PARSE_CALL.search(body_after[max(0, u - 160):u])),
                    None)
        if call is None:
            return TEMPLATE
        window_start = max(0, call - 160)
    else:  # the string is the call's argument itself
        window_start = 0
        call = 0
    following = PARSE_CALL.search(body_after, call + 1)
    window = body_after[window_start:following.start() if following else len(body_after)]
    if VERIFIER_RUN.search(window):
        if any(option in test[2] for option in VERIFIER_FIXTURES) or "HloVerifierOpts" in window:
            return ("run under a verifier option (layout-sensitive, mixed precision, "
                    "HloVerifierOpts)")
        if EDITED.search(window):
            return "edited in C++ between parsing and the verifier"
    head = body_after[window_start:call] if named else source[test[0]:end]
    verified = "Unverified" not in head[-300:] or bool(VERIFIER_RUN.search(window))
    return (not FAILURE.search(window), verified)


def run_case(case: Case) -> Outcome:
    """hloscope's loader on one module, as `hloscope inspect` loads a file."""
    try:
        load_all(case.text + ("\n" if "\n" not in case.text else ""))
    except ParseError as error:
        return Outcome(case, "refused", error.message)
    except HloscopeError as error:
        return Outcome(case, "refused, not located", f"{type(error).__name__}: {error}")
    except Exception as error:  # noqa: BLE001  (what the comparison counts as a crash)
        return Outcome(case, "crash", f"{type(error).__name__}: {error}")
    return Outcome(case, "loaded", "")


def jaxlib_verdict(text: str) -> str:
    """What the installed jaxlib's XLA parser makes of a module (unverified)."""
    try:
        from jaxlib import _hlo
    except ImportError:
        return "jaxlib absent"
    try:
        _hlo.hlo_module_from_text(text)
    except Exception as error:  # noqa: BLE001  (any refusal)
        return "jaxlib refuses: " + str(error).splitlines()[0][:90]
    return "jaxlib parses"


def report(outcomes: list[Outcome], left_out: Counter[str], commit: str, files: list[str],
           jaxlib: bool) -> str:
    agree = sum(o.agrees for o in outcomes)
    crashes = sum(o.verdict == "crash" for o in outcomes)
    valid = [o for o in outcomes if o.case.valid]
    lines = [f"XLA commit {commit}: {', '.join(files)}",
             f"{len(outcomes)} modules ({len(valid)} valid, {len(outcomes) - len(valid)} invalid); "
             f"agree: {agree} of {len(outcomes)}; crashes: {crashes}",
             f"left out ({sum(left_out.values())} raw strings):"]
    lines += [f"  {count:4d}  {why}" for why, count in sorted(left_out.items())]
    lines.append("")
    for source in sorted({o.case.source for o in outcomes}):
        mine = [o for o in outcomes if o.case.source == source]
        lines.append(f"  {source}: {sum(o.agrees for o in mine)} of {len(mine)} agree")
    classes: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        if not outcome.agrees:
            expected = "valid" if outcome.case.valid else "invalid"
            if outcome.case.valid and not outcome.case.verified:
                expected += " (parser only)"
            classes.setdefault(f"{expected}, {outcome.verdict}", []).append(outcome)
    for label, members in sorted(classes.items()):
        lines += ["", f"{label}: {len(members)}"]
        for outcome in members:
            note = f"  [{jaxlib_verdict(outcome.case.text)[:40]}]" if jaxlib else ""
            detail = outcome.detail.splitlines()[0][:112] if outcome.detail else ""
            lines.append(f"  {outcome.case.name}{note}")
            if detail:
                lines.append(f"      {detail}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("test_files", nargs="+", type=Path)
    parser.add_argument("--xla-commit", required=True)
    parser.add_argument("--jaxlib", action="store_true",
                        help="say what the installed jaxlib's parser makes of each disagreement")
    parser.add_argument("--show", help="print the module of this case name and stop")
    args = parser.parse_args()
    cases, left_out = [], Counter[str]()
    for path in args.test_files:
        found, skipped = extract(path)
        cases += found
        left_out += skipped
    if args.show:
        print(next(c.text for c in cases if c.name == args.show))
        return
    outcomes = [run_case(case) for case in cases]
    print(report(outcomes, left_out, args.xla_commit, [p.name for p in args.test_files],
                 args.jaxlib))


if __name__ == "__main__":
    main()
