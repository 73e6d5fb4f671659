"""Sweeps: many compiles of remat variants, scheduled on an executor and ranked (no jax).

    core.py           the request, `run_sweep`, and the result
    grid.py           the cases of a grid sweep (`--batch 8,16 --seq ...`)
    search.py         batch plans (`--search batch`)
    tasks.py          one compile as a worker's task; `transfer.py`: builds sent back
    executors.py      picks the executor: `local_executor.py` (worker processes) or
                      `ray_executor.py` (Ray tasks, the only ray import); both build on
                      `executor_base.py` (the protocol, ExecutorSpec, Completion)
    scheduler.py      plans on an executor, retries, clean stops
    ranking.py        the winner and each row's reason; `rows.py`: the JSON rows
    faults.py         kill injection for the fault tests

Compiles themselves are `hloscope.workloads`' (child processes); figures are the analyses'.
"""
