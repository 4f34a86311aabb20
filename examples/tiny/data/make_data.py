"""Generates the tiny example's dataset: text from a fixed first-order Markov chain.

Committed with its output so the data is reproducible and small (about 200 KB). Run from this
folder: python make_data.py   (then rebuild the manifest:
reprogate dataset manifest . -o tiny.manifest.yaml --id tiny-markov --include 'shard-*.txt'
--include valid.txt --file vocabulary=vocab.json --base tiny.manifest.yaml)
"""

import json
import random

ALPHABET = "abcdefghijklmnopqrstuvwxyz .,\n"
rng = random.Random(20261129)
# Each character prefers a few successors: structure a small model learns in seconds.
table = {a: rng.sample(ALPHABET, 4) for a in ALPHABET}


def text(length: int, seed: int) -> str:
    r = random.Random(seed)
    out = list("th")
    while len(out) < length:
        choices = table[out[-1]]
        out.append(choices[0] if r.random() < 0.7 else r.choice(choices))
    return "".join(out)


for i in range(4):
    with open(f"shard-{i:03d}.txt", "w", encoding="utf-8") as fh:
        fh.write(text(48_000, seed=i))
with open("valid.txt", "w", encoding="utf-8") as fh:
    fh.write(text(8_000, seed=100))
with open("vocab.json", "w", encoding="utf-8") as fh:
    json.dump({ch: i for i, ch in enumerate(ALPHABET)}, fh, indent=0)
    fh.write("\n")
