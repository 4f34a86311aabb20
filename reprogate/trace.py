"""The training-side API, under the name training code imports: `from reprogate.trace import ...`.

The code lives in reprogate.runtime (the layer that runs inside training processes), one module
per concern: tracer, seeding, portable_cpu, process_facts, tensor_digests and trace (reading
traces back). This module is their one stable public name, and it is what a rebuild injects into
a realized environment; what it exports does not change when the runtime's modules do.
"""

from reprogate.runtime.portable_cpu import PORTABLE_CPU_ENV, mkl_cbwr_mode  # noqa: F401
from reprogate.runtime.process_facts import cpu_facts, determinism_facts  # noqa: F401
from reprogate.runtime.seeding import SEED_ENV, restore_rng_state, rng_state, seed_everything, seed_from_env  # noqa: F401
from reprogate.runtime.tensor_digests import (  # noqa: F401
    DIGEST_ALGORITHMS,
    batch_digest,
    combine_state,
    digest_algorithm,
    model_state_digest,
    new_hash,
    state_digests,
    tensor_digest,
)
from reprogate.runtime.trace import CpuFacts, MetaEvent, MetricEvent, OtherEvent, StepEvent, TraceEvent, meta_events, read_trace  # noqa: F401
from reprogate.runtime.tracer import TRACE_DIR_ENV, Tracer  # noqa: F401
