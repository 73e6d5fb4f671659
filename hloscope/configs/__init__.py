"""What is compiled, without jax: the layer below the analyses that names a workload.

    config.py    the transformer's configuration and its closed-form parameter count
    config_kind.py  either config kind (the transformer's, a user step's) as variants and grids
                 change it
    presets.py   tiny, gpt2-small, llama-1b/8b/70b
    policies.py  remat variant names (`full`, `nested:4`, `partial:16+unrolled`, `all`,
                 `names:qkv=device,attn_out=offload`, ...)
    tensors.py   the block's named tensors (per-tensor policies' names, widths, MaxText's names)
    targets.py   target strings (`cpu`, `tpu:v5e:2x2`, `gpu:h100:1x1x8`) and child environments

The jax side of the same things (the model, meshes, compiling) is `hloscope.workloads`.
"""
