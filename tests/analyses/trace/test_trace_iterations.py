"""A scanned layer's iterations from the events, built by hand: closed forms of the events below
(`timing.iteration_numbers`, `timing.scan_layer`)."""
from __future__ import annotations

from types import SimpleNamespace

from hloscope.analyses.trace.join import JoinedEvent
from hloscope.analyses.trace.timing import Share, iteration_numbers, scan_layer
from hloscope.model.trace import OpEvent, StepMark

PROGRAM = SimpleNamespace(name="jit_step")


def _event(name: str, start: int, run: int | None, plane: str = "/device:GPU:0") -> JoinedEvent:
    event = OpEvent(name, "jit_step", 0, run, start, 1, plane, "XLA Ops")
    return JoinedEvent(event, PROGRAM, "body", SimpleNamespace(name=name), 1)


def test_events_are_numbered_per_run_and_core() -> None:
    events = [_event("fusion", start, run, plane) for run in (1, 2) for plane in ("a", "b")
              for start in (10, 20, 30)]
    numbers = iteration_numbers(events, {"fusion": 3}, [])
    assert [numbers[id(e)] for e in events] == [0, 1, 2] * 4


def test_an_op_of_two_kernels_counts_one_iteration_for_both() -> None:
    """A cuBLAS gemm: a memset and a kernel, both named after the custom-call, twice a run."""
    events = [_event("custom-call.3", start, None) for start in (5, 6, 15, 16)]
    numbers = iteration_numbers(events, {"custom-call.3": 2}, [])
    assert [numbers[id(e)] for e in events] == [0, 0, 1, 1]


def test_without_run_ids_the_step_marks_are_the_runs() -> None:
    events = [_event("fusion", start, None) for start in (10, 20, 110, 120)]
    steps = [StepMark(0, 0, 100, "Steps"), StepMark(1, 100, 100, "Steps")]
    numbers = iteration_numbers(events, {"fusion": 2}, steps)
    assert [numbers[id(e)] for e in events] == [0, 1, 0, 1]


def test_backward_work_runs_the_layers_in_reverse() -> None:
    forward = Share("forward", "s", "while.1 (loop body)", 1.0, False, layers=4)
    backward = Share("backward", "s", "while.2 (loop body)", 1.0, False, layers=4, reverse=True)
    named = Share("forward", "s", "layer_7", 1.0, False)
    assert [scan_layer(forward, k) for k in (0, 3, 5)] == ["layer_0", "layer_3", "layer_1"]
    assert [scan_layer(backward, k) for k in (0, 3)] == ["layer_3", "layer_0"]
    assert scan_layer(named, 2) == "layer_7"


def test_on_a_device_line_a_parent_loses_its_nested_events() -> None:
    """A TPU while [0,100) over its body [10,30) and [40,70), with a fusion [45,55) nested in
    the second: self times 50, 20, 20, 10 (xprof's rule: less the direct children)."""
    from hloscope.analyses.trace.join import join_events
    from hloscope.parsers.trace.programs import ProgramIndex

    events = [OpEvent(name, "jit_step", 1, 1, start, end - start, "/device:TPU:0", "XLA Ops")
              for name, start, end in (("while", 0, 100), ("a", 10, 30), ("b", 40, 70),
                                       ("c", 45, 55))]
    joined = join_events(events, ProgramIndex([]))
    assert [j.self_ps for j in joined.events] == [50, 20, 20, 10]
