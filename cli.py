"""Run hloscope from a checkout: `python cli.py inspect FILE` is `hloscope inspect FILE`."""
from hloscope.cli.main import main

main()
