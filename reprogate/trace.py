"""The training-side API, under the name training code imports: `from reprogate.trace import ...`.

The code lives in reprogate.runtime.trace (the layer that runs inside training processes); this
module is its stable public name, and it is what a rebuild injects into a realized environment.
"""

from reprogate.runtime.trace import (  # noqa: F401
    SEED_ENV,
    TRACE_DIR_ENV,
    Tracer,
    batch_digest,
    model_state_digest,
    read_trace,
    restore_rng_state,
    rng_state,
    seed_everything,
    seed_from_env,
    tensor_digest,
)
