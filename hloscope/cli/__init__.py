"""The command line: `main.py` holds the click group and the error-to-exit-code mapping,
`common.py` the options every command shares, and each subcommand is a thin module here."""
