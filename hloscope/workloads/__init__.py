"""Workloads: the JAX programs hloscope compiles for CPU, TPU and GPU targets, and how it compiles
them. This is the only package that imports jax, and every compile runs in a child process
(libtpu can crash a process, and the TPU and CUDA plugins initialise each other when loaded
together). What is compiled is named in `hloscope.configs` (no jax); sweeps are `hloscope.sweeps`.

The model (jax):
    layers.py, remat.py, sharding.py, transformer.py   the train step, built from abstract shapes
    blockwise.py   flash-style attention and the chunked cross-entropy in pure JAX
    splash.py      attention with JAX's Pallas TPU kernel (splash attention)
    topology.py    a target's devices and meshes (deviceless TPU/GPU topologies)
    capture.py     `from_jax`: any function compiled and loaded (its folder: formats/capture.py)

Compiling (no jax in the parent):
    compiler.py, compile_job.py, runner.py   one compile in a child process (its record:
                   formats/compile_record.py)
    build.py       one variant compiled into a build folder (manifest, analyses, HLO, dump)
    cache.py       build folders by content hash, safe on a shared path; seal.py: completeness
    fingerprint.py programs equal up to metadata
    profile.py, profile_job.py   a profiled run of the train step
"""
