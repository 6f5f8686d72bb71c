"""`robo-rl train-classifier DEMOS.npz ...`: train a success classifier on labelled episodes (HIL-SERL's reward)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from robo_rl.api.bad_file import check_output
from robo_rl.cli.arguments import add_threads_argument
from robo_rl.cli.progress import terminal
from robo_rl.robot.classifier import ClassifierConfig, load_labelled_files, train_classifier

DEFAULTS = ClassifierConfig()

DESCRIPTION = f"""\
Train a binary success classifier, P(success | observation), on the frames of recorded episodes, and print its
accuracy, precision and recall on a stratified holdout ({DEFAULTS.holdout_fraction:g} of each class). On a robot it
stands in for a success function: its `success(obs)` can end episodes and give the reward.
Each DEMOS file is a .npz demo file (schema robo_rl.demos/1) with either a `labels` array (a label per frame) or a
`success` array (info["success"] per transition): then the last K frames of each successful episode are the
positives, and its earlier frames and every frame of a failed episode the negatives.
The envelope (--envelope) keeps the classifier from calling a frame successful unlike every positive it saw.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train-classifier",
        help="train a success classifier on labelled episodes",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("demos", type=Path, nargs="+", metavar="DEMOS", help="demo files (.npz) with success information")
    p.add_argument("-o", "--output", type=Path, default=Path("classifier.pt"), help="default: classifier.pt")
    p.add_argument(
        "--last-frames",
        type=int,
        default=DEFAULTS.last_frames,
        metavar="K",
        help=f"frames at the end of a successful episode labelled successful (default: {DEFAULTS.last_frames})",
    )
    p.add_argument("--epochs", type=int, default=DEFAULTS.epochs, help=f"default: {DEFAULTS.epochs}")
    p.add_argument(
        "--obs",
        action="append",
        metavar="NAME",
        help="an observation the classifier reads (repeatable; default: all of them)",
    )
    p.add_argument(
        "--envelope",
        type=float,
        default=DEFAULTS.envelope,
        metavar="STD",
        help="never call a frame successful outside the positives' range widened by STD standard deviations of the "
        f"frames, per observation (default: {DEFAULTS.envelope}); a policy trained on the classifier's reward finds "
        "the frames far from the training data that a network scores high",
    )
    p.add_argument("--no-envelope", action="store_true", help="no envelope: the network's score alone")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help="seed of split, weights and batches (default: 0)")
    add_threads_argument(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    cfg = _config(args)
    check_output(args.output, "--output")
    frames, labels, names = load_labelled_files(args.demos, cfg.last_frames)
    classifier, report = train_classifier(frames, labels, cfg, names)
    classifier.save(args.output)
    console = terminal()
    for line in report.lines():
        console.print(line, markup=False, highlight=False)
    console.print(f"wrote {args.output} ({len(args.demos)} demo files, {len(frames):,} frames)", markup=False)
    return 0


def _config(args: argparse.Namespace) -> ClassifierConfig:
    for flag, value in (("--last-frames", args.last_frames), ("--epochs", args.epochs)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    obs = tuple(args.obs) if args.obs else None
    envelope = None if args.no_envelope else args.envelope
    if envelope is not None and not envelope >= 0:
        raise ValueError(f"--envelope must be at least 0, got {args.envelope}")
    return replace(
        DEFAULTS, last_frames=args.last_frames, epochs=args.epochs, obs_names=obs, envelope=envelope, seed=args.seed
    )
