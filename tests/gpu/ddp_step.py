"""A data-parallel training step on two GPUs (issue 19), for scripts/gpu-e2e.sh (workload `ddp`,
run with `torchrun --nproc_per_node 2`, replayed with `hrr-playback ROOT --all`): one process a
GPU, NCCL, a small MLP wrapped in DistributedDataParallel, each rank its own shard of a fixed
batch, three SGD steps (gradients all-reduced by NCCL), then an explicit all-reduce of the final
loss. Rank 0 prints the losses and a parameter checksum (rank 1 checks its parameters equal rank
0's); exit 0 when the ranks agree."""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).cuda()
    ddp = DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 256, generator=g)[rank * 32 : (rank + 1) * 32].cuda()
    y = torch.randint(0, 10, (64,), generator=g)[rank * 32 : (rank + 1) * 32].cuda()
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    total = losses[-1].clone()
    dist.all_reduce(total)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, 0)
    same = bool(torch.equal(flat, ref))
    ok = torch.tensor([int(same)], device="cuda")
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if rank == 0:
        shown = " ".join(f"{float(v):.6f}" for v in losses)
        print(f"ddp losses={shown} total={float(total):.6f} checksum={float(flat.double().sum()):.6f} same={bool(ok.item())}")
    dist.destroy_process_group()
    return 0 if ok.item() else 1


if __name__ == "__main__":
    sys.exit(main())
