"""The DPDL paper's threat models (§VI-D) against real training runs, cached per cell.

An eavesdropper sees every message on the links and the models the agents broadcast, so it
knows the parameters each intercepted gradient was computed at. For a training config we
run two trajectories — without the Gaussian mechanism ("ND", ε = ∞) and with it — and at
each attacked round t we *tap* one extra round computed from the state at the start of
round t with a batch of ``attack_batch`` images per agent (one by default, as in the paper's
figures). The tapped round is a side computation with its own seeded generator: the
training trajectory continues with its normal batches, untouched.

Channels (what each algorithm sends through its RunContext, which shows it to the loop's taps):

* ``CG`` — agent i's cross-gradient to neighbour j, g^{ji} = (Σ_b clip(∇F_i(x_j; ζ_b)) +
  z)/B (eq. 10; z = 0 without DP), computed at the neighbour's model x_j. Scenarios
  ND-CG / DPDL-CG.
* ``MM`` — the momentum agent i broadcasts, ṽ_i = β·v_i + g̃^i (eq. 19). The paper attacks
  "the difference between ṽ_{t−1} and ṽ_t". We invert, by default
  (``mm_target="innovation"``), ṽ_t^i − β·v_t^i = g̃_t^i: an eavesdropper who saw round
  t−1's broadcasts knows v_t^i = Σ_j w_ij ṽ_{t−1}^j (eq. 21), so this is exactly what it can
  isolate, and it is the only part that depends on round t's data. g̃^i (eqs 17–18) mixes
  the neighbours' cross-gradients at x_i with agent i's *clean* clipped self-gradient ĝ^{ii}
  (weight α·Σ_j w_ij C^{ij}), all at x_i. ``mm_target="difference"`` inverts the literal
  ṽ_t^i − ṽ_{t−1}^i, which also contains β·v_t^i − ṽ_{t−1}^i (other agents' momenta).
  Scenarios ND-MM / DPDL-MM.
* ``gradient`` — the baselines' noisy local gradient (DP-DPSGD, MUFFLIATO, DP-NETFLEET),
  recoverable from their broadcasts as noted in each module.

The victims are ``n_victims`` agents drawn once per config; the reconstruction of victim i
is compared with the ``attack_batch`` images of agent i's tapped batch.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ...runs import ExperimentConfig, ObjectSlot, ResultStore, prepare, sigma_for
from ...sim import (
    DATASETS,
    InversionConfig,
    ParamLayout,
    Progress,
    build_model,
    check_choice,
    check_int,
    data_record,
    derive_seed,
    describe,
    display_name,
    infer_labels,
    invert,
    note,
    pixel_box,
    reconstruction_metrics,
    training_rounds,
)

__all__ = ["AttackSpec", "AttackResult", "Eavesdropper", "Interception", "intercept", "attack_cell", "scenario_name",
           "MM_TARGETS"]

MM_TARGETS = ("innovation", "difference")
# An attack cell's partial work: the interceptions of its no-defence and its private training.
STAGES = ("nd", "dp")
LABEL_MODES = ("idlg", "known")
# PSNR ([0, 1] pixels) at or above which a reconstruction counts as successful, per dataset:
# the 90th percentile, rounded up to a whole dB, of the PSNR that a flat image of the true
# mean colour scores (measured on 2,000 training images: MNIST 12.4 dB, CIFAR-10 18.0 dB),
# i.e. better than knowing the colour for 9 images in 10. CIFAR-10 images are low-contrast,
# so one absolute threshold for both datasets would count colour blobs as successes.
SUCCESS_PSNR = {"mnist": 13.0, "cifar10": 18.0}


@dataclass(frozen=True)
class AttackSpec:
    """What to intercept and how to invert it.

    Attributes
    ----------
    rounds : tuple of int
        Rounds whose messages are attacked (1-based).
    n_victims : int
        Agents attacked per round and channel.
    attack_batch : int
        Images per agent in a tapped round.
    sigma_batch_size : int, optional
        Evaluate the config's σ rule at this batch size for the tapped round (the paper's
        216). Under the ``authors_code`` rule σ grows with B while the training noise per
        coordinate σC/B does not, so a profile may train at a small B with the paper's
        training noise and still attack messages as noisy as the paper's. ``None``: the
        training σ.
    mm_target : {"innovation", "difference"}
        Which momentum quantity the MM channel inverts (module docstring).
    labels : {"idlg", "known"}
        Infer labels from the message (iDLG; needs ``attack_batch == 1``) or give the
        attacker the true labels.
    inversion : InversionConfig
    """

    rounds: tuple[int, ...]
    n_victims: int = 4
    attack_batch: int = 1
    sigma_batch_size: int | None = None
    mm_target: str = "innovation"
    labels: str = "idlg"
    inversion: InversionConfig = field(default_factory=InversionConfig)

    def __post_init__(self):
        object.__setattr__(self, "rounds", tuple(int(r) for r in self.rounds))
        if not self.rounds or min(self.rounds) < 1:
            raise ValueError(f"rounds={self.rounds!r} must be a non-empty list of rounds >= 1")
        check_choice(self, "mm_target", MM_TARGETS)
        check_choice(self, "labels", LABEL_MODES)
        check_int(self, "sigma_batch_size", optional=True)
        check_int(self, "n_victims")
        check_int(self, "attack_batch")
        if self.labels == "idlg" and self.attack_batch != 1:
            raise ValueError("labels='idlg' reads one label per message; use attack_batch=1 or labels='known'")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["rounds"] = list(self.rounds)
        return d


@dataclass
class Interception:
    """One intercepted message and the private batch behind it."""

    channel: str
    round: int
    victim: int
    model: torch.Tensor  # (P,)
    message: torch.Tensor  # (P,)
    images: torch.Tensor  # (b, C, H, W), normalised
    labels: torch.Tensor  # (b,)


def _victims(config: ExperimentConfig, n: int) -> list[int]:
    if n > config.n_agents:
        raise ValueError(f"n_victims={n} exceeds n_agents={config.n_agents}")
    rng = np.random.default_rng(derive_seed(config.seed, "attack", "victims"))
    return sorted(int(v) for v in rng.permutation(config.n_agents)[:n])


class Eavesdropper:
    """A tap of the training loop: sees every message on the links and, at the attacked
    rounds, probes one extra round (a side step on a copy of the state with a batch of
    ``spec.attack_batch`` images per agent and its own seeded generator, so training goes
    on untouched) and keeps the victims' messages.

    It knows only what is broadcast: the momentum innovation of the MM channel is derived
    from the previous round's MM messages and mixing matrix (v_t = W_{t−1} ṽ_{t−1}, eq. 21).
    """

    def __init__(self, config: ExperimentConfig, spec: AttackSpec, tap_sigma: torch.Tensor, victims: list[int]):
        self.config, self.spec, self.tap_sigma, self.victims = config, spec, tap_sigma, victims
        self.out: list[Interception] = []
        self.previous_mm: tuple[torch.Tensor, torch.Tensor] | None = None  # (ṽ_{t−1}, W_{t−1})
        self._probe_batch = None

    def observe(self, ctx, channel, messages, models, owners) -> None:
        if self._probe_batch is not None:  # a message of the probe round
            xb, yb = self._probe_batch
            for v in self.victims:
                row = int(torch.nonzero(owners == v)[0, 0])
                msg = messages[row]
                if channel == "MM":
                    msg = msg - self._mm_reference(ctx, v)
                self.out.append(Interception(channel, ctx.round, v, models[row].cpu(), msg.detach().cpu(),
                                             xb[v].cpu(), yb[v].cpu()))
        elif channel == "MM":
            self.previous_mm = (messages.detach().clone(), ctx.W)

    def _mm_reference(self, ctx, v: int) -> torch.Tensor:
        """What the eavesdropper subtracts from agent v's ṽ_t (module docstring)."""
        if self.previous_mm is None:  # round 1: v_1 = 0 and nothing was broadcast before
            return torch.zeros(())
        prev, W_prev = self.previous_mm
        if self.spec.mm_target == "innovation":
            return ctx.momentum * (W_prev[v] @ prev)
        return prev[v]

    def probe(self, t: int, prep, state) -> None:
        if t not in self.spec.rounds:
            return
        gen = torch.Generator().manual_seed(derive_seed(self.config.seed, "attack", t))
        side_ctx = prep.ctx.side(batch_size=self.spec.attack_batch, sigma=self.tap_sigma, noise_generator=gen,
                                 taps=[self])
        side = type(prep.algorithm)(prep.algorithm.params, side_ctx)
        self._probe_batch = prep.sample_batches(self.spec.attack_batch, gen)
        try:
            side.step({k: v.clone() for k, v in state.items()}, *self._probe_batch)
        finally:
            self._probe_batch = None


