"""`prose lsp`: a Language Server Protocol server for `.prose` files (needs the `[lsp]` extra).

Everything it knows comes from the front end — the scanner, parser, checker and formatter that
`prose check` and `prose fmt` run — through an index of the parsed tree (``index``). pygls is
imported only by ``server`` and the feature modules, never by ``import openprose``.

    from openprose.lsp.server import serve
    serve()  # over stdin/stdout
"""
