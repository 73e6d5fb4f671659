"""The syntax of HLO text values: shapes and layouts, attribute values, bracket-aware scanning.

It sits below the model so that instructions can parse their own values on demand; the module
structure (statements, computations, modules) is read by `hloscope.parsers`.
"""
