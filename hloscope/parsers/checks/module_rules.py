"""Rules of XLA's verifier that compare instructions across a module (xla/service/hlo_verifier.cc:
VerifyLayoutConstrainedAllReduce, VerifyChannels, VerifyAsyncComputation).

All-reduces (and all-reduce-starts) are all layout constrained (`constrain_layout=true`) or none
is. Host-transfer sends and recvs of one channel are identical but for their operands, whose
shapes still agree, layouts aside: opcode, shape, frontend attributes. A computation an
async-start runs holds its root, parameters and get-tuple-elements only, unless it is a group of
sends and recvs (and bitcasts, tuples) or its one async-start has a `_collectives_group`
frontend attribute. Each failure is a ParseError (exit 4) at the instruction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.shape import Shape
from hloscope.parsers.checks.collective_rules import Defined, fail

_ALL_REDUCES = ("all-reduce", "all-reduce-start")
_SEND_RECV = ("send", "recv")
_SEND_RECV_GROUP = frozenset({"send", "recv", "bitcast", "parameter", "tuple"})
_BARRIER = frozenset({"parameter", "get-tuple-element"})
_COLLECTIVES_GROUP = "_collectives_group"
OPCODES = frozenset({*_ALL_REDUCES, *_SEND_RECV, "async-start"})


def _host_transfer_form(instruction: Instruction, defined: Defined
                        ) -> tuple[str, Shape, tuple[Shape, ...], dict[str, str]]:
    operands = tuple(defined[n].shape.without_layout() for n in instruction.operands
                     if n in defined)
    return (instruction.opcode, instruction.shape.without_layout(), operands,
            instruction.frontend_attributes)


@dataclass(slots=True)
class ModuleRules:
    """Sees the instructions of OPCODES in one pass over the module, then checks what spans it."""

    constrained: bool | None = None
    channels: dict[str, tuple] = field(default_factory=dict)
    async_callers: dict[str, list[Instruction]] = field(default_factory=dict)

    def see(self, instruction: Instruction, defined: Defined) -> None:
        opcode = instruction.opcode
        if opcode in _ALL_REDUCES:
            self._see_all_reduce(instruction)
        elif opcode in _SEND_RECV:
            self._see_send_recv(instruction, defined)
        else:
            called = instruction.called_computation("calls")
            if called:
                self.async_callers.setdefault(called.lstrip("%"), []).append(instruction)

    def _see_all_reduce(self, instruction: Instruction) -> None:
        constrained = instruction.raw_attribute("constrain_layout") == "true"
        if self.constrained is None:
            self.constrained = constrained
        elif constrained != self.constrained:
            fail(instruction, "HloModule has a mix of layout constrained and unconstrained "
                              "AllReduce instructions.", instruction.operands_end)

    def _see_send_recv(self, instruction: Instruction, defined: Defined) -> None:
        channel = instruction.raw_attribute("channel_id")
        if channel is None or instruction.raw_attribute("is_host_transfer") != "true":
            return
        form = _host_transfer_form(instruction, defined)
        reference = self.channels.setdefault(channel, (instruction, form))
        if reference[1] != form:
            fail(instruction, "Host-transfer send/recv instructions that use the same channel "
                              "must be identical up to having different operands; "
                              f"{reference[0].name} and {instruction.name} use channel {channel}",
                 instruction.operands_start)

    def finish(self, module: HloModule) -> None:
        for name, callers in self.async_callers.items():
            computation = module.computations.get(name)
            if computation is None:
                continue
            opcodes = {i.opcode for i in computation.instructions}
            if opcodes <= _SEND_RECV_GROUP or (
                    len(callers) == 1 and _COLLECTIVES_GROUP in callers[0].frontend_attributes):
                continue
            root = computation.root
            for instruction in computation.instructions:
                if instruction is not root and instruction.opcode not in _BARRIER:
                    fail(instruction, f"Asynchronous computation {name} expected to contain "
                                      "only the root and parameter instructions.",
                         instruction.operands_start)
