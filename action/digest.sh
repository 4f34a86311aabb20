#!/usr/bin/env bash
# The content digest of the action's venv: every file and link under it (the packages, their
# bytecode, the interpreter the venv's links point at), by path and sha256, in one order. seal.sh
# records it right after the venv is installed or restored and makes the venv read-only;
# run.sh compares it again just before reprogate starts, so a module planted since (a
# `pynvml.py` in site-packages) is refused, never imported. Sourced, not run.
venv_digest() {
  (
    cd "$1" &&
      find . \( -type f -o -type l \) ! -name '.reprogate-venv-digest' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1
  )
}
