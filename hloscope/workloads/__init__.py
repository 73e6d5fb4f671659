"""Workloads: the JAX programs hloscope compiles for CPU, TPU and GPU targets, and how it runs them.

This is the only package that imports jax, and every compile runs in a child process (libtpu can
crash a process, and the TPU and CUDA plugins initialise each other when loaded together):

- `config`: the transformer's configuration and closed-form parameter count (no jax),
- `targets`: target strings (`cpu`, `tpu:v5e:2x2`, `gpu:h100:1x1x8`), the environment each needs,
  deviceless topologies and meshes (jax imported lazily),
- `transformer`: the GPT-style train step (imports jax; import it in child processes and tests),
- `compiler`: lower + compile one function with abstract arguments and dump XLA's files (child),
- `compile_job`: the child's entry point (`python -m hloscope.workloads.compile_job REQUEST`),
- `runner`: `compile_in_subprocess`, the parent's side (no jax),
- `results`: the dataclasses a compile produces (no jax).
"""
