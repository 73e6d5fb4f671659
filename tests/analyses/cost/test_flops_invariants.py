"""Invariants of the cost model and its breakdowns, and the name-stack rules they rest on."""
from __future__ import annotations

import pytest
from conftest import FIXTURES, corpus_params, require_corpus
from cost_cases import CASES
from cost_oracle import module_texts

import hloscope
from hloscope.analyses.cost import CostAnalysis, CostOptions
from hloscope.analyses.cost.attribution import charges, split
from hloscope.analyses.cost.flops import BREAKDOWNS, flops
from hloscope.analyses.cost.phases import Phase, layer_of, phase_of, scope_path
from hloscope.model.module import HloModule

FIXTURE_DIRS = sorted(p.parent for p in FIXTURES.glob("*/*/meta.json"))
PROPERTIES = ("flops", "transcendentals", "bytes_accessed", "collective_bytes")


def modules() -> list[pytest.param]:
    found = [pytest.param(name, id=f"case-{name}") for name in sorted(CASES)]
    found += [pytest.param(str(f), id=str(f.relative_to(FIXTURES))) for f in FIXTURE_DIRS]
    return found


def load(source: str) -> HloModule:
    return hloscope.load(CASES.get(source, source))


def assert_invariants(module: HloModule) -> None:
    for options in (CostOptions(), CostOptions.like_xla()):
        analysis = CostAnalysis(module, options)
        total = analysis.total
        assert _sum(charges(analysis)) == total.as_tuple()
        result = flops(analysis)
        for by in BREAKDOWNS:
            rows = result.rows(by)
            assert tuple(sum(getattr(r, p) for r in rows) for p in PROPERTIES) == \
                total.as_tuple(), f"{module.name}: --by {by} does not add up"
        _assert_fusions_sum_their_computations(analysis)


def _sum(charged) -> tuple[int, int, int, int]:
    columns = zip(*(c.cost.as_tuple() for c in charged), strict=True)
    return tuple(sum(column) for column in columns) if charged else (0, 0, 0, 0)


def _assert_fusions_sum_their_computations(analysis: CostAnalysis) -> None:
    for name, computation in analysis.module.computations.items():
        costs = analysis.computation_costs(name).costs
        for instruction, cost in zip(computation.instructions, costs, strict=True):
            if instruction.opcode != "fusion" or instruction.fusion_kind == "kCustom":
                continue
            fused = analysis.computation_total(instruction.called_computation("calls"))
            assert (cost.flops, cost.transcendentals) == (fused.flops, fused.transcendentals)


@pytest.mark.parametrize("source", modules())
def test_breakdowns_add_up_and_fusions_sum_their_computations(source: str) -> None:
    assert_invariants(load(source))


@pytest.mark.parametrize("corpus_file", corpus_params(complete=True))
def test_corpus_breakdowns_add_up(corpus_file) -> None:
    require_corpus()
    for text in module_texts(corpus_file.path.read_text()):
        assert_invariants(hloscope.load(text))


def test_conditional_takes_each_propertys_costliest_branch() -> None:
    analysis = CostAnalysis(hloscope.load(CASES["control_flow"]))
    conditional = next(i for i in analysis.module.entry.instructions if i.opcode == "conditional")
    branches, chosen = analysis.branch_choice(conditional)
    assert branches == ["cheap", "costly"]
    # FLOPs from the dot branch, transcendentals from the exponential branch.
    assert chosen[0] == 1 and chosen[1] == 0
    cost = analysis.total
    cheap, costly = (analysis.computation_total(b) for b in branches)
    assert cost.transcendentals >= cheap.transcendentals > costly.transcendentals == 0


@pytest.mark.parametrize(("amount", "weights"), [(10, [1, 1, 1]), (7, [5, 0, 2]), (0, [1, 2]),
                                                 (1001, [3, 7, 11, 13])])
def test_split_is_exact_and_proportional(amount: int, weights: list[int]) -> None:
    shares = split(amount, weights)
    assert sum(shares) == amount
    total = sum(weights)
    assert all(abs(s - amount * w / total) < 1 for s, w in zip(shares, weights, strict=True))


