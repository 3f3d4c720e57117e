"""`prose test`: test files beside programs (`spec`), a case run against recorded, scripted
or live answers (`case`, `cassette`), expectations (`checks`, `observe`), suites found and
run concurrently (`suite`), and their reports (`report`). docs/testing.md shows it."""
