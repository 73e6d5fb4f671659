"""Run hloscope from a checkout: `python cli.py inspect FILE` is `hloscope inspect FILE`."""
from hloscope.cli.main import main

if __name__ == "__main__":  # not when a spawned worker re-imports this file
    main()
