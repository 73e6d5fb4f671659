"""Which module of a dump folder is read: the train step, not the (larger) init program.

A folder dumped around a training run holds `jit_init` and `jit_train_step`; an init program can
be the larger file (here: many constants and broadcasts), yet the step is what users ask about.
"""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.loader.hlo_input import load_dump_folder
from hloscope.parsers.xla_memory import find_memory_artifacts

INIT_LINE = "  b{n} = f32[1024]{{0}} broadcast(c), dimensions={{}}\n"
STEP = """HloModule jit_train_step, is_scheduled=true

ENTRY main {
  p = f32[8]{0} parameter(0)
  m = f32[8]{0} multiply(p, p), metadata={op_name="jit(train_step)/jvp(loss)/mul"}
  ROOT g = f32[8]{0} add(m, p), metadata={op_name="jit(train_step)/transpose(jvp(loss))/add"}
}
"""


def init_module(lines: int) -> str:
    body = "".join(INIT_LINE.format(n=n) for n in range(lines))
    names = ", ".join(f"b{n}" for n in range(lines))
    shapes = ", ".join("f32[1024]{0}" for _ in range(lines))
    return (f"HloModule jit_init, is_scheduled=true\n\nENTRY main {{\n"
            f"  c = f32[] constant(0)\n{body}  ROOT t = ({shapes}) tuple({names})\n}}\n")


def dump_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "module_0001.jit_init.cpu_after_optimizations.txt").write_text(init_module(200))
    (folder / "module_0002.jit_train_step.cpu_after_optimizations.txt").write_text(STEP)
    return folder


def test_the_train_step_is_read_though_init_is_larger(tmp_path: Path) -> None:
    folder = dump_folder(tmp_path / "dump")
    sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
    assert sizes["module_0001.jit_init.cpu_after_optimizations.txt"] > \
        sizes["module_0002.jit_train_step.cpu_after_optimizations.txt"]
    module = load_dump_folder(folder)
    assert module.name == "jit_train_step"
    assert "backward pass" in module.chosen_because
    assert module.alternatives == ("module_0001.jit_init.cpu_after_optimizations.txt",)
    # XLA's memory files are looked up for the same module
    artifacts = find_memory_artifacts(folder)
    assert artifacts.hlo_path.name.startswith("module_0002.jit_train_step")


def test_module_still_overrides_and_inspect_says_why(tmp_path: Path) -> None:
    folder = dump_folder(tmp_path / "dump")
    assert load_dump_folder(folder, "jit_init").name == "jit_init"
    result = CliRunner().invoke(cli, ["inspect", str(folder)])
    assert result.exit_code == 0, result.output
    assert "read jit_train_step: the largest of the 1 module(s) with a backward pass" \
        in result.output


def test_without_a_backward_pass_the_largest_module_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / "module_0001.jit_init.cpu_after_optimizations.txt").write_text(init_module(50))
    (folder / "module_0002.jit_small.cpu_after_optimizations.txt").write_text(
        STEP.replace("transpose(jvp(loss))", "other"))
    module = load_dump_folder(folder)
    assert (module.name, module.chosen_because) == ("jit_init", "the largest module")
