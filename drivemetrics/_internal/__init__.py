"""The library's private plumbing, shared by every domain (no metric lives here; nothing here is public API).

One module per concern:

- ``compat``: the one reference switch (``compat="default"`` / ``"reference"``) and its check.
- ``compute``: small numeric helpers of the kernels (safe division, the F-score).
- ``distributed``: dataset commands sharded across ``torchrun`` ranks.
- ``extras``: optional dependencies (the extras): one check, one message naming the extra to install.
- ``files``: safe file handling (outputs never overwrite inputs, atomic writes, images that name their file).
- ``gc_pause``: pausing the cyclic garbage collector around work that builds many small objects.
- ``lazy``: lazy package exports (PEP 562).
- ``limits``: size limits on inputs, so that cost follows a file's size, never its values.
- ``memory``: keeping freed memory in the process (no page faults for reused array temporaries).
- ``metric``: the bases of every family and scalar class (``MetricFamily``, ``ScalarMetric``), config keys, ``plot``.
- ``options``: command-line options shared by the subcommands.
- ``png``: fast 8-bit PNG decoding.
- ``pool``: thread and process pools of the dataset evaluations.
- ``progress``: the one progress-bar rule of the commands.
- ``ragged``: ragged per-frame Metric state, synced in one gather.
- ``read_ahead``: input files read in a forked, torch-free child while the command imports torch.
- ``safe_pickle``: the restricted, bounded unpickler.
- ``stubs``: writes the packages' ``__init__.pyi`` stubs from their export lists.
- ``validation``: input checks shared by every domain.
"""
