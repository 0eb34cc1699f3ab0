"""The C library's datasets as batch iterators (the batches `lazytensor train` sees)."""
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

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        for b in range(len(self)):
            yield self._c.batch(epoch, b)
