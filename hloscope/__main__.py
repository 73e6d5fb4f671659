"""`python -m hloscope ...` is `hloscope ...`: the same click app, the same exit codes.

The guard matters: a sweep's worker processes are started with `spawn`, which imports the main
module again (as `__mp_main__`); it must not run the CLI a second time.
"""
from hloscope.cli.main import main

if __name__ == "__main__":
    main()
