"""The checksum the PyTorch workloads print of their parameters: a SHA-256 of every
parameter's name and float32 bytes, and the float64 sum of all of them, so a captured run
can be compared with a plain one bit for bit."""
import hashlib


def digest(model):
    """(sum, sha256 hex) of `model`'s parameters, in `named_parameters` order."""
    h = hashlib.sha256()
    total = 0.0
    for name, p in model.named_parameters():
        cpu = p.detach().float().cpu().contiguous()
        h.update(name.encode())
        h.update(cpu.numpy().tobytes())
        total += cpu.double().sum().item()
    return total, h.hexdigest()
