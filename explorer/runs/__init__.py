"""Pipeline runs: the manager (queue, concurrency), one supervisor thread per run in
the server, the worker child process that executes it, the execution itself (import,
relay.build under the recording instrument, kernels), the recording instrument, and
the probe child that checks an upload without parsing it in the server."""
