"""A hand-built remat pair whose peaks, FLOPs and remat counts are known by construction.

Both programs are one layer's forward and backward on x: f32[1024] (4 KiB):

    forward   h = x * x            jvp(layer_0)/mul        1024 FLOPs
              s = dot(h, h)        jvp(layer_0)/dot        2 * 1024 FLOPs, 4 bytes
    backward  g = broadcast(s)     f32[4096], 16 KiB
              gs = g[0:1024]       4 KiB
              dx = gs * h          1024 FLOPs

SAVED keeps h for the backward pass (a saved activation); REMAT recomputes it there under JAX's
`rematted_computation` marker (1024 more FLOPs, one remat instruction). A buffer is live from
the instruction that defines it through its last use, and the parameter throughout, so the peak
is at gs in both: SAVED holds x, h, g, gs (28 KiB); REMAT holds x, g, gs (24 KiB).
"""
from __future__ import annotations

import re

SAVED_PEAK = 4096 + 4096 + 16384 + 4096
REMAT_PEAK = 4096 + 16384 + 4096
SAVED_FLOPS = 1024 + 2 * 1024 + 1024
REMAT_FLOPS = SAVED_FLOPS + 1024

FORWARD, BACKWARD = "jit(f)/jvp(layer_0)", "jit(f)/transpose(jvp(layer_0))"
RECOMPUTED = f"{BACKWARD}/jvp(layer_0)/checkpoint/rematted_computation"
_COMMON = [
    ("x", "f32[1024]{0} parameter(0)", "x"),
    ("h", "f32[1024]{0} multiply(x, x)", f"{FORWARD}/mul"),
    ("s", "f32[] dot(h, h), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     f"{FORWARD}/dot"),
    ("g", "f32[4096]{0} broadcast(s), dimensions={}", f"{BACKWARD}/broadcast"),
    ("gs", "f32[1024]{0} slice(g), slice={[0:1024]}", f"{BACKWARD}/slice"),
]
SAVED_ACTIVATION = (f"{FORWARD}/mul", "f32[1024]", 4096)
_SAVED = [("ROOT dx", "f32[1024]{0} multiply(gs, h)", f"{BACKWARD}/mul")]
_REMAT = [("h.remat", "f32[1024]{0} multiply(x, x)", f"{RECOMPUTED}/mul"),
          ("ROOT dx", "f32[1024]{0} multiply(gs, h.remat)", f"{BACKWARD}/mul")]


def _module(name: str, instructions: list[tuple[str, str, str]]) -> str:
    lines = [f'  {lhs} = {rhs}, metadata={{op_name="{op_name}"}}'
             for lhs, rhs, op_name in instructions]
    return f"HloModule {name}, is_scheduled=true\nENTRY main {{\n" + "\n".join(lines) + "\n}\n"


def saved_text(name: str = "saved") -> str:
    return _module(name, _COMMON + _SAVED)


def remat_text(name: str = "remat") -> str:
    return _module(name, _COMMON + _REMAT)


def renumbered(text: str, number: int) -> str:
    """The same program as another compile would number it: other instruction names, and the
    broadcast named after an XLA instruction (`broadcast.N`, as XLA's passes name what they
    make) instead of a JAX operation."""
    renames = {"h": f"fusion.{number}", "s": f"dot.{number + 1}", "gs": f"slice.{number + 2}",
               "g": f"broadcast.{number + 3}"}
    text = text.replace(f"{BACKWARD}/broadcast", f"broadcast.{number + 4}")
    return re.sub(r"(?<![\w.])(h|s|gs|g)(?![\w.])(?=[ ,)])",
                  lambda match: renames[match.group(1)], text)
