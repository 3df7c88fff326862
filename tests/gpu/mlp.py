"""PyTorch workload for the HRR end-to-end test: a few MLP training steps.

Fixed seed, deterministic algorithms; prints the final loss and a checksum of
every parameter (bit-exact hash and float64 sum) on stdout, so a captured run
can be compared with a plain one. Timing goes to stderr.

    python3 mlp.py [--steps N] [--list-kernels]

--list-kernels runs the steps under torch.profiler and prints the CUDA kernel
names it saw to stderr (for choosing what `hrr-playback --info` must show).
Run it also with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the VMM
path of the caching allocator).
"""
import os

# Must be set before cuBLAS is initialised.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from params_digest import digest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--list-kernels", action="store_true")
    # Read the loss back every N steps (a training loop that logs): the capture of a run
    # killed mid-training then holds results to check.
    ap.add_argument("--log-every", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(1234)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # warn_only: an op with no deterministic implementation warns on stderr
    # instead of raising; the e2e script checks determinism by comparing runs.
    torch.use_deterministic_algorithms(True, warn_only=True)

    dev = torch.device("cuda")
    # Model and data are made on the CPU with a fixed generator, then uploaded
    # (so the archive holds real host-to-device copies).
    model = nn.Sequential(
        nn.Linear(256, 512),
        nn.GELU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 10),
    )
    g = torch.Generator().manual_seed(42)
    x = torch.randn(128, 256, generator=g)
    y = torch.randint(0, 10, (128,), generator=g)
    model = model.to(dev)
    x = x.to(dev)
    y = y.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def run_steps():
        loss = None
        for step in range(args.steps):
            opt.zero_grad(set_to_none=True)
            out = model(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            if args.log_every and step % args.log_every == 0:
                print(f"[mlp] step {step} loss {loss.item():.6f}", file=sys.stderr, flush=True)
        return loss

    t0 = time.perf_counter()
    if args.list_kernels:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            loss = run_steps()
            torch.cuda.synchronize()
        names = sorted({e.name for e in prof.events() if str(e.device_type).endswith("CUDA")})
        for n in names:
            print("[mlp] kernel: " + n, file=sys.stderr)
    else:
        loss = run_steps()
    loss_val = loss.item()  # device-to-host copy, synchronises
    t1 = time.perf_counter()

    total, sha = digest(model)
    print(f"[mlp] {args.steps} steps in {t1 - t0:.6f} s", file=sys.stderr)
    print(f"mlp steps={args.steps} loss={loss_val!r} loss_hex={float(loss_val).hex()}")
    print(f"mlp params sum={total!r} sha256={sha}")


if __name__ == "__main__":
    main()
