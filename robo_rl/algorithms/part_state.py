"""An algorithm's checkpoint as the state of its named parts (networks and optimizers): what FQL and PA-RL save."""

from __future__ import annotations

from typing import Any


def parts_state(owner: object, names: tuple[str, ...]) -> dict[str, Any]:
    """`{name: owner.name.state_dict()}` for each of `names`."""
    return {name: getattr(owner, name).state_dict() for name in names}


def load_parts_state(owner: object, state: dict[str, Any], names: tuple[str, ...]) -> None:
    """Each of `names` of `owner` loads its entry of `state` (KeyError naming a missing part)."""
    for name in names:
        getattr(owner, name).load_state_dict(state[name])
