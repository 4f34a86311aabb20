"""Container images by digest: the registry client (registry.py) and the image commands."""
