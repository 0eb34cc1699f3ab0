"""The C library's datasets as batch iterators (the batches `lazytensor train` sees)."""
import os

from . import _C


class FashionMNIST:
    """Fashion-MNIST's train or test split (Debian's dataset-fashion-mnist by default)."""

    def __init__(self, root=None, train=True):
        self._c = _C.dataset_fashion_mnist(root, train)

    def __len__(self):
        return self._c.size()


class FakeData:
    """Generated images (N, channels, image_size, image_size), deterministic per (seed, index)."""

    def __init__(self, size=60000, channels=1, image_size=28, num_classes=10, seed=0):
        self._c = _C.dataset_fake(size, channels, image_size, num_classes, seed)

    def __len__(self):
        return self._c.size()


class ImageFolder:
    """An image folder in torchvision's ImageFolder layout, ``root/<split>/<class>/<image>``
    (.jpg, .jpeg, .png; class index = the class folder's place in sorted order, as in
    ``classes``), decoded and transformed in C as torchvision does. A DataLoader with
    ``augment=True`` runs RandomResizedCrop(image_size) + RandomHorizontalFlip; without
    it Resize(resize) + CenterCrop(image_size) (``resize=0``: crop only; default
    image_size * 256 // 224); then ToTensor and Normalize(mean, std) (default ImageNet's;
    give both for ``channels=1``, which takes PIL's luma). Its loaders decode in ``workers``
    threads (default one per core) up to ``prefetch`` batches ahead. A broken file is
    skipped with a warning naming it and counted (``DataLoader.skipped``) unless
    ``bad_images="fail"``, which raises instead."""

    def __init__(self, root, split="train", image_size=224, channels=3, resize=None, mean=None, std=None,
                 workers=None, prefetch=2, bad_images="skip"):
        if bad_images not in ("skip", "fail"):
            raise ValueError(f"ImageFolder: bad_images must be 'skip' or 'fail', not {bad_images!r}")
        if resize is None:
            resize = image_size * 256 // 224
        self._c = _C.dataset_imagefolder(os.fspath(root), split, image_size, channels, resize, mean, std,
                                         -1 if workers is None else workers, prefetch, bad_images == "fail")
        self.classes = [self._c.class_name(i) for i in range(self._c.info()[3])]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        return self._c.size()


class DataLoader:
    """Batches of (x float32 (N, C, H, W) normalized, y int64 (N)).

    Each ``iter()`` is the next epoch (shuffled from (seed, epoch)); ``batch(epoch, b)``
    gives one batch directly. drop_last (the default, as training does) skips
    the last partial batch."""

    def __init__(self, dataset, batch_size=128, shuffle=True, seed=0, augment=False, drop_last=True):
        self.dataset = dataset
        self._c = _C.loader(dataset._c, batch_size, seed, shuffle, augment)
        self.batch_size = self._c.batch_size()
        self.drop_last = drop_last
        self.epoch = 0

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def batch(self, epoch, b):
        return self._c.batch(epoch, b)

    @property
    def skipped(self):
        """Broken image files this loader skipped so far (an ImageFolder's; 0 otherwise)."""
        return self._c.skipped()

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        for b in range(len(self)):
            yield self._c.batch(epoch, b)
