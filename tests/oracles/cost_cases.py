"""Hand-built HLO modules, one per cost rule, that tests compare with XLA's own cost analysis.

Each exercises what a rule hinges on (window shapes of a convolution, a fusion's parameter users,
a loop's condition, ...). They are written for XLA's parser: every one must load in both.
"""
from __future__ import annotations

ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

GE = """
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
"""

CASES: dict[str, str] = {
    "elementwise_and_transcendentals": """
HloModule m
ENTRY e {
  p = f32[8,16] parameter(0)
  q = f32[8,16] parameter(1)
  a = f32[8,16] add(p, q)
  x = f32[8,16] exponential(a)
  t = f32[8,16] tanh(x)
  r = f32[8,16] rsqrt(t)
  e = f32[8,16] erf(r)
  c = pred[8,16] compare(e, q), direction=LT
  s = f32[8,16] select(c, e, q)
  v = bf16[8,16] convert(s)
  b = s16[8,16] bitcast-convert(v)
  ROOT w = f32[8,16] clamp(p, s, q)
}
""",
    "dot_batch_and_contracting": """
HloModule m
ENTRY e {
  a = f32[4,32,64] parameter(0)
  b = f32[4,64,48] parameter(1)
  d = f32[4,32,48] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0},
      rhs_contracting_dims={1}
  c = f32[8,6] parameter(2)
  k = f32[6,5,8] parameter(3)
  ROOT d2 = f32[5] dot(c, k), lhs_contracting_dims={0,1}, rhs_contracting_dims={2,0}
}
""",
    "convolutions": """
HloModule m
ENTRY e {
  x = f32[2,32,32,8] parameter(0)
  w = f32[3,3,8,16] parameter(1)
  c1 = f32[2,32,32,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  c2 = f32[2,16,16,16] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1},
      dim_labels=b01f_01io->b01f
  c3 = f32[2,63,63,16] convolution(x, w), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2},
      dim_labels=b01f_01io->b01f
  c4 = f32[2,28,28,16] convolution(x, w), window={size=3x3 rhs_dilate=2x2},
      dim_labels=b01f_01io->b01f
  dw = f32[3,3,1,8] parameter(2)
  c5 = f32[2,30,30,8] convolution(x, dw), window={size=3x3}, dim_labels=b01f_01io->b01f,
      feature_group_count=8
  y = f32[4,8,8,3] parameter(3)
  g = f32[3,3,3,8] parameter(4)
  c6 = f32[1,6,6,8] convolution(y, g), window={size=3x3}, dim_labels=b01f_01io->b01f,
      batch_group_count=4
  v = f32[5,7,2] parameter(5)
  k = f32[3,7,2] parameter(6)
  c7 = f32[5,3,1] convolution(v, k), window={size=2}, dim_labels=bf0_oi0->bf0
  // c7 is dead code: XLA's cost analysis visits unreachable instructions too
  ROOT t = (f32[2,32,32,16], f32[2,16,16,16], f32[2,63,63,16], f32[2,28,28,16],
      f32[2,30,30,8], f32[1,6,6,8]) tuple(c1, c2, c3, c4, c5, c6)
}
""",
    "reductions": "HloModule m\n" + ADD + GE + """ENTRY e {
  p = f32[8,64,32] parameter(0)
  z = f32[] constant(0)
  r = f32[8,32] reduce(p, z), dimensions={1}, to_apply=add
  w = f32[8,32,16] reduce-window(p, z), window={size=1x4x2 stride=1x2x2}, to_apply=add
  c = f32[8,64,32] reduce-window(p, z), window={size=1x127x1 pad=0_0x63_63x0_0}, to_apply=add
  s = f32[8,32,16] parameter(1)
  ROOT x = f32[8,64,32] select-and-scatter(p, s, z), window={size=1x2x2 stride=1x2x2}, select=ge,
      scatter=add
}
""",
    "variadic_reduce_and_sort": """
HloModule m
argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  g = pred[] compare(a, b), direction=GE
  v = f32[] select(g, a, b)
  i = s32[] select(g, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ai = s32[] parameter(2)
  bi = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT
}
ENTRY e {
  p = f32[16,100] parameter(0)
  i = s32[16,100] iota(), iota_dimension=1
  z = f32[] constant(0)
  zi = s32[] constant(0)
  r = (f32[16], s32[16]) reduce(p, i, z, zi), dimensions={1}, to_apply=argmax
  ROOT s = (f32[16,100], s32[16,100]) sort(p, i), dimensions={1}, to_apply=less
}
""",
    "data_movement": """
HloModule m
ENTRY e {
  p = f32[64,32] parameter(0)
  i = s32[] parameter(1)
  u = f32[8,32] parameter(2)
  s = f32[16,32] slice(p), slice={[0:32:2], [0:32]}
  d = f32[8,32] dynamic-slice(p, i, i), dynamic_slice_sizes={8,32}
  x = f32[64,32] dynamic-update-slice(p, u, i, i)
  b = f32[4,64,32] broadcast(p), dimensions={1,2}
  t = f32[32,64] transpose(p), dimensions={1,0}
  tb = f32[32,64]{0,1} transpose(p), dimensions={1,0}
  r = f32[2048] reshape(p)
  c = f32[128,32] concatenate(p, x), dimensions={0}
  zero = f32[] constant(0)
  pd = f32[66,34] pad(p, zero), padding=1_1x1_1
  v = f32[64,32] reverse(p), dimensions={0}
  k = f32[64,32] copy(p)
  bc = f32[32,64] bitcast(p)
  io = s32[64] iota(), iota_dimension=0
  ROOT o = (f32[16,32], f32[8,32], f32[4,64,32], f32[32,64], f32[2048]) tuple(s, d, b, t, r)
}
""",
    "gather_scatter": "HloModule m\n" + ADD + """ENTRY e {
  table = f32[512,64] parameter(0)
  idx = s32[16,1] parameter(1)
  g = f32[16,64] gather(table, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},
      index_vector_dim=1, slice_sizes={1,64}
  upd = f32[16,64] parameter(2)
  ROOT s = f32[512,64] scatter(table, idx, upd), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
""",
    "linear_algebra": """
HloModule m
ENTRY e {
  a = f32[4,32,32] parameter(0)
  b = f32[4,32,16] parameter(1)
  t = f32[4,32,16] triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  c = f32[4,32,32] cholesky(a), lower=true
  z = c64[8,64] parameter(2)
  f = c64[8,64] fft(z), fft_type=FFT, fft_length={64}
  ROOT o = (f32[4,32,16], f32[4,32,32], c64[8,64]) tuple(t, c, f)
}
""",
    "rng": """
HloModule m
ENTRY e {
  lo = f32[] parameter(0)
  hi = f32[] parameter(1)
  r = f32[32,8] rng(lo, hi), distribution=rng_uniform
  k = u64[2] parameter(2)
  ROOT g = (u64[2], u32[16,16]) rng-bit-generator(k), algorithm=rng_default
}
""",
    "fusions": """
HloModule m
fused_dus {
  p0 = f32[64,32] parameter(0)
  p1 = f32[8,32] parameter(1)
  p2 = s32[] parameter(2)
  n = f32[8,32] negate(p1)
  ROOT d = f32[64,32] dynamic-update-slice(p0, n, p2, p2)
}
fused_reads {
  p0 = f32[64,32] parameter(0)
  p1 = (f32[32], f32[64]) parameter(1)
  g0 = f32[32] get-tuple-element(p1), index=0
  sl = f32[16,32] slice(p0), slice={[0:16], [0:32]}
  b = f32[16,32] broadcast(g0), dimensions={1}
  m = f32[16,32] multiply(sl, b)
  big = f32[16,32] constant({...})
  a = f32[16,32] add(m, big)
  e = f32[16,32] exponential(a)
  ROOT t = (f32[16,32], f32[16,32]) tuple(a, e)
}
ENTRY e {
  x = f32[64,32] parameter(0)
  u = f32[8,32] parameter(1)
  i = s32[] parameter(2)
  f1 = f32[64,32] fusion(x, u, i), kind=kLoop, calls=fused_dus
  v = f32[32] parameter(3)
  w = f32[64] parameter(4)
  tp = (f32[32], f32[64]) tuple(v, w)
  ROOT f2 = (f32[16,32], f32[16,32]) fusion(f1, tp), kind=kLoop, calls=fused_reads
}
""",
    "nested_fusion": """
HloModule m
inner {
  q0 = f32[64,32] parameter(0)
  ROOT n = f32[64,32] negate(q0)
}
outer {
  p0 = f32[64,32] parameter(0)
  f = f32[64,32] fusion(p0), kind=kLoop, calls=inner
  s = f32[8,32] slice(f), slice={[0:8], [0:32]}
  ROOT m = f32[8,32] multiply(s, s)
}
ENTRY e {
  x = f32[64,32] parameter(0)
  ROOT o = f32[8,32] fusion(x), kind=kLoop, calls=outer
}
""",
    "custom_fusion_gather": """
HloModule m
gathering {
  t = f32[512,64] parameter(0)
  i = s32[16,1] parameter(1)
  g = f32[16,64] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},
      index_vector_dim=1, slice_sizes={1,64}
  ROOT n = f32[16,64] negate(g)
}
ENTRY e {
  t = f32[512,64] parameter(0)
  i = s32[16,1] parameter(1)
  ROOT f = f32[16,64] fusion(t, i), kind=kCustom, calls=gathering
}
""",
    "control_flow": """
HloModule m
cond {
  s = (s32[], f32[32,32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[32,32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[32,32] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[32,32] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[], f32[32,32]) tuple(j, y)
}
cheap {
  a = (f32[32,32]) parameter(0)
  x = f32[32,32] get-tuple-element(a), index=0
  ROOT e = f32[32,32] exponential(x)
}
costly {
  a = (f32[32,32]) parameter(0)
  x = f32[32,32] get-tuple-element(a), index=0
  ROOT d = f32[32,32] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
called {
  x = f32[32,32] parameter(0)
  ROOT m = f32[32,32] multiply(x, x)
}
ENTRY e {
  x = f32[32,32] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[32,32]) tuple(z, x)
  w = (s32[], f32[32,32]) while(t), condition=cond, body=body
  y = f32[32,32] get-tuple-element(w), index=1
  k = s32[] parameter(1)
  a = (f32[32,32]) tuple(y)
  c = f32[32,32] conditional(k, a, a), branch_computations={cheap, costly}
  ROOT r = f32[32,32] call(c), to_apply=called
}
""",
    "async_and_collectives": "HloModule m, num_partitions=4\n" + ADD + """wrapped {
  x = f32[64,32] parameter(0)
  ROOT n = f32[64,32] negate(x)
}
ENTRY e {
  p = f32[64,32] parameter(0)
  s = ((f32[64,32]), f32[64,32], s32[]) async-start(p), calls=wrapped
  d = f32[64,32] async-done(s)
  ar = f32[64,32] all-reduce(d), replica_groups={{0,1,2,3}}, to_apply=add
  ag = f32[256,32] all-gather(ar), replica_groups={{0,1,2,3}}, dimensions={0}
  rs = f32[64,32] reduce-scatter(ag), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=add
  aa = f32[64,32] all-to-all(rs), replica_groups={{0,1,2,3}}, dimensions={0}
  cp = f32[64,32] collective-permute(aa), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ars = f32[64,32] all-reduce-start(cp), replica_groups={{0,1,2,3}}, to_apply=add
  ard = f32[64,32] all-reduce-done(ars)
  ags = (f32[64,32], f32[256,32]) all-gather-start(ard), replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT agd = f32[256,32] all-gather-done(ags)
}
""",
    "custom_calls_and_feeds": """
HloModule m
ENTRY e {
  p = f32[64,32] parameter(0)
  c = f32[64,32] custom-call(p), custom_call_target="my_kernel"
  tok = token[] after-all()
  i = ((f32[16], s32[4]), token[]) infeed(tok)
  v = (f32[16], s32[4]) get-tuple-element(i), index=0
  t2 = token[] get-tuple-element(i), index=1
  o = token[] outfeed(v, t2)
  ROOT n = f32[64,32] negate(c)
}
""",
    "dynamic_and_packed_shapes": """
HloModule m
ENTRY e {
  p = f32[<=16,8] parameter(0)
  n = f32[<=16,8] negate(p)
  q = s4[1024]{0:E(4)} parameter(1)
  a = s4[1024]{0:E(4)} add(q, q)
  r = s4[1024] parameter(2)
  b = s4[1024] add(r, r)
  ROOT t = (f32[<=16,8], s4[1024]{0:E(4)}, s4[1024]) tuple(n, a, b)
}
""",
    "fusion_parameter_users": """
HloModule m
inner {
  q0 = f32[64,32] parameter(0)
  ROOT n = f32[64,32] negate(q0)
}
reads {
  p0 = f32[64,32] parameter(0)
  p1 = s32[] parameter(1)
  p2 = f32[64,32] parameter(2)
  ds = f32[8,32] dynamic-slice(p0, p1, p1), dynamic_slice_sizes={8,32}
  ds2 = f32[8,32] dynamic-slice(p2, p1, p1), dynamic_slice_sizes={8,32}
  f = f32[64,32] fusion(p2), kind=kLoop, calls=inner
  ds3 = f32[8,32] dynamic-slice(f, p1, p1), dynamic_slice_sizes={8,32}
  a = f32[8,32] add(ds, ds2)
  b = f32[8,32] add(a, ds3)
  r = f32[64,32] reshape(p0)
  ROOT t = (f32[8,32], f32[64,32]) tuple(b, r)
}
ENTRY e {
  x = f32[64,32] parameter(0)
  i = s32[] parameter(1)
  y = f32[64,32] parameter(2)
  ROOT o = (f32[8,32], f32[64,32]) fusion(x, i, y), kind=kLoop, calls=reads
}
""",
    "map_barrier_predicated_conditional": """
HloModule m
square {
  a = f32[] parameter(0)
  ROOT m = f32[] multiply(a, a)
}
on_true {
  a = f32[8] parameter(0)
  ROOT l = f32[8] log(a)
}
on_false {
  a = f32[8] parameter(0)
  b = f32[8] add(a, a)
  ROOT c = f32[8] multiply(b, b)
}
ENTRY e {
  p = f32[8] parameter(0)
  q = pred[] parameter(1)
  mp = f32[8] map(p), dimensions={0}, to_apply=square
  rp = f32[8] reduce-precision(mp), exponent_bits=5, mantissa_bits=10
  t = (f32[8], f32[8]) tuple(rp, p)
  ob = (f32[8], f32[8]) opt-barrier(t)
  x = f32[8] get-tuple-element(ob), index=0
  ROOT c = f32[8] conditional(q, x, x), true_computation=on_true, false_computation=on_false
}
""",
}

