"""OpenProse: a language for AI sessions — front end, VM and providers."""
