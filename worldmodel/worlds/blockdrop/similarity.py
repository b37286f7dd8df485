"""Letter classifiers for the competition's similarity score ``si``.

The competition scores a level by the softmax probability that ``vit-base-letter``
(a ViT fine-tuned on the 26 capital letters) gives the target letter on the level's
image (:mod:`.render`). That model is not shipped here and nothing is downloaded:

* :class:`HFLetterClassifier` loads a local Hugging Face image-classification folder
  (``--similarity-model DIR``: ``config.json``, weights, a preprocessor config), for
  a user who has the real classifier or another. Letters are read from the config's
  ``id2label`` (single letters A–Z); a 26-label model with other names is taken in
  the order A..Z, as the competition's script does (``ord(letter) - 65``).
* :class:`ProxyLetterClassifier` is the project's own **proxy**: a small CNN trained
  here on letters of Pillow's built-in font, pixelated onto grids of cells and drawn
  as blocks, framed as the evaluator frames a level (:func:`train_proxy`,
  ``worldmodel blockdrop-proxy``). Its probabilities are *not* ``vit-base-letter``'s;
  every table that uses it says "proxy".

Both return, for a batch of images, the probability of each letter A..Z
(:meth:`probs`), and name themselves (:attr:`label`) for results.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Sequence

import numpy as np

from ...errors import WorldModelError
from .render import MARGIN, SIZE, Pose, render

LETTERS = tuple(string.ascii_uppercase)
PROXY_INPUT = 64  #: the proxy reads 64 × 64 grayscale images


class LetterClassifier:
    label = "classifier"
    is_proxy = False

    def probs(self, images: Sequence) -> np.ndarray:
        """``(n, 26)`` probabilities of A..Z for PIL images."""
        raise NotImplementedError

    def describe(self) -> dict:
        return {"label": self.label, "proxy": self.is_proxy}


class HFLetterClassifier(LetterClassifier):
    """A local Hugging Face image-classification model (``AutoModelForImageClassification``)."""

    def __init__(self, folder: str | Path, device: str = "cpu", batch_size: int = 16):
        import torch  # noqa: F401
        from transformers import AutoImageProcessor, AutoModelForImageClassification

        folder = Path(folder)
        if not folder.is_dir():
            raise WorldModelError(f"--similarity-model {folder} is not a folder")
        try:
            self.processor = AutoImageProcessor.from_pretrained(folder, local_files_only=True)
            self.model = AutoModelForImageClassification.from_pretrained(folder, local_files_only=True).to(device).eval()
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise WorldModelError(f"--similarity-model {folder}: not an image-classification model ({first})") from None
        id2label = {int(k): str(v) for k, v in (self.model.config.id2label or {}).items()}
        by_name = {v.strip().upper(): k for k, v in id2label.items() if v.strip().upper() in LETTERS}
        if len(by_name) == 26:
            self.columns = [by_name[c] for c in LETTERS]
        elif self.model.config.num_labels == 26:
            self.columns = list(range(26))
        else:
            raise WorldModelError(f"--similarity-model {folder}: its {self.model.config.num_labels} labels are not "
                                  "the 26 letters A-Z")
        self.device = device
        self.batch_size = int(batch_size)
        self.label = f"hf:{folder.name}"

    def probs(self, images):
        import torch

        out = []
        for i in range(0, len(images), self.batch_size):
            chunk = [im.convert("RGB") for im in images[i:i + self.batch_size]]
            inputs = self.processor(images=chunk, return_tensors="pt").to(self.device)
            with torch.no_grad():
                logits = self.model(**inputs).logits
            p = torch.softmax(logits.float(), dim=-1)[:, self.columns]
            out.append(p.cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 26))


# ---------------------------------------------------------------------------
# The proxy
# ---------------------------------------------------------------------------


def _net(seed: int):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(64 * 8 * 8, 26))


def to_input(images: Sequence) -> np.ndarray:
    """PIL images -> ``(n, 1, 64, 64)`` float32, ink 1 and paper 0."""
    from PIL import Image

    arr = [np.asarray(im.convert("L").resize((PROXY_INPUT, PROXY_INPUT), Image.BILINEAR), dtype=np.float32)
           for im in images]
    return (1.0 - np.stack(arr) / 255.0)[:, None] if arr else np.zeros((0, 1, PROXY_INPUT, PROXY_INPUT), np.float32)


class ProxyLetterClassifier(LetterClassifier):
    """The project's proxy letter classifier (a small CNN; see :func:`train_proxy`)."""

    is_proxy = True

    def __init__(self, folder: str | Path):
        import torch
        from safetensors.torch import load_file

        folder = Path(folder)
        meta_path, weights = folder / "proxy.json", folder / "model.safetensors"
        if not meta_path.exists() or not weights.exists():
            raise WorldModelError(f"{folder} is not a proxy letter classifier (no proxy.json and model.safetensors; "
                                  "make one with `worldmodel blockdrop-proxy --out DIR`)")
        from worldmodel.safety import read_json_object

        self.meta = read_json_object(meta_path, "json", "proxy classifier file")
        self.net = _net(0)
        self.net.load_state_dict(load_file(str(weights)))
        self.net.eval()
        torch.set_grad_enabled(True)
        self.label = f"proxy-cnn ({folder.name})"

    def probs(self, images):
        import torch

        if not images:
            return np.zeros((0, 26))
        with torch.no_grad():
            logits = self.net(torch.from_numpy(to_input(images)))
        return torch.softmax(logits, dim=-1).numpy()

    def describe(self):
        return {"label": self.label, "proxy": True, **{k: self.meta[k] for k in ("seed", "steps", "accuracy")
                                                        if k in self.meta}}