# The grammar forms XLA's parser rewrites (tests/parsers/test_xla_grammar.py): the async shorthand
# becomes async-start calling a wrapped computation, nested operands and shape-less instructions
# become ordinary ones; a scan is charged its to_apply times the elements of its operand 1 (once
# for a scalar init, twice for the f32[2] carry of XLA's own HloVerifierTest.Scan module) and its
# own operand and result bytes.
CASES["async_shorthand"] = """
HloModule m
""" + ADD + """
fused {
  fp = f32[4,8] parameter(0)
  ROOT fe = f32[4,8] exponential(fp)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  w = f32[8,16] parameter(1)
  st1 = ((f32[4,8], f32[8,16]), f32[4,16], s32[]) dot-start(p, w), lhs_contracting_dims={1},
      rhs_contracting_dims={0}
  dn1 = f32[4,16] dot-done(st1)
  st2 = ((f32[4,8], f32[4,8]), f32[4,8], s32[]) multiply-start(p, p)
  up2 = ((f32[4,8], f32[4,8]), f32[4,8], s32[]) multiply-update(st2)
  dn2 = f32[4,8] multiply-done(up2)
  st3 = ((f32[4,8]), f32[4,8], s32[]) fusion-start(dn2), kind=kLoop, calls=fused
  dn3 = f32[4,8] fusion-done(st3)
  st4 = ((f32[4,8]), f32[1,8], s32[]) reduce-scatter-start(dn3), replica_groups={},
      dimensions={0}, to_apply=add
  dn4 = f32[1,8] reduce-scatter-done(st4)
  ROOT t = (f32[4,16], f32[1,8]) tuple(dn1, dn4)
}
"""

