"""Allows `python -m reprogate`, which works even where the console script is not on PATH."""

from reprogate.cli import main

if __name__ == "__main__":
    main()
