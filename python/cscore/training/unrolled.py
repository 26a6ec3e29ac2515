"""Training LISTA and LAMP (:mod:`cscore.decoders.learned.unrolled`) with PyTorch.

The schedule is Borgerding, Schniter and Rangan's (IEEE TSP 2017): the network
grows one layer at a time; each new layer starts from the previous layer's
trained parameters (the first from ISTA / AMP), its own parameters are trained
first (Adam, ``lr``), then all layers together at decreasing rates (``lr *
refine[i]``).  Every stage validates every ``val_every`` steps on problems split
off the training draw, keeps the best parameters, and ends after ``patience``
validations without improvement, at ``max_steps``, or when its share of the time
budget (``max_seconds``, shared out by the stages' cost) is spent.  The loss is
the NMSE ``sum ||x_hat - x||^2 / sum ||x||^2`` of the network's last layer.

Training problems come from a *source* with ``draw(n, seed) -> (X, Y)``, ``X``
(n, N, L), ``Y`` (n, M, L) (:mod:`cscore.training.unrolled_data`, re-exported
here): :class:`BernoulliGaussian` (synthetic, ``Y = A X + noise`` at a given rate
and SNR) or :class:`ImageProblems` (cscore's image blocks, e.g.
:func:`mnist_source`, measured with fresh noise).  The torch network that is
trained mirrors the NumPy decode (:mod:`cscore.training._unrolled_torch`,
:func:`torch_layers`).

torch is imported only when a function that needs it runs; decoding never
needs it.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._torch import import_torch
from ..decoders.learned import UnrolledModel
from ..problem import ProblemSpec
from ._unrolled_init import initial_model, nmse_db
from ._unrolled_torch import grouped, torch_layers, torch_net
from .unrolled_config import UnrolledTrainConfig, UnrolledTrainResult
from .unrolled_data import (
    BG_BENCHMARK,
    BernoulliGaussian,
    ImageProblems,
    ProblemSource,
    bg_benchmark_source,
    mnist_source,
)

__all__ = [
    "BG_BENCHMARK",
    "BernoulliGaussian",
    "ImageProblems",
    "ProblemSource",
    "UnrolledTrainConfig",
    "UnrolledTrainResult",
    "bg_benchmark_source",
    "initial_model",
    "mnist_source",
    "nmse_db",
    "torch_layers",
    "train_bg_benchmark",
    "train_unrolled",
]


# -- training ---------------------------------------------------------------------------
@dataclass
class _Data:
    """Grouped training and validation tensors, and what a stage needs to run."""

    Ytr: Any
    Xtr: Any
    Yva: Any
    Xva: Any
    gen: Any
    cfg: UnrolledTrainConfig
    source: Any = None
    joint: bool = False
    drawn: int = 0

    def batch(self, torch: Any, n_tr: int) -> tuple[Any, Any]:
        """The next minibatch (Y, X): fresh from the source (online) or from the pool."""
        cfg = self.cfg
        if cfg.online and self.source is not None:
            self.drawn += 1
            X, Y = self.source.draw(cfg.batch_size, cfg.seed + 1 + self.drawn)
            f32 = torch.float32
            return (torch.tensor(grouped(Y, self.joint), dtype=f32, device=cfg.device),
                    torch.tensor(grouped(X, self.joint), dtype=f32, device=cfg.device))
        idx = torch.randint(0, n_tr, (min(cfg.batch_size, n_tr),), generator=self.gen,
                            device=self.Ytr.device)
        return self.Ytr[idx], self.Xtr[idx]


def _nmse(torch: Any, Xh: Any, X: Any) -> Any:
    return ((Xh - X) ** 2).sum() / (X * X).sum().clamp_min(1e-30)


def _db(v: float) -> float:
    return 10.0 * math.log10(max(v, 1e-30))


def _stage(torch: Any, net: Any, params: list[Any], lr: float, depth: int, data: _Data,
           deadline: float) -> dict[str, Any]:
    """Train ``params`` of the first ``depth`` layers; keep the best (validation) values."""
    cfg = data.cfg
    mats = [p for p in params if p.ndim >= 2]
    vecs = [p for p in params if p.ndim < 2]
    opt = torch.optim.Adam([g for g in ({"params": vecs, "lr": lr},
                                        {"params": mats, "lr": lr * cfg.matrix_lr})
                            if g["params"]])

    def validate() -> float:
        with torch.no_grad():
            return float(_nmse(torch, net(data.Yva, depth)[-1], data.Xva))

    best, best_vals, bad, steps, run = validate(), [p.detach().clone() for p in params], 0, 0, []
    n_tr = data.Ytr.shape[0]
    while steps < cfg.max_steps and time.perf_counter() < deadline:
        Yb, Xb = data.batch(torch, n_tr)
        loss = _nmse(torch, net(Yb, depth)[-1], Xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        run.append(float(loss.detach()))
        if steps % cfg.val_every:
            continue
        v = validate()
        if v < best and math.isfinite(v):
            best, best_vals, bad = v, [p.detach().clone() for p in params], 0
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    with torch.no_grad():
        for p, b in zip(params, best_vals):
            p.copy_(b)
    tail = run[-cfg.val_every:]
    return {"steps": steps, "train_nmse_db": _db(float(np.mean(tail))) if tail else None,
            "val_nmse_db": _db(best)}


def _check(arch: str, cfg: UnrolledTrainConfig, init: UnrolledModel | None) -> None:
    if arch not in ("lista", "lamp"):
        raise ValueError(f"arch must be 'lista' or 'lamp', got {arch!r}")
    if init is not None and init.ARCH != arch:
        raise ValueError(f"init is a {init.ARCH} model, arch is {arch!r}")
    for name in ("n_layers", "n_train", "batch_size", "val_every", "patience", "max_steps"):
        if int(getattr(cfg, name)) < 1:
            raise ValueError(f"config.{name} must be >= 1, got {getattr(cfg, name)}")
    if not 0 < cfg.val_fraction < 1:
        raise ValueError(f"config.val_fraction must be in (0, 1), got {cfg.val_fraction}")
    if cfg.schedule not in ("layerwise", "joint"):
        raise ValueError(f"config.schedule must be 'layerwise' or 'joint', got {cfg.schedule!r}")
    if not cfg.matrix_lr > 0:
        raise ValueError(f"config.matrix_lr must be > 0, got {cfg.matrix_lr}")


def _split(source: ProblemSource, cfg: UnrolledTrainConfig) -> tuple[np.ndarray, ...]:
    X, Y = source.draw(cfg.n_train, cfg.seed)
    n_val = max(1, round(cfg.val_fraction * cfg.n_train))
    if n_val >= cfg.n_train:
        raise ValueError("val_fraction leaves no training problems")
    return X[n_val:], Y[n_val:], X[:n_val], Y[:n_val]


def train_unrolled(
    arch: str,
    source: ProblemSource,
    config: UnrolledTrainConfig | None = None,
    *,
    shrinkage: str = "bg",
    joint: bool = False,
    untied: bool = True,
    spec: ProblemSpec | None = None,
    init: UnrolledModel | None = None,
    info: dict[str, Any] | None = None,
) -> UnrolledTrainResult:
    """Train LISTA or LAMP layer by layer, then jointly (Borgerding et al.'s schedule).

    Parameters
    ----------
    arch : {"lista", "lamp"}
    source : ProblemSource
        Where the training problems come from (:class:`BernoulliGaussian`,
        :class:`ImageProblems`); ``config.n_train`` are drawn once and
        ``val_fraction`` of them validate.
    config : UnrolledTrainConfig, optional
    shrinkage : {"soft", "bg", "pwlin"}, default "bg"
        LAMP's shrinkage.
    joint : bool, default False
        Row-sparse shrinkage across the L channels (multi-vector).
    untied : bool, default True
        LISTA: one B, S per layer (tied matrices, Gregor & LeCun's form, barely
        gain under the layer-wise schedule: the shared B is first fitted as a
        one-layer estimator, and deeper layers stay in that basin).
    spec : ProblemSpec, optional
        Recorded in the model (default: M, N, L of the source).
    init : LISTA or LAMP, optional
        The untrained network (default :func:`initial_model` on the training
        problems); its layer count must be ``config.n_layers``.
    info : dict, optional
        Provenance stored in the model (the training record is added).

    Returns
    -------
    UnrolledTrainResult
    """
    torch = import_torch()
    cfg = config or UnrolledTrainConfig()
    _check(arch, cfg, init)
    t0 = time.perf_counter()
    A = np.asarray(source.A, dtype=np.float64)
    Xtr, Ytr, Xva, Yva = _split(source, cfg)
    spec = spec or ProblemSpec(M=A.shape[0], N=A.shape[1], L=Xtr.shape[2])
    if init is None:
        sub = slice(0, min(500, Xtr.shape[0]))
        init = initial_model(arch, A, spec, Xtr[sub], Ytr[sub], n_layers=cfg.n_layers,
                             shrinkage=shrinkage, joint=joint, untied=untied)
    if init.n_layers != cfg.n_layers:
        raise ValueError(f"init has {init.n_layers} layers, config.n_layers is {cfg.n_layers}")
    old_threads = torch.get_num_threads()
    if cfg.n_threads is not None:
        torch.set_num_threads(int(cfg.n_threads))
    try:
        net = torch_net(torch, init, torch.float32).to(cfg.device)
        f32, dev = torch.float32, cfg.device
        data = _Data(
            Ytr=torch.tensor(grouped(Ytr, init.joint), dtype=f32, device=dev),
            Xtr=torch.tensor(grouped(Xtr, init.joint), dtype=f32, device=dev),
            Yva=torch.tensor(grouped(Yva, init.joint), dtype=f32, device=dev),
            Xva=torch.tensor(grouped(Xva, init.joint), dtype=f32, device=dev),
            gen=torch.Generator(device=dev).manual_seed(cfg.seed + 1), cfg=cfg,
            source=source, joint=init.joint)
        history, per_layer = _grow(torch, net, data)
    finally:
        torch.set_num_threads(old_threads)
    seconds = time.perf_counter() - t0
    settings = {**asdict(cfg), **init.arch_params(), "arch": arch, "optimizer": "adam",
                "loss": "nmse of the last layer", "schedule": "layer-wise then joint",
                "refine": list(cfg.refine), "n_train_drawn": cfg.n_train,
                "n_validation": int(Xva.shape[0])}
    record = {"settings": settings, "val_nmse_db": per_layer, "seconds": round(seconds, 1),
              "history": history}
    model = type(init)(net.arrays(), A, spec, init.arch_params(),
                       {**(info or {}), "training": record})
    return UnrolledTrainResult(model=model, initial=init, val_nmse_db=per_layer,
                               history=history, seconds=seconds, settings=settings)


def _grow(torch: Any, net: Any, data: _Data) -> tuple[list[dict[str, Any]], list[float]]:
    """The layer-by-layer schedule; returns the stage log and the per-layer validation NMSE."""
    from tqdm.auto import tqdm

    cfg = data.cfg
    with torch.no_grad():  # warm up (first calls and torch.optim's imports are slow)
        net(data.Yva[:2], 1)
    torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))])
    t0 = time.perf_counter()
    T = cfg.n_layers
    lrs = [cfg.lr] + [cfg.lr * f for f in cfg.refine]
    stages = [(t, i) for t in range(1, T + 1) for i in range(len(lrs))]
    if cfg.schedule == "joint":  # all layers at once: one stage per rate, all parameters
        stages = [(T, i) for i in range(len(lrs))]
    history: list[dict[str, Any]] = []
    per_layer: list[float] = []
    name = "lista" if net.kind == "lista" else f"lamp-{net.kind}"
    bar = tqdm(total=len(stages), desc=f"{name} T={T}", disable=not cfg.progress,
               leave=False)
    try:
        for k, (t, i) in enumerate(stages):
            if i == 0 and t > 1 and cfg.copy_previous and cfg.schedule == "layerwise":
                # a new layer starts from the previous layer's values
                with torch.no_grad():
                    for new, old in zip(net.layer_params(t - 1), net.layer_params(t - 2)):
                        new.copy_(old)
            params = net.layer_params(t - 1) if i == 0 and cfg.schedule == "layerwise" else (
                [p for s in range(t) for p in net.layer_params(s)] + net.shared_params())
            deadline = math.inf
            if cfg.max_seconds is not None:  # the rest of the budget, by the stages' depth
                left = cfg.max_seconds - (time.perf_counter() - t0)
                deadline = time.perf_counter() + left * t / sum(s for s, _ in stages[k:])
            s0 = time.perf_counter()
            rec = _stage(torch, net, params, lrs[i], t, data, deadline)
            what = "new layer" if cfg.schedule == "layerwise" else "all x1"
            rec = {"layer": t, "stage": what if i == 0 else f"all x{cfg.refine[i - 1]}",
                   "lr": lrs[i], **rec, "seconds": round(time.perf_counter() - s0, 2)}
            history.append(rec)
            if i == len(lrs) - 1:
                per_layer.append(rec["val_nmse_db"])
            tr = rec["train_nmse_db"]
            bar.set_postfix(layer=t, train="-" if tr is None else f"{tr:.2f}dB",
                            val=f"{rec['val_nmse_db']:.2f}dB")
            bar.update()
    finally:
        bar.close()
    if cfg.schedule == "joint":  # the trained network's every layer on the validation split
        with torch.no_grad():
            per_layer = [_db(float(_nmse(torch, o, data.Xva))) for o in net(data.Yva, T)]
    return history, per_layer


# -- recipe --------------------------------------------------------------------------------
def train_bg_benchmark(
    arch: str = "lamp", *, n_layers: int = 8, max_seconds: float = 600.0,
    shrinkage: str = "bg", n_train: int = 20000, seed: int = 0, seed_A: int = 0,
    n_threads: int | None = None, progress: bool = True, path: str | Path | None = None,
    device: str = "cpu", max_steps: int = 4000, untied: bool = True,
    tuning: dict[str, Any] | None = None,
) -> UnrolledTrainResult:
    """Train LISTA or LAMP for Borgerding et al.'s benchmark (the recipe of the bench).

    ``UnrolledTrainConfig(n_layers, n_train, val_fraction=0.05, batch_size=256,
    lr=1e-3, refine=(0.5, 0.1), val_every=25, patience=8, max_steps=4000,
    max_seconds)`` on :func:`bg_benchmark_source`.

    Parameters
    ----------
    arch : {"lamp", "lista"}, default "lamp"
    n_layers : int, default 8
    max_seconds : float, default 600
        Budget of the training stages.
    shrinkage : {"bg", "soft", "pwlin"}, default "bg"
        LAMP's shrinkage.
    n_train : int, default 20000
        Problems drawn (5% validate).
    seed, seed_A : int, default 0
        Seeds of the training (data and minibatches) and of the matrix.
    n_threads : int, optional
        torch threads.
    progress : bool, default True
    path : path, optional
        Save the trained model here.
    device : str, default "cpu"
        torch device of the training.
    max_steps : int, default 4000
        Steps per stage at most.
    untied : bool, default True
        LISTA: one B, S per layer (False: shared by the layers).
    tuning : dict, optional
        Overrides of the :class:`UnrolledTrainConfig` fields above (``lr``,
        ``refine``, ``patience``, ``schedule``, ``matrix_lr``, ``online``, ...),
        plus ``"lista_init": "stepped"`` for LISTA's untrained network from
        :func:`~cscore.training._lista_init.lista_stepped` (default: ISTA).

    Returns
    -------
    UnrolledTrainResult
    """
    source = bg_benchmark_source(seed_A)
    over = dict(tuning or {})
    lista_init = over.pop("lista_init", "ista")
    cfg = UnrolledTrainConfig(**{**dict(
        n_layers=n_layers, n_train=n_train, val_fraction=0.05, batch_size=256, lr=1e-3,
        refine=(0.5, 0.1), val_every=25, patience=8, max_steps=max_steps,
        max_seconds=max_seconds, seed=seed, n_threads=n_threads, progress=progress,
        device=device), **over})
    name = f"{arch}-{shrinkage}" if arch == "lamp" else arch
    info = {"description": f"{name.upper()} for Borgerding et al.'s BG benchmark "
                           "(N=500, M=250, A iid N(0,1/M), rate 0.1, SNR 40 dB)",
            "problems": {**BG_BENCHMARK, "variance": 1.0, "seed_A": seed_A,
                         "matrix": f"gaussian_matrix(250, 500, {seed_A}, unit_norm=False)"},
            "recipe": "cscore.training.unrolled.train_bg_benchmark"}
    spec = ProblemSpec(M=BG_BENCHMARK["M"], N=BG_BENCHMARK["N"], L=1,
                       dataset="bernoulli-gaussian rate 0.1, SNR 40 dB")
    init = None
    if arch == "lista" and lista_init == "stepped":
        from ._lista_init import lista_stepped

        X, Y = source.draw(300, seed + 10_000)  # not the training draw (seed)
        init = lista_stepped(source.A, spec, X, Y, n_layers=cfg.n_layers, untied=untied)
        info["init"] = init.info["init"]  # the untrained network, rebuildable from A
    elif lista_init != "ista":
        raise ValueError(f"lista_init must be 'ista' or 'stepped', got {lista_init!r}")
    res = train_unrolled(arch, source, cfg, shrinkage=shrinkage, info=info, untied=untied,
                         spec=spec, init=init)
    if path is not None:
        res.model.save(path)
    return res
