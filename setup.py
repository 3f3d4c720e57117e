"""The C part of the build; everything else is in pyproject.toml.

Declared here rather than under pyproject's ``[tool.setuptools] ext-modules`` because that
table needs setuptools 74.1, and `python setup.py build_ext --inplace` (a checkout's build,
README.md) runs the setuptools already installed (docs/decisions.md, vlp35e).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # Whether JSON text may repeat a key: vlp.duplicates' cheap test (src/vlp/_keyscan.c).
        Extension("vlp._keyscan", ["src/vlp/_keyscan.c"], extra_compile_args=["-O2"]),
        # A table of byte strings: the thread checks' memory of every id (src/vlp/_keytable.c).
        Extension("vlp._keytable", ["src/vlp/_keytable.c"], extra_compile_args=["-O2"]),
        # Attributes of many objects read as columns: the decoded lines' fields
        # (src/vlp/_columns.c).
        Extension("vlp._columns", ["src/vlp/_columns.c"], extra_compile_args=["-O2"]),
        # Moving the spans after an edit in `prose lsp` (src/openprose/lsp/_spanshift.c).
        Extension(
            "openprose.lsp._spanshift",
            ["src/openprose/lsp/_spanshift.c"],
            extra_compile_args=["-O2"],
        ),
    ]
)
