import os

import pytest

# Tests run the CPU build with a few threads; helpers below keep model sizes tiny.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def tiny_model_cfg():
    return dict(n_layer=2, n_embd=32, n_head=2, n_positions=64)