def font_letter_cells(letter: str, rng: np.random.Generator) -> set[tuple[int, int]]:
    """A letter of Pillow's built-in font, drawn at a random size, weight and slant, pixelated onto a
    random grid of 3..12 × 5..16 cells: the cells (column, row from the bottom) more than half inked."""
    from PIL import Image, ImageDraw, ImageFont

    size = 96
    font = ImageFont.load_default(size=int(rng.integers(60, 90)))
    img = Image.new("L", (size, size), 0)
    d = ImageDraw.Draw(img)
    d.text((size / 2, size / 2), letter, font=font, fill=255, anchor="mm", stroke_width=int(rng.integers(0, 3)),
           stroke_fill=255)
    shear = float(rng.uniform(-0.25, 0.25))
    img = img.transform(img.size, Image.AFFINE, (1, shear, -shear * size / 2, 0, 1, 0), resample=Image.BILINEAR)
    box = img.getbbox()
    if box is None:
        return set()
    img = img.crop(box)
    cols, rows = int(rng.integers(3, 13)), int(rng.integers(5, 17))
    small = np.asarray(img.resize((cols, rows), Image.BOX), dtype=np.float32) / 255.0
    thresh = float(rng.uniform(0.25, 0.5))
    return {(c, rows - 1 - r) for r in range(rows) for c in range(cols) if small[r, c] > thresh}


def cells_image(cells, size: int = 256):
    """Cells drawn as ``b11`` blocks (0.22 × 0.21 in 0.2401 cells), framed as a level; ``size`` pixels."""
    from .unity import CELL

    poses = [Pose(c * CELL, r * CELL, 0.22, 0.21, 0.0) for c, r in cells]
    return render(poses, size=size, margin=round(MARGIN * size / SIZE))


def train_proxy(out: str | Path, seed: int = 0, steps: int = 1500, batch: int = 64, progress: bool = True,
                test_batches: int = 10) -> dict:
    """Train the proxy on freshly drawn pixelated font letters; write ``out/{model.safetensors,proxy.json}``.

    Returns the metadata written (seed, steps, accuracy on ``test_batches`` × 52 fresh letters).
    """
    import torch
    from safetensors.torch import save_file
    from tqdm.auto import tqdm

    out = Path(out)
    rng = np.random.default_rng([seed, 0x1E77])
    net = _net(seed)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)

    def batch_of(n, gen):
        ys = gen.integers(26, size=n)
        imgs = [cells_image(font_letter_cells(LETTERS[int(y)], gen), size=128) for y in ys]
        return torch.from_numpy(to_input(imgs)), torch.from_numpy(ys.astype(np.int64))

    net.train()
    for _ in tqdm(range(steps), desc="training the proxy letter classifier", disable=not progress):
        x, y = batch_of(batch, rng)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    net.eval()
    test_rng = np.random.default_rng([seed, 0x7E57])
    correct = 0
    with torch.no_grad():
        for _ in range(test_batches):
            x, y = batch_of(52, test_rng)
            correct += int((net(x).argmax(-1) == y).sum())
    meta = {"kind": "proxy letter classifier (small CNN on pixelated font letters), not vit-base-letter",
            "seed": int(seed), "steps": int(steps), "batch": int(batch), "input": PROXY_INPUT,
            "accuracy": correct / (52 * test_batches), "test_letters": 52 * test_batches,
            "labels": list(LETTERS)}
    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(tmp / "model.safetensors"))
    (tmp / "proxy.json").write_text(json.dumps(meta, indent=2) + "\n")
    if out.exists():
        for f in out.iterdir():
            f.unlink()
        out.rmdir()
    tmp.rename(out)
    return meta


def load_classifier(similarity_model: str | Path | None, proxy: str | Path | None, device: str = "cpu"):
    """``--similarity-model DIR`` (a Hugging Face folder) if given, else the proxy in ``proxy``."""
    if similarity_model:
        return HFLetterClassifier(similarity_model, device=device)
    if proxy:
        return ProxyLetterClassifier(proxy)
    raise WorldModelError("no letter classifier: give --similarity-model DIR (a local Hugging Face image "
                          "classifier) or --proxy DIR (make one with `worldmodel blockdrop-proxy --out DIR`)")
