"""Builds one valid HLO module of at least N MB from real modules, for the speed benchmarks.

Each copy of a source module gets every name suffixed (`%fusion.3` -> `%fusion.3_c7`) so names stay
unique; only the last copy keeps its ENTRY marker, and the module header is that copy's, so XLA's
own parser accepts the result. Sources: the corpus's MaxText/JAX Llama-3 8B step (pre-optimization)
and the project's scheduled after-optimization fixtures, interleaved. Fixtures that use a newer
XLA's `%tuple#i` operand form (jax 0.11's H100 dump) are left out: the anchor, the installed
jaxlib's parser, does not read it.

    python benchmarks/generate_big_hlo.py --min-mb 50 -o benchmarks/_generated/big.hlo
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS_SOURCE = ROOT.parent / "shared" / "corpus" / \
    "xla__tools__benchmarks__hlo__hlo_llama3_8b_cp_bf16_1x4.hlo"
_SIGILED_NAME = re.compile(r"%([A-Za-z_][\w.\-]*)")
_HEADER_PARAM = re.compile(r"([(,]\s*)([A-Za-z_][\w.\-]*)(\s*:)")
_TUPLE_INDEX_OPERAND = re.compile(r"%[\w.\-]+#\d")
_SECTION = re.compile(
    r"(?ms)^(FileNames|FunctionNames|FileLocations|StackFrames)\n.*?(?=^%|^ENTRY)")


def source_texts() -> list[str]:
    texts = []
    if CORPUS_SOURCE.exists():
        texts.append(CORPUS_SOURCE.read_text())
    fixtures = sorted((ROOT / "fixtures").glob("**/*after_optimizations.txt"))
    texts += [t for t in (p.read_text() for p in fixtures) if not _TUPLE_INDEX_OPERAND.search(t)]
    if not texts:
        raise SystemExit("no source modules: need ../shared/corpus or fixtures/")
    return texts


def split_header(text: str) -> tuple[str, str]:
    """(HloModule header line, the computations)."""
    header, _, body = text.partition("\n")
    return header, _SECTION.sub("", body)


def renamed_copy(body: str, copy: int, keep_entry: bool) -> str:
    suffix = f"_c{copy}"
    out = _SIGILED_NAME.sub(lambda m: f"%{m.group(1)}{suffix}", body)
    out = "\n".join(_rename_header(line, suffix) if line.rstrip().endswith("{") and "->" in line
                    else line for line in out.split("\n"))
    return out if keep_entry else re.sub(r"(?m)^ENTRY ", "", out)


def _rename_header(line: str, suffix: str) -> str:
    return _HEADER_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}{suffix}{m.group(3)}", line)


def build(min_bytes: int) -> str:
    sources = [split_header(t) for t in source_texts()]
    bodies: list[str] = []
    total, copy = 0, 0
    while total < min_bytes:
        _, body = sources[copy % len(sources)]
        bodies.append(body)
        total += len(body)
        copy += 1
    last_header, _ = sources[(copy - 1) % len(sources)]
    parts = [last_header]
    for i, body in enumerate(bodies):
        parts.append(renamed_copy(body, i, keep_entry=i == len(bodies) - 1))
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-mb", type=float, default=50.0)
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "benchmarks" / "_generated" / "big.hlo")
    args = parser.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = build(int(args.min_mb * 1e6))
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
