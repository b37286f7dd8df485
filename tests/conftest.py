import os

import pytest

# Tests run the CPU build with a few threads; helpers below keep model sizes tiny.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# No tqdm monitor thread: mutation testing forks worker processes from a process that has run
# tests, and a thread alive at fork time can leave a lock held in the child (a test that shows
# a progress bar then hangs instead of failing or passing).
import tqdm  # noqa: E402

tqdm.tqdm.monitor_interval = 0


@pytest.fixture
def tiny_model_cfg():
    return dict(n_layer=2, n_embd=32, n_head=2, n_positions=64)