CASES["nested_and_shapeless"] = """
HloModule m
ENTRY e { x = f32[16,32] parameter(0) y = f32[32,8] parameter(1)
  d = dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[16,8] add(tanh(d), multiply(d, exponential(d)))
}
"""

CASES["scan"] = """
HloModule m
combine {
  a = f32[3] parameter(0)
  c = f32[] parameter(1)
  s = f32[] exponential(c)
  m = f32[3] multiply(a, a)
  ROOT t = (f32[3], f32[]) tuple(m, s)
}
ENTRY e {
  x = f32[10,3] parameter(0)
  i = f32[] constant(0)
  ROOT sc = (f32[10,3], f32[]) scan(x, i), dimensions={0}, num_carries=1, to_apply=combine
}
"""

CASES["scan_vector_carry"] = """
HloModule m
add {
  lhs = f32[2] parameter(0)
  rhs = f32[2] parameter(1)
  add = f32[2] add(lhs, rhs)
  ROOT t = (f32[2], f32[2]) tuple(add, add)
}
ENTRY e {
  init = f32[2] constant({0, 0})
  input = f32[4,2] parameter(0)
  ROOT scan = (f32[4,2], f32[2]) scan(input, init), dimensions={0}, num_carries=1,
      is_associative=true, to_apply=add
}
"""

