"""Settings declared once: the ``[evaluate]`` dataclass, and what is derived from a settings dataclass.

A settings dataclass (:class:`Settings` here, :class:`worldmodel.training.TrainConfig`) is the one home of
its keys: the task file's schema, the command-line flags and the overrides a parsed command line gives
all come from its fields (:func:`worldmodel.config.schema_of`, :func:`~worldmodel.config.add_arguments`,
:func:`~worldmodel.config.overrides_from`, with each field's help text, choices and flag name kept in
its metadata by :func:`~worldmodel.config.option`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .acceptance import AcceptanceRule, Epsilon, parse_acceptance
from .config import option, schema_of
from .errors import WorldModelError


def metric_settings() -> dict:
    """The ``[evaluate]`` keys the registered metrics add: ``{key: (type, default, help)}``."""
    from . import registry

    out = {}
    for spec in registry.metrics():
        out.update(spec.settings)
    return out


def evaluate_schema() -> dict:
    """The ``[evaluate]`` schema: :class:`Settings`, ``epsilon``, and the registered metrics' keys."""
    return {**schema_of(Settings), "epsilon": float, **{k: v[0] for k, v in metric_settings().items()}}




@dataclass
class Settings:
    """``[evaluate]``: the metric settings; defaults are the paper's (ε = 0.01, M = 30, k = 5).

    The task schema, the ``evaluate`` command's flags and :func:`worldmodel.evaluator.settings_for`'s
    overrides are all derived from these fields (:mod:`worldmodel.config`).
    """

    acceptance: AcceptanceRule = field(default_factory=Epsilon, metadata={"schema": str, "cli": False})
    M: int = option(30, "model samples per prefix (default 30)", flag="--M")
    k: int = option(5, "true-boundary suffix length (default 5)", flag="--k")
    trials: int = option(100, "prefix pairs for compression and distinction, held-out sequences for next-token "
                              "(default: the task's, else 100)")
    max_sample_len: int = option(100, "longest sampled continuation (default: the task's, else 100); never past "
                                      "what the model was trained on")
    boundary: str = option("exact", cli=False)     #: "exact" (enumerate to length k) or "sampled" (M random continuations)
    boundary_len: int | None = option(None, cli=False)  #: length of sampled true-boundary continuations (default: max_sample_len)
    max_boundary: int | None = option(None, cli=False)  #: score at most this many true-boundary suffixes (sampled)
    batch_trials: int = option(16, cli=False)      #: trials per logged batch (dealt out in a sharded run)
    seed: int = option(0, "run seed: every trial's seed derives from it and its index (default: the task's, else 0)")
    probe_sequences: int = option(1000, "sequences whose positions train/test the probe (default 1000)")
    probe_epochs: int = option(100, "probe training epochs (default 100)")
    probe_lr: float = option(0.01, cli=False)
    probe_batch: int = option(2048, cli=False)
    keep_top: bool = option(True, "end a sample where the rule allows no token (default: draw the top token, as the "
                                  "paper's code)", flag="--no-keep-top")
    next_token_positions: str = option("world", "positions the next-token test scores: the world's (default; "
                                                "navigation: moves) or all", choices=("world", "all"))
    next_token_pooling: str = option("tokens", "pool next-token over positions (default, as the paper's code) or "
                                               "average per sequence", choices=("tokens", "sequences"))
    #: values of the ``[evaluate]`` keys that registered metrics add (:attr:`MetricSpec.settings`)
    extra: dict = field(default_factory=dict, metadata={"cli": False, "schema": None})

    def __post_init__(self):
        if self.next_token_positions not in ("world", "all"):
            raise WorldModelError(f"next_token_positions must be 'world' or 'all', not {self.next_token_positions!r}")
        if self.next_token_pooling not in ("tokens", "sequences"):
            raise WorldModelError(f"next_token_pooling must be 'tokens' or 'sequences', not {self.next_token_pooling!r}")
        if not isinstance(self.keep_top, bool):
            raise WorldModelError(f"evaluate setting keep_top must be true or false, got {self.keep_top!r}")
        def whole(name, low, value):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise WorldModelError(f"evaluate setting {name} must be a whole number >= {low}, got {value!r}")

        for name in ("M", "k", "trials", "max_sample_len", "batch_trials", "probe_sequences", "probe_epochs",
                     "probe_batch"):
            whole(name, 1, getattr(self, name))
        whole("seed", 0, self.seed)
        for name in ("boundary_len", "max_boundary"):
            if getattr(self, name) is not None:
                whole(name, 1, getattr(self, name))
        if not (isinstance(self.probe_lr, (int, float)) and self.probe_lr > 0):
            raise WorldModelError(f"evaluate setting probe_lr must be a positive number, got {self.probe_lr!r}")
        if self.boundary not in ("exact", "sampled"):
            raise WorldModelError(f"evaluate setting boundary must be 'exact' or 'sampled', got {self.boundary!r}")
        if not isinstance(self.acceptance, AcceptanceRule):
            self.acceptance = parse_acceptance(self.acceptance)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["acceptance"] = self.acceptance.spec()
        extra = d.pop("extra")
        d.update(sorted(extra.items()))       # a registered metric's settings, flat as in the task file
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Settings":
        d = dict(d)
        known = {f for f in cls.__dataclass_fields__} - {"extra"}
        metric_keys = metric_settings()
        extra = {key: d.pop(key) for key in list(d) if key not in known and key in metric_keys}
        unknown = set(d) - known - {"epsilon"}
        if unknown:
            raise WorldModelError(f"unknown evaluate setting(s): {', '.join(sorted(unknown))}")
        if "epsilon" in d:
            d["acceptance"] = Epsilon(float(d.pop("epsilon")))
        if "acceptance" in d:
            d["acceptance"] = parse_acceptance(d["acceptance"])
        defaults = {key: spec[1] for key, spec in metric_keys.items() if spec[1] is not None}
        return cls(**d, extra={**defaults, **extra} if extra else {})
