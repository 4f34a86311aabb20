"""reprogate: ML training runs that must rebuild before a release ships.

The package root stays import-light on purpose: `reprogate validate` runs on GitHub-hosted
runners where start-up time is paid on every pull request, so nothing heavy is imported here.
"""

__version__ = "0.8.1"
