"""The application layer: opening, resuming and answering runs, for every interface above
it (the `prose` commands, the Python API, batches and the web view). Nothing here parses
arguments or renders pages, and nothing here imports `openprose.cli`."""
