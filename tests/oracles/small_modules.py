"""Small hand-written HLO modules several tests read."""

# A valid scheduled module: an entry that reduces f32[8] with a called `add` computation.
GOOD = """HloModule m, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8]) -> f32[] {
  %p = f32[8]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%p, %zero), dimensions={0}, to_apply=%add
}
"""
