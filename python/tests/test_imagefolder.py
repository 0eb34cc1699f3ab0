"""lt.data.ImageFolder: torchvision's folder layout read by the C loader. The
oracle is PIL on the same files: CenterCrop (resize=0: no resampling) then
(pixel / 255 - mean) / std in float32, exactly; labels from the sorted
class folders; a broken file skipped and counted; errors as exceptions."""
import numpy as np
import pytest

import lazytensor as lt

Image = pytest.importorskip("PIL.Image")

CLASSES = ["b_cls", "a_cls", "c_cls"]  # written out of order: the index is the sorted place
PER_CLASS = 3
W, H, S = 12, 10, 8  # images W x H, crops S x S


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagefolder")
    rng = np.random.default_rng(5)
    for split in ("train", "val"):
        for c in CLASSES:
            (root / split / c).mkdir(parents=True)
            for i in range(PER_CLASS):
                px = rng.integers(0, 256, size=(H, W, 3), dtype=np.uint8)
                Image.fromarray(px).save(root / split / c / f"{i}.png")
    (root / "train" / "a_cls" / "notes.txt").write_text("not an image: ignored, as torchvision does")
    return root


def expected(root, split, channels, mean, std):
    """(x, y) in ImageFolder's order, with PIL: CenterCrop(S), ToTensor, Normalize."""
    xs, ys = [], []
    top, left = int(round((H - S) / 2)), int(round((W - S) / 2))
    for label, c in enumerate(sorted(CLASSES)):
        for i in range(PER_CLASS):
            im = Image.open(root / split / c / f"{i}.png").convert("L" if channels == 1 else "RGB")
            px = np.asarray(im, dtype=np.float32).reshape(H, W, channels)[top:top + S, left:left + S]
            chw = px.transpose(2, 0, 1) / np.float32(255)
            xs.append((chw - np.float32(mean).reshape(-1, 1, 1)) / np.float32(std).reshape(-1, 1, 1))
            ys.append(label)
    return np.stack(xs).astype(np.float32), np.array(ys)


def read_all(loader):
    xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in loader])
    return np.concatenate(xs), np.concatenate(ys)


@pytest.mark.parametrize("channels", [3, 1])
def test_matches_pil(folder, channels):
    mean, std = [0.5, 0.4, 0.3][:channels], [0.25, 0.2, 0.3][:channels]
    ds = lt.data.ImageFolder(folder, "val", image_size=S, channels=channels, resize=0, mean=mean, std=std, workers=2)
    assert ds.classes == sorted(CLASSES) and ds.class_to_idx["c_cls"] == 2
    assert len(ds) == len(CLASSES) * PER_CLASS
    loader = lt.data.DataLoader(ds, batch_size=4, shuffle=False, drop_last=False)
    assert len(loader) == 3
    x, y = read_all(loader)
    want_x, want_y = expected(folder, "val", channels, mean, std)
    assert x.shape == (9, channels, S, S) and x.dtype == np.float32
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(x, want_x)
    assert loader.skipped == 0


def test_training_batches(folder):
    """augment: RandomResizedCrop + flip from (seed, epoch, index): the same batches for
    any number of workers."""
    def batches(workers):
        ds = lt.data.ImageFolder(folder, "train", image_size=S, workers=workers)
        loader = lt.data.DataLoader(ds, batch_size=2, seed=3, augment=True)
        return [(x.numpy(), y.numpy()) for _ in range(2) for x, y in loader]
    a, b = batches(0), batches(2)
    assert len(a) == 2 * 4 and a[0][0].shape == (2, 3, S, S)
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    labels = np.concatenate([y for _, y in a[:4]])
    assert set(labels) <= {0, 1, 2}


def test_broken_file_skipped_and_counted(folder, tmp_path, capfd):
    bad = tmp_path / "bad"
    for c in ("x", "y"):
        (bad / "val" / c).mkdir(parents=True)
        Image.fromarray(np.full((S, S, 3), 7, np.uint8)).save(bad / "val" / c / "ok.png")
    (bad / "val" / "y" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    ds = lt.data.ImageFolder(bad, "val", image_size=S, resize=0, workers=1)
    loader = lt.data.DataLoader(ds, batch_size=3, shuffle=False, drop_last=False)
    x, y = read_all(loader)
    assert x.shape[0] == 3 and loader.skipped == 1
    assert "broken.png" in capfd.readouterr().err
    strict = lt.data.DataLoader(lt.data.ImageFolder(bad, "val", image_size=S, resize=0, workers=1,
                                                    bad_images="fail"), batch_size=3, shuffle=False, drop_last=False)
    with pytest.raises(ValueError, match="broken.png"):
        read_all(strict)
    assert "skipping" not in capfd.readouterr().err


def test_errors(folder, tmp_path):
    with pytest.raises(OSError, match="lt_dataset_imagefolder"):
        lt.data.ImageFolder(tmp_path / "nothing")
    with pytest.raises(ValueError, match="channels"):
        lt.data.ImageFolder(folder, channels=2)
    with pytest.raises(ValueError, match="3 channels"):
        lt.data.ImageFolder(folder, mean=[0.5])
    with pytest.raises(ValueError, match="bad_images"):
        lt.data.ImageFolder(folder, bad_images="ignore")
    with pytest.raises(ValueError, match="image_size"):
        lt.data.ImageFolder(folder, image_size=0)
