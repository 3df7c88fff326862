"""A CUDA tensor shared between two PyTorch processes (torch.multiprocessing, spawn), for
scripts/gpu-e2e.sh (workload `torch_ipc`, replayed with `hrr-playback ROOT --all`): PyTorch
sends the tensor's memory and an interprocess event as CUDA IPC handles. The child checks the
first half is ones and writes twos over the second half; the parent sums. Prints one line;
exit 0 when both saw what they should."""

import sys

import torch
import torch.multiprocessing as mp


def child(q, done):
    t = q.get()
    ok = bool((t[: t.numel() // 2] == 1).all())
    t[t.numel() // 2 :] = 2
    torch.cuda.synchronize()
    done.put(ok)
    del t


def main():
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    t = torch.ones(1 << 20, device="cuda")
    p = ctx.Process(target=child, args=(q, done))
    p.start()
    q.put(t)
    ok = done.get()
    p.join()
    s = float(t.sum())
    print(f"torch_ipc child_ok={ok} sum={s}")
    return 0 if ok and p.exitcode == 0 and s == (1 << 19) * 3 else 1


if __name__ == "__main__":
    sys.exit(main())
