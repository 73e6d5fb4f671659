"""libtpu's rematerialization lines, as libtpu 0.0.42.1 wrote them (from its INFO logs of
llama-1b / v5e:2x2 compiles), parsed against the sizes written out by hand."""
from __future__ import annotations

from hloscope.parsers.libtpu_log import parse_libtpu_log

GIB, MIB = 2**30, 2**20
REACHED = """\
I1125 11:36:54.567029   17918 hlo_memory_scheduler.cc:623] Chose min-memory post_order sequence: 15.88GiB
I1125 11:36:54.601260   17918 deepsea_compiler_hlo_passes.cc:5714] XLA::TPU post optimization rematerialization limit 14.93G = 95% hbm (14.96G) - (arguments (4.03G) - aliased_output(4.03G)) - overlays (26.50M)
I1125 11:36:54.601276   17918 deepsea_compiler_hlo_passes.cc:5728] XLA::TPU rematerialization hbm reduction:  16.09G => 14.17G
"""  # noqa: E501
SHORT = """\
I1125 07:20:40.1 1 hlo_memory_scheduler.cc:614] Chose min-memory list sequence: 14.30GiB
W1125 07:20:41.2 1 hlo_rematerialization.cc:3231] Can't reduce memory use below 14.93GiB (16036098969 bytes) by rematerialization; only reduced to 17.08GiB (18336628736 bytes), down from 18.93GiB (20326000000 bytes) originally
I1125 07:20:41.3 1 deepsea_compiler_hlo_passes.cc:5714] XLA::TPU post optimization rematerialization limit 14.93G = 95% hbm (14.96G) - (arguments (4.03G) - aliased_output(4.03G)) - overlays (26.36M)
I1125 07:20:41.4 1 deepsea_compiler_hlo_passes.cc:5728] XLA::TPU rematerialization hbm reduction:  18.93G => 17.08G
"""  # noqa: E501


def test_a_reached_rematerialization():
    log = parse_libtpu_log(REACHED)
    remat = log.rematerialization
    assert remat is not None and remat.stage == "post optimization" and remat.percent == 95
    assert remat.limit_bytes == round(14.93 * GIB) and remat.hbm_bytes == round(14.96 * GIB)
    assert remat.argument_bytes == remat.aliased_bytes == round(4.03 * GIB)
    assert remat.overlay_bytes == round(26.50 * MIB)
    assert (remat.before_bytes, remat.after_bytes) == (round(16.09 * GIB), round(14.17 * GIB))
    assert remat.reached is True
    assert log.min_memory_sequence_bytes == round(15.88 * GIB)
    assert log.min_memory_scheduler == "post_order"


def test_a_short_rematerialization_takes_the_exact_bytes():
    log = parse_libtpu_log(SHORT)
    remat = log.rematerialization
    assert log.min_memory_scheduler == "list"
    assert remat is not None
    assert (remat.before_bytes, remat.after_bytes) == (20326000000, 18336628736)
    assert remat.reached is False


def test_no_rematerialization():
    log = parse_libtpu_log(REACHED.splitlines()[0])
    assert log.rematerialization is None and log.rematerializations == ()


def test_no_scheduler_line():
    log = parse_libtpu_log(REACHED.splitlines()[1])
    assert log.min_memory_scheduler is None and log.min_memory_sequence_bytes is None
