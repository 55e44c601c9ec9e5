"""Tutorial 4: training with zyntax kernels from PyTorch.

A two-layer classifier whose matrix products and layer norm run as zyntax
kernels (zyntax.torch: each op's forward and backward is a ZynML kernel of
the op library), trained with PyTorch's own AdamW and loss. The same model
in plain PyTorch, from the same weights, is the reference: the two losses
agree step by step, and both fall.

    /usr/bin/python3 docs/tutorials/04_training.py
"""
import torch

import zyntax.torch as zt

torch.manual_seed(0)
DEVICE = "auto"  # a GPU where there is one, else the CPU

# Synthetic data: four classes, each a blob around its own center.
centers = torch.randn(4, 16) * 0.6
labels = torch.randint(0, 4, (512,))
inputs = centers[labels] + torch.randn(512, 16)


def make_weights():
    g = torch.Generator().manual_seed(1)
    return {
        "w1": (torch.randn(16, 32, generator=g) / 4).requires_grad_(),
        "gamma": torch.ones(32).requires_grad_(),
        "beta": torch.zeros(32).requires_grad_(),
        "w2": (torch.randn(32, 4, generator=g) / 6).requires_grad_(),
    }


def forward_zyntax(p, x):
    h = zt.matmul(x, p["w1"], device=DEVICE)                      # a zyntax kernel
    h = zt.layer_norm(h, p["gamma"], p["beta"], device=DEVICE)    # another
    return zt.matmul(torch.relu(h), p["w2"], device=DEVICE)        # torch's relu between them


def forward_torch(p, x):
    h = torch.nn.functional.layer_norm(x @ p["w1"], (32,), p["gamma"], p["beta"], 1e-5)
    return torch.relu(h) @ p["w2"]


def train(forward, steps=60):
    p = make_weights()
    opt = torch.optim.AdamW(p.values(), lr=0.02)
    losses = []
    for step in range(steps):
        batch = torch.arange(64) + (step * 64) % 512
        loss = torch.nn.functional.cross_entropy(forward(p, inputs[batch]), labels[batch])
        opt.zero_grad()
        loss.backward()        # through zyntax's backward kernels
        opt.step()
        losses.append(loss.item())
    accuracy = (forward(p, inputs).argmax(1) == labels).float().mean().item()
    return losses, accuracy


zy_losses, zy_accuracy = train(forward_zyntax)
torch_losses, torch_accuracy = train(forward_torch)
for step in (0, 20, 40, 59):
    print("step %2d  loss %.4f (zyntax)  %.4f (torch)" % (step, zy_losses[step], torch_losses[step]))
print("accuracy %.3f (zyntax)  %.3f (torch)" % (zy_accuracy, torch_accuracy))

assert sum(zy_losses[-10:]) / 10 < 0.5 * zy_losses[0], "the loss did not fall"
assert max(abs(a - b) for a, b in zip(zy_losses, torch_losses)) < 1e-3, "zyntax and torch disagree"
assert zy_accuracy > 0.8
print("trained: zyntax kernels and PyTorch agree")
