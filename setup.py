"""The optional C accelerator of the HLO text parser (hloscope/_native/_scan.c).

pyproject.toml holds the project's metadata; this file only adds the extension module. It is
optional: when no C compiler is at hand the build goes on without it and hloscope runs its
pure-Python parser, which gives the same results (hloscope/_native/__init__.py).
"""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Builds the extension when it can; a failed compile leaves the pure-Python parser."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # noqa: BLE001  (any compiler failure: go on without it)
            print(f"hloscope: the C accelerator was not built ({error}); using pure Python")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:  # noqa: BLE001
            print(f"hloscope: the C accelerator was not built ({error}); using pure Python")


setup(
    ext_modules=[Extension("hloscope._native._scan", ["hloscope/_native/_scan.c"],
                           extra_compile_args=["-O2"], optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