# A send-done is charged only its operand's tuple table (XLA infers its shape as token[]); a
# recv-done its output and operand.
CASES["send_recv_done"] = """
HloModule m
ENTRY e {
  data = f32[16] parameter(0)
  a = token[] after-all()
  send = (f32[16], u32[], token[]) send(data, a), channel_id=1
  sd = (f32[16], token[]) send-done(send), channel_id=1
  recv = (f32[16], u32[], token[]) recv(a), channel_id=2
  rd = (f32[16], token[]) recv-done(recv), channel_id=2
  ROOT t = ((f32[16], token[]), (f32[16], token[])) tuple(sd, rd)
}
"""

# A shape-less transpose takes its operand's layout permuted (ShapeInference's
# PermuteDimensions), so it is a bitcast and reads and writes nothing; one with a written default
# layout moves its bytes.
CASES["shapeless_transpose"] = """
HloModule m
ENTRY e {
  p = f32[8,14,14,128] parameter(0)
  r = f32[8,14,14,2,64] reshape(p)
  t = transpose(r), dimensions={0,1,3,2,4}
  w = f32[8,14,2,14,64]{4,3,2,1,0} transpose(r), dimensions={0,1,3,2,4}
  ROOT o = (f32[8,14,2,14,64], f32[8,14,2,14,64]) tuple(t, w)
}
"""

