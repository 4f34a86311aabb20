"""`reprogate rebuild`: the drill. Stages in order; the first failure is the diagnosis.

The verdict (schemas/verdict.schema.json) records every stage, the environment that was realized
and what it was told from inside, the seeds, each statistical test with its α, n, m and power,
the loss curves, and the bounded claim: what was replayed, on what, compared how, and what the
claim does not cover. Next to it the rebuild writes its own run record (rebuild/record.py).

Everything that can be refused without running (an invalid record, a non-empty work folder, an
unknown realizer, an equivalence test without its margin) is refused before the first stage,
with exit 2, so a long run never ends in a usage error.

The runner is `rebuild/runner.py`; this package's __init__ imports nothing, so importing one
small module of the package (options.py) does not load the runner and every stage
(tests/test_architecture.py::test_the_rebuild_options_load_no_other_rebuild_module).
"""
