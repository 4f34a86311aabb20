"""The training-side API, under the name training code imports: `from reprogate.trace import ...`.

The code lives in reprogate.runtime.trace (the layer that runs inside training processes); this
module is its stable public name, and it is what a rebuild injects into a realized environment.
"""

from reprogate.runtime.trace import (  # noqa: F401
    DIGEST_ALGORITHMS,
    PORTABLE_CPU_ENV,
    SEED_ENV,
    TRACE_DIR_ENV,
    Tracer,
    batch_digest,
    combine_state,
    cpu_facts,
    determinism_facts,
    digest_algorithm,
    meta_events,
    mkl_cbwr_mode,
    model_state_digest,
    new_hash,
    read_trace,
    restore_rng_state,
    rng_state,
    seed_everything,
    seed_from_env,
    state_digests,
    tensor_digest,
)
