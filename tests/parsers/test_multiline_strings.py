"""A string may span lines, as XLA's lexer reads it (`"([^"\\]|\\.)*"`): a module header's
`origin_recovery_table` holds whole modules as strings. The module loads with its own entry (the
text inside the string is not read as computations), and XLA's own parser (jaxlib) agrees."""
from __future__ import annotations

import pytest
from xla_oracle import xla_available

import hloscope
from hloscope.errors import ParseError

TEXT = '''HloModule outer, origin_recovery_table={
  {"k"} : {"k__ovp0"},
  "
    HloModule inner
    ENTRY %recover (x: f32[2]) -> f32[2] {
      ROOT %x = f32[2] parameter(0)
    }
  "
}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2] parameter(0)
  ROOT %n = f32[2] negate(%p)
}
'''


def test_header_string_over_lines_loads() -> None:
    module = hloscope.load(TEXT)
    assert (module.name, module.entry_name) == ("outer", "main")
    assert list(module.computations) == ["main"]
    assert "HloModule inner" in (module.raw_attribute("origin_recovery_table") or "")


def test_unterminated_string_still_refused() -> None:
    with pytest.raises(ParseError, match="unterminated string|never closed|truncated"):
        hloscope.load(TEXT.replace('  "\n}', "}", 1))


@pytest.mark.skipif(not xla_available(), reason="jaxlib._hlo not available")
def test_xla_parses_it_too() -> None:
    from jaxlib import _hlo

    _hlo.hlo_module_from_text(TEXT)
