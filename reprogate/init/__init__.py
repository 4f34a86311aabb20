"""`reprogate init [PROJECT]`: a complete, valid, rebuildable record from a project folder.

It finds (or is told) the entrypoint, the configuration, the data and the environment pins;
builds the dataset manifest; runs the entrypoint for every reference seed exactly as a rebuild
will — the same realizer (venv from the lock file, container, or the current interpreter), the
same launcher and rank hosts, the same REPROGATE_* contract — and writes the record with the
reference trace, the per-seed metric, its interval and an envelope the reference lies inside.
The record goes outside the project folder whose tree it pins, and nothing is left half-written.

discover.py  what a project folder holds (defaults for the flags and prompts)
draft.py     the record, section by section
reference.py the reference seeds, run through the rebuild's own stages
command.py   the command: check, run, write (all or nothing)
"""
