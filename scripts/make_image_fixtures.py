#!/usr/bin/python3
"""Writes the image fixtures tests/test_images.c compares against
(tests/data/images/): small JPEG and PNG files of every color type, the
pixels PIL decodes from each (what torchvision's ImageFolder loader sees:
Image.open(path).convert("RGB")), and torchvision's functional transforms
applied to them with fixed crop parameters.

Run with Debian's PIL and torchvision:  /usr/bin/python3 scripts/make_image_fixtures.py
The outputs are committed; the build and the tests never need Python.

Files: <name>.<jpg|png> the image; <name>.rgb PIL's RGB pixels, raw (h, w, 3)
bytes; transforms.txt one case a line:
  file  kind  a b c d  size  flip  expected.raw
kind "crop": F.resized_crop(img, top=a, left=b, height=c, width=d, size),
then F.hflip if flip; kind "center": F.center_crop(F.resize(img, a), size)
(a = 0: no resize). expected.raw: (size, size, 3) bytes, ToTensor * 255.
"""
import os

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "images")
rng = np.random.default_rng(14)


def picture(w, h):
    """Smooth gradients plus detail: exercises both the filter and the codec."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 127 + 120 * np.sin(x / 5.0) * np.cos(y / 7.0)
    g = 255 * x / max(w - 1, 1)
    b = 255 * ((x // 4 + y // 4) % 2)
    img = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def save_rgb(name, path):
    with Image.open(path) as im:
        px = np.asarray(im.convert("RGB"))
    px.tofile(os.path.join(OUT, name + ".rgb"))


def main():
    os.makedirs(OUT, exist_ok=True)
    base = picture(53, 41)
    rgb = Image.fromarray(base, "RGB")
    files = {}
    # JPEG: 4:2:0 (the common case), 4:4:4, progressive, grayscale, CMYK (Adobe)
    for name, kw, im in [
        ("rgb420", dict(quality=90, subsampling=2), rgb),
        ("rgb444", dict(quality=95, subsampling=0), rgb),
        ("progressive", dict(quality=85, progressive=True), rgb),
        ("grayj", dict(quality=90), rgb.convert("L")),
        ("cmyk", dict(quality=95), rgb.convert("CMYK")),
    ]:
        files[name] = name + ".jpg"
        im.save(os.path.join(OUT, files[name]), "JPEG", **kw)
    # PNG: RGB, RGBA, palette with transparency, gray, gray+alpha, 16-bit RGB, 1-bit gray
    alpha = Image.fromarray(np.uint8(np.arange(53 * 41) % 256).reshape(41, 53), "L")
    rgba = rgb.copy()
    rgba.putalpha(alpha)
    pal = rgb.quantize(colors=37)
    pal.info["transparency"] = 3
    la = rgb.convert("L")
    la.putalpha(alpha)
    rgb16 = np.uint16(base) * 257 + np.uint16(rng.integers(0, 256, base.shape))
    for name, im in [("rgb", rgb), ("rgba", rgba), ("palette", pal), ("gray", rgb.convert("L")), ("graya", la),
                     ("bw", rgb.convert("1"))]:
        files[name] = name + ".png"
        im.save(os.path.join(OUT, files[name]), "PNG", **({"transparency": 3} if name == "palette" else {}))
    # 16-bit RGB: PIL cannot write it; numpy + zlib can (filter 0 rows)
    files["rgb16"] = "rgb16.png"
    write_png16(os.path.join(OUT, "rgb16.png"), rgb16)
    for name, f in files.items():
        save_rgb(name, os.path.join(OUT, f))

    # transforms on decoded pixels (PNG: exact input), torchvision functional
    cases = []
    src = Image.open(os.path.join(OUT, "rgb.png")).convert("RGB")
    big = Image.fromarray(picture(131, 97), "RGB")
    big.save(os.path.join(OUT, "big.png"))
    save_rgb("big", os.path.join(OUT, "big.png"))
    for fname, im, kind, a, b, c, d, size, flip in [
        ("rgb.png", src, "crop", 3, 5, 30, 41, 24, 0),   # downscale, anisotropic
        ("rgb.png", src, "crop", 0, 0, 41, 53, 64, 1),   # upscale, flip
        ("rgb.png", src, "crop", 10, 7, 9, 13, 16, 0),   # small crop, upscale
        ("big.png", big, "crop", 7, 13, 81, 110, 24, 1),  # strong downscale (filter support 4.6)
        ("big.png", big, "crop", 0, 40, 97, 70, 48, 0),  # whole height, narrower
        ("big.png", big, "center", 36, 0, 0, 0, 32, 0),  # Resize(36) + CenterCrop(32)
        ("rgb.png", src, "center", 0, 0, 0, 0, 28, 0),   # CenterCrop only
        ("rgb.png", src, "center", 64, 0, 0, 0, 56, 0),  # Resize up + crop
    ]:
        if kind == "crop":
            out = F.resized_crop(im, a, b, c, d, [size, size], interpolation=F.InterpolationMode.BILINEAR)
            if flip:
                out = F.hflip(out)
        else:
            out = F.center_crop(F.resize(im, [a], interpolation=F.InterpolationMode.BILINEAR) if a else im, [size])
        t = F.to_tensor(out)  # (3, S, S) float in [0, 1]
        raw = torch.round(t * 255).to(torch.uint8).permute(1, 2, 0).contiguous().numpy()
        ename = "tf%d.raw" % len(cases)
        raw.tofile(os.path.join(OUT, ename))
        cases.append("%s %s %d %d %d %d %d %d %s" % (fname, kind, a, b, c, d, size, flip, ename))
    with open(os.path.join(OUT, "transforms.txt"), "w") as f:
        f.write("\n".join(cases) + "\n")


def write_png16(path, px):
    import struct
    import zlib
    h, w, _ = px.shape
    raw = b"".join(b"\0" + px[y].astype(">u2").tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    main()
