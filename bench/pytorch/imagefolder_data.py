#!/usr/bin/python3
"""torchvision's input pipeline, for bench/compare_data.sh.

  imagefolder_data.py make DIR [N]   writes DIR/train/<class>/*.jpg: N (default 512)
                                 photo-like 500x375 JPEGs (ImageNet's typical
                                 size), quality 90, in 8 classes
  imagefolder_data.py run DIR WORKERS STEPS BATCH
                                 torchvision ImageFolder + DataLoader(num_workers)
                                 with RandomResizedCrop(224) + RandomHorizontalFlip
                                 + ToTensor + Normalize; prints images_per_sec
                                 (the first batch, worker start-up, is not timed)
Needs Debian's PyTorch, torchvision and PIL (run with /usr/bin/python3).
"""
import os
import sys
import time

import numpy as np


def make(root, n):
    from PIL import Image, ImageFilter
    rng = np.random.default_rng(0)
    for i in range(n):
        d = os.path.join(root, "train", "class%d" % (i % 8))
        os.makedirs(d, exist_ok=True)
        # smooth shapes at a few scales plus fine texture: compresses like a photo
        base = rng.normal(0, 1, (375 // 25 + 1, 500 // 25 + 1, 3))
        img = Image.fromarray(np.uint8(np.clip(128 + 60 * base, 0, 255)), "RGB").resize((500, 375), Image.BICUBIC)
        tex = Image.fromarray(np.uint8(np.clip(128 + 40 * rng.normal(0, 1, (375, 500, 3)), 0, 255)), "RGB")
        tex = tex.filter(ImageFilter.GaussianBlur(1.2))
        img = Image.blend(img, tex, 0.35)
        img.save(os.path.join(d, "%05d.jpg" % i), "JPEG", quality=90)


def run(root, workers, steps, batch):
    import torch
    from torchvision import datasets, transforms
    torch.set_num_threads(1)
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(os.path.join(root, "train"), tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, drop_last=True,
                                     persistent_workers=workers > 0)
    images, t0, s = 0, None, 0
    while s <= steps:
        for x, _ in dl:
            if s == 0:
                t0 = time.perf_counter()
            else:
                images += x.shape[0]
            s += 1
            if s > steps:
                break
    el = time.perf_counter() - t0
    print('{"images": %d, "seconds": %.3f, "images_per_sec": %.1f, "workers": %d}' % (images, el, images / el, workers))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 512)
    else:
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