def intercept(config: ExperimentConfig, spec: AttackSpec,
              progress: bool | None = False) -> tuple[list[Interception], dict]:
    """Train ``config`` up to ``max(spec.rounds)`` with an :class:`Eavesdropper` tapping the loop.

    ``progress`` shows the training's rounds (:class:`~dpdl_core.sim.progress.Progress`;
    ``None`` leaves it to ``$DPDL_PROGRESS``).

    Returns
    -------
    interceptions : list of Interception
        For every attacked round, channel and victim.
    meta : dict
        σ of the tapped messages and of training, the data (label and metadata) and victims.
    """
    prep = prepare(config)
    alg, ctx = prep.algorithm, prep.ctx
    tap_sigma = ctx.sigma
    if spec.sigma_batch_size and ctx.private:
        report = sigma_for(config, ctx.topology, type(alg), alg.params, prep.sizes.numpy(), spec.sigma_batch_size)
        tap_sigma = torch.as_tensor(report.sigma, dtype=ctx.sigma.dtype, device=ctx.sigma.device)
    state = alg.init_state(prep.initial_models())
    tap = Eavesdropper(config, spec, tap_sigma, _victims(config, spec.n_victims))
    who = "no defence" if config.epsilon is None else f"{display_name(config.algorithm)}, eps {config.epsilon:g}"
    bar = Progress(max(spec.rounds), f"attack training ({who})", "round", progress=progress)
    for _, losses in training_rounds(prep, state, 1, max(spec.rounds), taps=[tap]):
        bar.update(1, loss=f"{losses.mean():.3g}")
    bar.close()
    meta = {
        "sigma": float(tap_sigma.mean()),
        "train_sigma": float(np.mean(prep.sigma_report.sigma)),
        "train_epsilon_rdp": float(np.max(prep.sigma_report.epsilon_rdp)),
        "dataset_label": describe(prep.data.meta),
        "dataset": data_record(prep.data.meta),
        "victims": tap.victims,
    }
    return tap.out, meta


