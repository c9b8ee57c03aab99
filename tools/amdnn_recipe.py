"""What tools/train_torch_mnist.py and tools/train_torch_cifar.py share to
follow `amdnn-onnx train`: its splitmix64 streams and per-epoch shuffle
(src/data/dataset.c, src/train/run.c), and the test pass of its metrics
(the mean cross-entropy summed in double, the first maximal logit).
Needs numpy and torch only."""
import numpy as np
import torch
import torch.nn.functional as F

M64 = (1 << 64) - 1
GAMMA = 0x9e3779b97f4a7c15  # splitmix64's increment (src/data/dataset.c amd_rng_next)
EPOCH_MIX = 0xbf58476d1ce4e5b9  # the epoch's term of the shuffle seed (src/train/run.c)


def splitmix_scalar(z):
    """splitmix64's output of one counter value (a Python int)."""
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def splitmix_array(z):
    """The same for a uint64 array (wrapping products)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return z ^ (z >> np.uint64(31))


class Stream:
    """One splitmix64 stream: each draw adds GAMMA to the state and mixes it;
    below(n) rejects the top partial block (amd_rng_next, amd_rng_below)."""

    def __init__(self, state):
        self.state = state & M64

    def next(self):
        self.state = (self.state + GAMMA) & M64
        return splitmix_scalar(self.state)

    def below(self, n):
        top = M64 - M64 % n
        while True:
            r = self.next()
            if r < top:
                return r % n

    def block(self, k):
        """The next k draws at once (uint64 [k]); the state moves past them."""
        with np.errstate(over="ignore"):
            counters = np.uint64(self.state) + np.arange(1, k + 1, dtype=np.uint64) * np.uint64(GAMMA)
        self.state = (self.state + k * GAMMA) & M64
        return splitmix_array(counters)


def rejected(draws, n):
    """Whether any of these draws would be rejected by below(n) (n array or int)."""
    n = np.asarray(n, dtype=np.uint64)
    return bool(np.any(draws >= np.uint64(M64) - np.uint64(M64) % n))


def shuffled(n, seed, epoch):
    """amdnn-onnx's order of the training samples in epoch (from 0)."""
    s = Stream(((seed * GAMMA) & M64) ^ (((epoch + 1) * EPOCH_MIX) & M64))
    order = list(range(n))
    if n < 2:
        return np.array(order, dtype=np.int64)
    start = s.state
    moduli = np.arange(n, 1, -1, dtype=np.uint64)  # i + 1 for i = n - 1 down to 1
    draws = s.block(n - 1)
    if rejected(draws, moduli):  # about once in 2^45 epochs: draw one by one
        s.state = start
        picks = [s.below(i + 1) for i in range(n - 1, 0, -1)]
    else:
        picks = (draws % moduli).tolist()
    for i, j in zip(range(n - 1, 0, -1), picks):
        order[i], order[j] = order[j], order[i]
    return np.array(order, dtype=np.int64)


def evaluate(model, x, y, batch):
    """(mean test loss, top-1) over x in batches, in eval mode (BatchNorm's running statistics)."""
    model.eval()
    loss = torch.zeros((), dtype=torch.float64, device=x.device)
    top1 = torch.zeros((), dtype=torch.int64, device=x.device)
    with torch.no_grad():
        for s in range(0, len(y), batch):
            z = model(x[s:s + batch])
            loss += F.cross_entropy(z.double(), y[s:s + batch], reduction="sum")
            top1 += (z.argmax(1) == y[s:s + batch]).sum()
    model.train()
    return loss.item() / len(y), top1.item() / len(y)