# XLA builds a send's shape from its data operand, whatever the text writes (XLA's own
# collective_pipeliner_test writes a send of a bf16[3,1,2,128] operand as bf16[1,1,2,128]).
CASES["send_written_shape"] = """
HloModule m
ENTRY e {
  data = bf16[3,1,2,128] parameter(0)
  a = token[] after-all()
  send = (bf16[1,1,2,128], u32[], token[]) send(data, a), channel_id=1
  ROOT sd = token[] send-done(send), channel_id=1
}
"""

# A send written as an array (XLA's instruction_fusion_test writes `f32[4,3] send(log, token0)`):
# its send-done reads the 3-tuple XLA builds, not the written array.
CASES["send_written_as_array"] = """
HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  a = token[] after-all()
  send = f32[4,3] send(p, a), channel_id=1
  ROOT sd = token[] send-done(send), channel_id=1
}
"""

# A recv-done written with another data shape than its recv's (XLA's
# gpu_latency_hiding_scheduler_test writes (f32[16], token[]) for an f32[16,16] recv).
CASES["recv_done_written_shape"] = """
HloModule m
ENTRY e {
  a = token[] after-all()
  recv = (f32[16,16], u32[], token[]) recv(a), channel_id=1
  ROOT rd = (f32[16], token[]) recv-done(recv), channel_id=1
}
"""


