"""Under torchrun on a GPU machine: join an NCCL process group and average a tensor and a gradient through
robo_rl's reducer (`robo_rl.distributed.ProcessGroupReducer`), as `robo-rl train --nproc N` does. Prints one JSON
line (rank 0). `python -m torch.distributed.run --standalone --nproc_per_node=1 bench/nccl_check.py`."""

from __future__ import annotations

import json
import os
import time

import torch
from torch import nn

from robo_rl.distributed import ProcessGroupReducer, World


def main() -> None:
    start = time.perf_counter()
    world = World(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(world.local_rank)
    torch.distributed.init_process_group("nccl")
    reducer = ProcessGroupReducer(world)
    value = reducer.mean(torch.full((), float(world.rank + 1), device="cuda"))
    layer = nn.Linear(4, 1).cuda()
    layer(torch.ones(2, 4, device="cuda")).sum().backward()
    reducer.gradients(layer.parameters())
    torch.cuda.synchronize()
    if world.rank == 0:
        report = {"backend": torch.distributed.get_backend(), "world_size": world.size, "mean": value.item()}
        report |= {"nccl": ".".join(map(str, torch.cuda.nccl.version())), "seconds": time.perf_counter() - start}
        print(json.dumps(report), flush=True)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
