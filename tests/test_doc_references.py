"""What the code, tests and docs cite is in the repository: every `docs/<page>.md` named in
hloscope/, tests/ and benchmarks/ exists, every relative link between docs/ pages resolves, and
nothing cites the design notes the repository does not hold (their facts are in docs/)."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

CITED_PAGE = re.compile(r"\bdocs/([\w-]+\.md)")
RELATIVE_LINK = re.compile(r"\]\(([\w./-]+\.md)(?:#[\w-]*)?\)")
OUTSIDE_DOC = "DESIGN" + ".md"  # spelled apart so this file does not cite it


def sources() -> list[Path]:
    found = [path for folder in ("hloscope", "tests", "benchmarks")
             for path in (REPO / folder).rglob("*.py")]
    return found + sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]


def test_every_cited_docs_page_exists() -> None:
    cited = {(path.relative_to(REPO), page) for path in sources()
             for page in CITED_PAGE.findall(path.read_text(encoding="utf-8"))}
    assert len(cited) > 20
    missing = [f"{path} cites docs/{page}" for path, page in sorted(cited)
               if not (REPO / "docs" / page).is_file()]
    assert not missing, "\n".join(missing)


def test_links_between_docs_pages_resolve() -> None:
    broken = [f"{page.name} links {target}" for page in sorted((REPO / "docs").glob("*.md"))
              for target in RELATIVE_LINK.findall(page.read_text(encoding="utf-8"))
              if not (page.parent / target).resolve().is_file()]
    assert not broken, "\n".join(broken)


def test_no_file_cites_a_document_outside_the_repository() -> None:
    citing = [str(path.relative_to(REPO)) for path in sources()
              if OUTSIDE_DOC in path.read_text(encoding="utf-8")]
    assert not citing, citing
