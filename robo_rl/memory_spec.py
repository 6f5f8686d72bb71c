"""A policy's memory (`MemorySpec`): the state it carries from one step to the next, as the artifact states it.

A policy with memory is a function `(obs, h_in) -> (action, h_out)`: the deploy side feeds each step's `h_out`
back as the next step's `h_in`, and sets every entry of the state to `reset_value` where `RESET_RULE` says. Two
kinds exist: `gru` (the hidden state of a GRU layer, `robo_rl.modules.recurrent`) and `history` (the last K
normalized observations and actions of a fixed window, oldest first). Both have the same contract, so the deploy
side (ROS node, firmware, evaluators) treats them alike. Standard library only, like `robo_rl.image_spec`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

MemoryKind = Literal["gru", "history"]
MEMORY_KINDS: tuple[str, ...] = ("gru", "history")
STATE_INPUT = "h_in"
STATE_OUTPUT = "h_out"
RESET_RULE = (
    "set every entry of h_in to reset_value before an episode's first step, when the policy is activated or takes "
    "over from another controller, and at the first step after a safe command or an intervention; otherwise feed "
    "each step's h_out back as the next step's h_in"
)
"""When the deploy side resets the state; an artifact stating any other rule is refused (its reader would not
know what to do)."""


@dataclass(frozen=True)
class MemorySpec:
    """The state a policy carries between steps.

    Attributes:
        kind: "gru" (a GRU's hidden state) or "history" (a window of past normalized observations and actions).
        size: entries of the state vector, the width of the graph's `h_in` input and `h_out` output.
        reset_value: the value of every entry after a reset.
        reset_rule: when to reset (`RESET_RULE`, the only rule written and read).
    """

    kind: MemoryKind
    size: int
    reset_value: float = 0.0
    reset_rule: str = RESET_RULE

    def __post_init__(self) -> None:
        if self.kind not in MEMORY_KINDS:
            raise ValueError(f"memory kind must be one of {', '.join(MEMORY_KINDS)}, got {self.kind!r}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"memory size must be an integer >= 1, got {self.size!r}")
        if not isinstance(self.reset_value, (int, float)) or not math.isfinite(self.reset_value):
            raise ValueError(f"memory reset_value must be a finite number, got {self.reset_value!r}")
        if self.reset_rule != RESET_RULE:
            raise ValueError(f"memory reset_rule {self.reset_rule[:60]!r}... is not the rule this robo_rl follows")

    @property
    def input(self) -> str:
        """Name of the graph input that takes the state."""
        return STATE_INPUT

    @property
    def output(self) -> str:
        """Name of the graph output that returns the next state."""
        return STATE_OUTPUT

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "size": self.size,
            "input": STATE_INPUT,
            "output": STATE_OUTPUT,
            "reset_value": float(self.reset_value),
            "reset_rule": self.reset_rule,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Any) -> MemorySpec:
        """The spec of `to_dict`'s output; ValueError naming what is wrong (unknown keys, other input names)."""
        if not isinstance(raw, dict):
            raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
        known = {"kind", "size", "input", "output", "reset_value", "reset_rule"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"unknown fields {unknown}")
        missing = sorted(known - set(raw))
        if missing:
            raise ValueError(f"missing fields {missing}")
        if raw["input"] != STATE_INPUT or raw["output"] != STATE_OUTPUT:
            raise ValueError(
                f"state input/output must be {STATE_INPUT!r}/{STATE_OUTPUT!r}, got {raw['input']!r}/{raw['output']!r}"
            )
        return cls(
            kind=raw["kind"], size=raw["size"], reset_value=float(raw["reset_value"]), reset_rule=raw["reset_rule"]
        )
