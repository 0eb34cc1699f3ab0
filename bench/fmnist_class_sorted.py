"""Writes a copy of Fashion-MNIST's IDX files whose training set is in
ImageFolder's order: stably sorted by label (class folders in sorted order,
files in each folder in dataset order, as `lazytensor export-images` names
them). `lazytensor train --data fashion-mnist --data-dir OUT` then draws the
same batches, sample for sample, as a run on the exported image folder with
the same seed, so the two runs' accuracies can be compared pairwise: the
order of the data, which alone moves one epoch's accuracy by about a point,
is the same on both sides. The test set is copied unchanged (evaluation
does not depend on order).

    /usr/bin/python3 bench/fmnist_class_sorted.py OUT [SRC]
"""
import gzip
import os
import shutil
import sys

import numpy as np


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    head = data[:4 + 4 * nd]
    return head, np.frombuffer(data, np.uint8, offset=len(head)).reshape(dims)


def main():
    out = sys.argv[1]
    src = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
    os.makedirs(out, exist_ok=True)
    ihead, images = read_idx(os.path.join(src, "train-images-idx3-ubyte.gz"))
    lhead, labels = read_idx(os.path.join(src, "train-labels-idx1-ubyte.gz"))
    order = np.argsort(labels, kind="stable")
    for name, head, arr in (("train-images-idx3-ubyte.gz", ihead, images[order]),
                            ("train-labels-idx1-ubyte.gz", lhead, labels[order])):
        with gzip.open(os.path.join(out, name), "wb") as f:
            f.write(head + arr.tobytes())
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
    print(f"{out}: {len(labels)} training images sorted by class, test set copied")


if __name__ == "__main__":
    main()
