# %% [markdown]
# # Which remat policy is the fastest that fits? — the tiny model, from Python
#
# A notebook-style walk-through (run it as a script, or cell by cell in an editor that reads
# `# %%` cells): compile hloscope's built-in `tiny` transformer train step under several remat
# policies with `hloscope.from_jax`, tabulate them with pandas, explain a real out-of-memory
# compile, compare two programs side by side and write one HTML report.
#
#     python examples/walkthrough.py [OUT_DIR] [--tpu]
#
# Without `--tpu` everything compiles on the CPU in this process (about 15 s). With `--tpu` the
# sweep compiles for a TPU v5e 2x2 slice, deviceless, in child processes (about a minute per
# policy on two cores): that is where remat trades memory for recompute.

# %%
from __future__ import annotations

import sys
from pathlib import Path

from jax.sharding import AbstractMesh, NamedSharding
from jax.sharding import PartitionSpec as P

import hloscope
from hloscope.configs.presets import preset_config
from hloscope.workloads import transformer

OUT = Path(next((a for a in sys.argv[1:] if not a.startswith("--")), "."))
TPU = "--tpu" in sys.argv
TARGET, DEVICES = ("tpu:v5e:2x2", 4) if TPU else ("cpu", 1)
SHAPES = {"seq_len": 512, "batch": 64} if TPU else {}
POLICIES = ("none", "full") if TPU else ("none", "full", "dots_saveable", "save_named")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def tiny_train_step(policy: str) -> tuple:
    """The tiny preset's train step, its abstract state and batch (sharded over `data`)."""
    config = preset_config("tiny", remat=policy, **SHAPES)
    mesh = AbstractMesh((DEVICES,), ("data",))
    state = transformer.abstract_state(config, NamedSharding(mesh, P()))
    batch = transformer.abstract_batch(config, NamedSharding(mesh, P("data")))
    return transformer.train_step_fn(config), state, batch


# %% [markdown]
# ## 1. The policy sweep
# Each policy is one compile; the module comes back loaded, with XLA's dump beside it.

# %%
modules = {}
for policy in POLICIES:
    step, state, batch = tiny_train_step(policy)
    modules[policy] = hloscope.from_jax(step, state, batch, target=TARGET, donate_argnums=(0,))

# %%
import pandas  # noqa: E402  (a notebook imports where it needs)

rows = []
for policy, module in modules.items():
    memory, flops, remat = hloscope.memory(module), hloscope.flops(module), hloscope.remat(module)
    rows.append({"policy": policy, "live_peak": memory.peak_bytes,
                 "allocation": memory.xla.allocation_bytes if memory.xla else None,
                 "flops": flops.total.flops, "recompute": remat.recompute_overhead})
sweep = pandas.DataFrame(rows).set_index("policy")
print(sweep.to_string())

# %% [markdown]
# "Fastest that fits": against a budget, the fewest FLOPs among the policies whose allocation
# (what XLA reserves; what an OOM is decided on) is within it. On the CPU the budget is made up
# (the smallest allocation plus 1%); on the TPU it is a v5e's usable HBM.

# %%
budget = 15.75 * 2**30 if TPU else int(sweep["allocation"].min() * 1.01)
fitting = sweep[sweep["allocation"] <= budget]
winner = fitting["flops"].idxmin()
print(f"budget {budget:,.0f} bytes: {len(fitting)} of {len(sweep)} fit; fastest: {winner}")

# %% [markdown]
# ## 2. Why a config runs out of memory
# `fixtures/tpu-v5e-2x2-oom` is a real libtpu OOM (4 scanned layers, seq 2048, batch 128, no
# remat): the dump libtpu wrote before giving up is enough to explain it.

# %%
diagnosis = hloscope.oom(hloscope.load(FIXTURES / "tpu-v5e-2x2-oom"), device="v5e")
print(f"fits: {diagnosis.fits}; needs {diagnosis.required.bytes:,} bytes of "
      f"{diagnosis.capacity.bytes:,}")
frames = diagnosis.to_pandas()
print(next(iter(frames.values())).head(5).to_string(index=False))

# %% [markdown]
# ## 3. Two programs side by side, and one HTML file to share

# %%
none, full = hloscope.flops(modules["none"], by="phase"), hloscope.flops(modules["full"],
                                                                          by="phase")
side_by_side = none.to_pandas()[["key", "flops"]].merge(
    full.to_pandas()[["key", "flops"]], on="key", how="outer", suffixes=("_none", "_full"))
print(side_by_side.to_string(index=False))
hloscope.report(*modules.values(), output=OUT / "walkthrough.html", force=True,
                title=f"tiny on {TARGET}: remat policies")
print(f"wrote {OUT / 'walkthrough.html'}")