@dataclass
class AttackResult:
    """Per-image metrics and the images of one attack cell.

    Attributes
    ----------
    metrics : DataFrame
        One row per reconstructed image: ``scenario, private, channel, round, victim,
        image, label, label_inferred, cosine, MSE, PSNR, MSE_01, PSNR_01, SSIM``.
    recon, truth : dict
        ``(scenario, round) -> (n, C, H, W)`` normalised images, victims in order.
    meta : dict
        Configs, σ of the private run, dataset label, spec.
    """

    metrics: pd.DataFrame
    recon: dict
    truth: dict
    meta: dict

    @property
    def success_psnr(self) -> float:
        """The dataset's success threshold (:data:`SUCCESS_PSNR`)."""
        return SUCCESS_PSNR[self.meta["configs"]["True"]["dataset"]]

    def summary(self) -> pd.DataFrame:
        """Mean metrics per scenario and round, plus the share of images above
        :attr:`success_psnr` dB ([0, 1] pixels)."""
        m = self.metrics.assign(success=self.metrics["PSNR_01"] >= self.success_psnr)
        cols = ["MSE", "PSNR", "MSE_01", "PSNR_01", "SSIM", "success"]
        return m.groupby(["scenario", "round"], sort=False)[cols].mean().reset_index()


def scenario_name(algorithm: str, private: bool, channel: str) -> str:
    """ND-CG, DPDL-MM, … for DPDL; e.g. "DP-DPSGD-gradient" / "ND-gradient" otherwise."""
    return f"{display_name(algorithm) if private else 'ND'}-{channel}"


