"""Adapters onto `reprogate.trace` for the training stacks users already run.

`transformers` (the Hugging Face Trainer) and `lightning` (lightning.Trainer) are training-side:
each is one callback that seeds from the rebuild's seed and writes the trace, importing only
reprogate's runtime and its framework. A rebuild injects them beside the runtime
(rebuild/inject.py), so the realized environment needs the framework and not reprogate. `mlflow`
is the command-line side: it reads a reference from an MLflow tracking store into a record
(`reprogate init --from-mlflow`). Each is an optional extra (`reprogate[transformers]`,
`reprogate[lightning]`, `reprogate[mlflow]`); nothing else in reprogate imports them.
"""
