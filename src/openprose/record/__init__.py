"""The run record: what a run did, as typed events (`events`), their one JSON form
(`codec`), and the files a run keeps. Imports nothing from the VM, the providers, the CLI,
the session layer or the views: they depend on it, never the other way."""