@pytest.mark.parametrize(("op_name", "phase"), [
    ("jit(step)/jvp(layer_0)/dot_general", Phase.FORWARD),
    ("jit(step)/transpose(jvp(layer_0))/jvp(layer_0)/dot_general", Phase.BACKWARD),
    ("jit(step)/transpose(jvp(layer_0))/jvp(layer_0)/checkpoint/rematted_computation/mul",
     Phase.RECOMPUTE),
    ("jit(step)/optimizer/mul", None),
    ("jit(step)/transpose(jvp())/mul;jit(step)/jvp()/add", Phase.BACKWARD),
])
def test_phase_read_from_the_name_stack(op_name: str, phase: Phase | None) -> None:
    assert phase_of(op_name) == phase


@pytest.mark.parametrize(("op_name", "scope", "layer"), [
    ("jit(step)/transpose(jvp(layer_3))/jvp(layer_3)/checkpoint/rematted_computation/mul",
     ("step", "layer_3", "mul"), "layer_3"),
    ("jit(train_step)/jvp(Model.apply)/Model/decoder/while/body/closed_call/layers_2/mlp/dot",
     ("train_step", "Model.apply", "Model", "decoder", "layers_2", "mlp", "dot"), "layers_2"),
    ("jit(f)/jvp()/gather", ("f", "gather"), None),
    ("", ("(no op_name)",), None),
])
def test_scope_and_layer_read_from_the_name_stack(op_name, scope, layer) -> None:
    assert scope_path(op_name) == scope
    assert layer_of(op_name) == layer


def test_unnamed_instructions_take_a_neighbours_name_and_phase() -> None:
    text = """HloModule m
ENTRY e {
  p = bf16[8,8] parameter(0)
  c = f32[8,8] convert(p)
  d = f32[8,8] dot(c, c), lhs_contracting_dims={1}, rhs_contracting_dims={0},
      metadata={op_name="jit(f)/jvp(layer_1)/dot_general"}
  g = f32[8,8] multiply(d, d), metadata={op_name="jit(f)/transpose(jvp(layer_1))/mul"}
  m = f32[8,8] parameter(1)
  b = f32[8,8] multiply(m, m), metadata={op_name="jit(f)/optimizer/mul"}
  u = f32[8,8] add(b, g), metadata={op_name="jit(f)/optimizer/add"}
  k = f32[8,8] negate(m), metadata={op_name="jit(f)/counter"}
  ROOT t = (f32[8,8], f32[8,8]) tuple(u, k)
}
"""
    phases = {c.instruction.name: (c.phase, c.layer) for c in charges(
        CostAnalysis(hloscope.load(text)))}
    assert phases["c"] == (Phase.FORWARD, "layer_1")  # unnamed: named after its user
    assert phases["g"] == (Phase.BACKWARD, "layer_1")
    assert phases["u"][0] is Phase.OPTIMIZER  # consumes a gradient
    assert phases["b"][0] is Phase.OPTIMIZER  # flows into the update
    assert phases["k"][0] is Phase.OTHER


def test_gemm_custom_calls_cost_like_dots_and_unknown_ones_are_listed() -> None:
    config = ('{"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":'
              '["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],'
              '"rhs_batch_dimensions":[]}}}')
    text = f"""HloModule m
ENTRY e {{
  a = f32[64,32] parameter(0)
  b = f32[32,16] parameter(1)
  g = f32[64,16] custom-call(a, b), custom_call_target="__cublas$gemm",
      backend_config={config}
  k = f32[64,16] custom-call(g), custom_call_target="my_kernel"
  ROOT s = f32[64,16] custom-call(k), custom_call_target="Sharding"
}}
"""
    result = flops(hloscope.load(text))
    assert result.total.flops == 2 * 64 * 16 * 32  # the GEMM; the kernel's FLOPs are unknown
    assert [(c.target, c.count) for c in result.unattributed] == [("my_kernel", 1)]
    gemm_bytes = 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert result.total.bytes_accessed == gemm_bytes + 2 * (2 * 4 * 64 * 16)
    xla = flops(hloscope.load(text), options=CostOptions.like_xla()).total
    assert (xla.flops, xla.bytes_accessed) == (-3, -3)
