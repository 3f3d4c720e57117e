"""HTTP/1.1 for everything in the project that speaks to a server: one transport interface.

`transport.Transport` is what callers speak to (a request in, an answer out, whole or
streamed); `transport.HttpTransport` is the real one (keep-alive pools per origin, TLS,
proxies from the environment, connect / first-byte / read / total timeouts) and
`transport.MockTransport` answers from a function, for tests. Below them: `parser` reads
answers (llhttp through httptools), `connection` runs one exchange on one connection, `pool`
keeps connections to one origin, `connect` opens them (addresses, TLS, proxy tunnels),
`endpoints` reads proxies and makes the TLS defaults, `heads` encodes request heads, and
`errors` names every way an exchange can fail. `blocking` is the same HTTP without an event
loop (one URL, one kept-alive socket), for the trace export helper.

This package imports nothing from the rest of openprose: the protocols (vlp, vpp, plsp) and
the providers build on it. Importing the package itself costs nothing; import the modules.
"""
