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

# A valid scheduled module with a while loop (a counter and an f32[4] carry) and a conditional
# picking one of two branches: the structures whose malformed forms once crashed analyses.
LOOPS = """HloModule loops, is_scheduled=true

%cond (c: (s32[], f32[4])) -> pred[] {
  %c = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (b: (s32[], f32[4])) -> (s32[], f32[4]) {
  %b = (s32[], f32[4]{0}) parameter(0)
  %j = s32[] get-tuple-element(%b), index=0
  %x = f32[4]{0} get-tuple-element(%b), index=1
  %one = s32[] constant(1)
  %k = s32[] add(%j, %one)
  %y = f32[4]{0} multiply(%x, %x)
  ROOT %t = (s32[], f32[4]{0}) tuple(%k, %y)
}

%left (l: f32[4]) -> f32[4] {
  %l = f32[4]{0} parameter(0)
  ROOT %neg = f32[4]{0} negate(%l)
}

%right (r: f32[4]) -> f32[4] {
  %r = f32[4]{0} parameter(0)
  ROOT %exp = f32[4]{0} exponential(%r)
}

ENTRY %main (p: f32[4], q: pred[]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = pred[] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %p)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  %out = f32[4]{0} get-tuple-element(%w), index=1
  ROOT %c = f32[4]{0} conditional(%q, %out, %out), true_computation=%left, false_computation=%right
}
"""
