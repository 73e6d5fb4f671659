"""Workloads: the JAX programs hloscope compiles for CPU, TPU and GPU targets, and how it runs them.

This is the only package that imports jax, and every compile runs in a child process (libtpu can
crash a process, and the TPU and CUDA plugins initialise each other when loaded together).

The model (jax only in `layers`, `remat`, `sharding`, `transformer`):
- `config`: the transformer's configuration (GPT or Llama style, remat and sharding options) and
  its closed-form parameter count; `presets`: tiny, gpt2-small, llama-1b/8b/70b;
- `policies`: remat variant names (`full`, `nested:4`, `partial:16+unrolled`, `all`, ...);
- `layers`, `remat`, `sharding`, `transformer`: the train step, built from abstract shapes.

Compiling (no jax in the parent):
- `targets`: target strings (`cpu`, `tpu:v5e:2x2`, `gpu:h100:1x1x8`), environments, meshes;
- `compiler`, `compile_job`, `runner`, `results`: one compile in a child process, as a result;
- `build`: one variant compiled into a build folder (manifest, analyses, optimized HLO, dump);
- `cache`: build folders by content hash, safe on a shared path; `seal`: an entry's
  completeness marker (file hashes); `fingerprint`: programs equal up to metadata.

Sweeping (no jax):
- `figures`: what a build's HLO and verdict say (fit, memory, FLOPs, recompute, offload);
- `roofline`: the per-device step-time estimate; `ranking`: the winner and the reasons;
- `search`: the batch plans (`--search batch`); `grid`: the cases of a grid sweep;
- `tasks`: one compile as a worker's task; `transfer`: builds sent back from other machines;
- `executors`: local worker processes (`ray_executor`: Ray tasks, the only module importing ray);
- `scheduler`: plans on an executor, retries, clean stops; `faults`: kill injection for tests;
- `sweep`: the request and result; `sweep_rows`: its JSON rows.
"""