def _cell_key(config: ExperimentConfig, spec: AttackSpec) -> str:
    payload = json.dumps({"config": config.to_dict(), "spec": spec.to_dict()}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _slot(store: ResultStore, key: str) -> ObjectSlot:
    """The attack cell ``key``'s slot: ``attacks/<key>.pt``, each training's interceptions kept
    as its stages ``nd`` (no defence) and ``dp`` (private) until the cell is stored."""
    return ObjectSlot(store, key, "attacks", STAGES)


def attack_cell(
    config: ExperimentConfig,
    spec: AttackSpec,
    store: ResultStore | None = None,
    progress: bool | None = False,
    force: bool = False,
) -> AttackResult:
    """Attack every channel of ``config``'s algorithm with and without its noise.

    ``config`` is the private run (its ε); the no-defence run is the same config with
    ``epsilon=None`` and σ fixed at 0. The cell is a slot of ``store``
    (:class:`~dpdl_core.runs.slots.ObjectSlot`, the protocol training runs and study jobs
    follow too): its result is stored checksummed in ``<store>/attacks/<key>.pt`` and loaded
    when present and intact (a damaged file is moved aside with a ``CorruptResultWarning`` and
    the cell computed again), so an interrupted sweep of cells resumes at the first missing
    cell. The cell is computed under its lease: a second process asking for it waits, then
    loads what the first stored. While a cell runs, each finished training's interceptions are
    kept beside it (``<key>.nd.pt``, ``<key>.dp.pt``), so an interrupted cell resumes after its
    last finished training. ``progress`` shows the trainings' rounds and the inversion's
    iterations (:class:`~dpdl_core.sim.progress.Progress`; ``None`` leaves it to ``$DPDL_PROGRESS``).
    """
    if config.epsilon is None:
        raise ValueError("attack_cell needs the private config (epsilon set); the no-defence run is derived from it")
    slot = _slot(store or ResultStore(), _cell_key(config, spec))
    if not force and (saved := slot.stored()) is not None:
        return AttackResult(**saved)
    with slot.held(force) as saved:
        if saved is not None:  # stored by the process whose lease this one waited for
            return AttackResult(**saved)
        if force:
            slot.tidy()
        return _compute_cell(config, spec, slot, progress)


def _compute_cell(config: ExperimentConfig, spec: AttackSpec, slot: ObjectSlot, progress: bool | None) -> AttackResult:
    """Compute the cell of ``slot`` (its lease held) and finish the slot with the result."""
    spec_data = DATASETS[config.dataset]
    # No defence: the same run without the Gaussian mechanism, whatever the σ rule.
    runs = {False: config.replace(epsilon=None, sigma_rule="fixed", sigma=0.0), True: config}
    jobs: list[tuple[bool, Interception]] = []
    meta = {"spec": spec.to_dict(), "configs": {}, "sigma": {}, "train_sigma": {}, "train_epsilon_rdp": {}}
    for private, cfg in runs.items():
        found, info = _intercepted(cfg, spec, slot, "dp" if private else "nd", progress)
        jobs += [(private, it) for it in found]
        meta["configs"][str(private)] = cfg.to_dict()
        meta["sigma"][str(private)] = info["sigma"]
        meta["train_sigma"][str(private)] = info["train_sigma"]
        meta["train_epsilon_rdp"][str(private)] = info.get("train_epsilon_rdp")  # absent in older stage files
        meta["dataset_label"], meta["victims"] = info["dataset_label"], info["victims"]
        meta["dataset"] = info.get("dataset")  # absent in older stage files

    module = build_model(config.model, config.dataset, seed=0)
    models = torch.stack([it.model for _, it in jobs])
    messages = torch.stack([it.message for _, it in jobs])
    truth_labels = torch.stack([it.labels for _, it in jobs])
    if spec.labels == "idlg":
        labels = infer_labels(messages, module, ParamLayout.from_module(module)).unsqueeze(1)
    else:
        labels = truth_labels
    image_shape = tuple(jobs[0][1].images.shape[1:])
    result = invert(
        module,
        models,
        messages,
        labels,
        image_shape,
        pixel_box(spec_data.mean, spec_data.std),
        spec.inversion,
        progress=progress,
    )

    rows, recon, truth = [], {}, {}
    for k, (private, it) in enumerate(jobs):
        name = scenario_name(config.algorithm, private, it.channel)
        met = reconstruction_metrics(result.images[k], it.images, spec_data)
        for b in range(len(met)):
            rows.append(
                {
                    "scenario": name,
                    "private": private,
                    "channel": it.channel,
                    "round": it.round,
                    "victim": it.victim,
                    "image": b,
                    "label": int(it.labels[b]),
                    "label_inferred": int(labels[k, b]),
                    "cosine": float(result.cosine[k]),
                    **met.iloc[b].to_dict(),
                }
            )
        key = (name, it.round)
        recon.setdefault(key, []).append(result.images[k])
        truth.setdefault(key, []).append(it.images)
    out = AttackResult(
        metrics=pd.DataFrame(rows),
        recon={k: torch.cat(v) for k, v in recon.items()},
        truth={k: torch.cat(v) for k, v in truth.items()},
        meta=meta,
    )
    slot.finish(vars(out))  # stored checksummed; the stages are removed
    return out


def _intercepted(config: ExperimentConfig, spec: AttackSpec, slot: ObjectSlot, stage: str,
                 progress: bool | None = False) -> tuple[list[Interception], dict]:
    """:func:`intercept`, kept as the slot's ``stage`` until the cell is done: training to the
    last attacked round is most of a cell's time (hours at the paper's scale), so a cell
    stopped during the other scenario's training or the inversion resumes after this one."""
    kept = slot.resume(stage)
    if kept is not None:
        who = "no defence" if config.epsilon is None else "private"
        note(f"attack training ({who}) finished before: loaded from {slot.stage_path(stage)}", progress)
        taps, meta = kept
        return [Interception(**tap) for tap in taps], meta
    out = intercept(config, spec, progress)
    # Plain dicts, not the dataclass: a stage pickled by class would not load once the
    # module moved, and it holds hours of training.
    slot.checkpoint(([vars(tap) for tap in out[0]], out[1]), stage)
    return out
