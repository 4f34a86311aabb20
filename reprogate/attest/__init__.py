"""What a rebuild verdict says to people and tools outside the gate: a reproduction statement
(an in-toto Statement v1 that `actions/attest` signs) and a shields.io badge.

Both are made from a verdict file and the files it names, never from anything else, and both say
the gate's one judgement of it (`github.verdicts.terminal`): a statement or badge never reads
greener than the status the gate would post.
"""
