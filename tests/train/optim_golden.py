#!/usr/bin/python3
"""Writes tests/train/optim_golden.h: PyTorch reference values for test_optim.c.

Run with Debian's interpreter (python3-torch, CPU), not a pyenv one:
    /usr/bin/python3 tests/train/optim_golden.py > tests/train/optim_golden.h

Contents
  - optimizer cases: N parameters, STEPS steps with fixed gradients (p.grad is
    set to G[t] before each step), the parameters after every step; the
    single-tensor code path (foreach=False), which test_optim.c mirrors;
  - schedule cases: the learning rate PyTorch's lr_scheduler gives for each
    0-based step (OneCycleLR, CosineAnnealingLR, LinearLR warm-up followed by
    CosineAnnealingLR via SequentialLR) or each epoch (MultiStepLR).
Floats are printed with 9 significant digits (exact for float32), learning
rates (Python doubles) with 17.
"""
import sys
import warnings

import torch

N, STEPS = 20, 5  # 20: ATen's AVX2 loop (16 floats) and its scalar tail

# name, torch constructor, C spec (kind, lr, momentum, nesterov, beta1, beta2, eps, alpha, wd)
OPTIM_CASES = [
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.1, foreach=False),
     ("AMD_OPT_SGD", 0.1, 0.0, 0, 0.9, 0.999, 1e-8, 0.99, 0.0)),
    ("sgd_momentum", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, foreach=False),
     ("AMD_OPT_SGD", 0.05, 0.9, 0, 0.9, 0.999, 1e-8, 0.99, 0.0)),
    ("sgd_momentum_wd", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=0.01, foreach=False),
     ("AMD_OPT_SGD", 0.05, 0.8, 0, 0.9, 0.999, 1e-8, 0.99, 0.01)),
    ("sgd_nesterov_wd", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                                                  foreach=False),
     ("AMD_OPT_SGD", 0.05, 0.9, 1, 0.9, 0.999, 1e-8, 0.99, 5e-4)),
    ("adam", lambda p: torch.optim.Adam(p, lr=0.01, foreach=False),
     ("AMD_OPT_ADAM", 0.01, 0.0, 0, 0.9, 0.999, 1e-8, 0.99, 0.0)),
    ("adam_wd", lambda p: torch.optim.Adam(p, lr=0.003, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1,
                                           foreach=False),
     ("AMD_OPT_ADAM", 0.003, 0.0, 0, 0.8, 0.99, 1e-6, 0.99, 0.1)),
    ("adamw", lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, foreach=False),
     ("AMD_OPT_ADAMW", 0.01, 0.0, 0, 0.9, 0.999, 1e-8, 0.99, 0.1)),
    ("rmsprop", lambda p: torch.optim.RMSprop(p, lr=0.01, foreach=False),
     ("AMD_OPT_RMSPROP", 0.01, 0.0, 0, 0.9, 0.999, 1e-8, 0.99, 0.0)),
    ("rmsprop_momentum_wd", lambda p: torch.optim.RMSprop(p, lr=0.001, alpha=0.9, eps=1e-6, momentum=0.9,
                                                          weight_decay=0.01, foreach=False),
     ("AMD_OPT_RMSPROP", 0.001, 0.9, 0, 0.9, 0.999, 1e-6, 0.9, 0.01)),
]


def f32(x):
    s = "%.9g" % x
    if not any(c in s for c in ".e"):
        s += ".0"
    return s + "f"


def f64(x):
    return "%.17g" % x


def run_optim(make):
    torch.manual_seed(0)
    p0 = torch.randn(N) * 2
    grads = torch.randn(STEPS, N)
    grads[:, 0] = 0.0  # a parameter with zero gradient (Adam's eps path)
    grads[2, 1] *= 1e-3
    p = torch.nn.Parameter(p0.clone())
    opt = make([p])
    after = []
    for t in range(STEPS):
        p.grad = grads[t].clone()
        opt.step()
        after.append(p.detach().clone())
    return p0, grads, torch.stack(after)


def lrs_of(sched_factory, n, base_lr):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base_lr, momentum=0.9)
    sched = sched_factory(opt)
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


# name, C spec string, base lr, warmup epochs, steps per epoch, total steps, per-epoch values?, factory
SCHED_CASES = [
    ("onecycle", "onecycle", 0.1, 0, 10, 100, 0,
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=100)),
    ("onecycle_pct", "onecycle:0.25", 0.05, 0, 7, 37, 0,
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=37, pct_start=0.25)),
    ("onecycle_short", "onecycle", 0.02, 0, 3, 3, 0,
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.02, total_steps=3)),
    ("cosine", "cosine:0.001", 0.1, 0, 5, 50, 0,
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=50, eta_min=0.001)),
    ("cosine_zero", "cosine", 0.01, 0, 4, 23, 0,
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=23, eta_min=0.0)),
    # 2 warm-up epochs of 4 steps, then cosine over the remaining 32 - 8 steps
    ("cosine_warmup", "cosine:0.0001", 0.1, 2, 4, 32, 0,
     lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
         torch.optim.lr_scheduler.LinearLR(o, start_factor=1 / 8, end_factor=1.0, total_iters=7),
         torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=24, eta_min=0.0001)], milestones=[8])),
    ("step", "step:3,7", 0.1, 0, 4, 40, 1,
     lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[3, 7], gamma=0.1)),
    ("step_gamma", "step:1,2,5:0.5", 0.2, 0, 3, 24, 1,
     lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[1, 2, 5], gamma=0.5)),
]


def main():
    # SequentialLR steps CosineAnnealingLR with an explicit epoch at the milestone
    warnings.filterwarnings("ignore", message="The epoch parameter")
    w = sys.stdout.write
    w("/* Generated by tests/train/optim_golden.py (/usr/bin/python3, torch %s, CPU):\n" % torch.__version__)
    w(" *   /usr/bin/python3 tests/train/optim_golden.py > tests/train/optim_golden.h\n")
    w(" * PyTorch reference values for test_optim.c. Do not edit by hand. */\n")
    w("#ifndef OPTIM_GOLDEN_H\n#define OPTIM_GOLDEN_H\n\n")
    w("#define GOLDEN_N %d\n#define GOLDEN_STEPS %d\n\n" % (N, STEPS))
    w("typedef struct golden_optim {\n  const char *name;\n  amd_opt_kind kind;\n  double lr, momentum;\n"
      "  int nesterov;\n  double beta1, beta2, eps, alpha, weight_decay;\n  float p0[GOLDEN_N];\n"
      "  float g[GOLDEN_STEPS][GOLDEN_N];\n  float p[GOLDEN_STEPS][GOLDEN_N]; /* after each step */\n"
      "} golden_optim;\n\n")
    w("static const golden_optim golden_optims[] = {\n")
    for name, make, spec in OPTIM_CASES:
        p0, g, after = run_optim(make)
        kind, lr, mom, nest, b1, b2, eps, alpha, wd = spec
        w('  {"%s", %s, %s, %s, %d, %s, %s, %s, %s, %s,\n' %
          (name, kind, f64(lr), f64(mom), nest, f64(b1), f64(b2), f64(eps), f64(alpha), f64(wd)))
        w("   {%s},\n" % ", ".join(f32(x) for x in p0.tolist()))
        w("   {%s},\n" % ", ".join("{%s}" % ", ".join(f32(x) for x in r) for r in g.tolist()))
        w("   {%s}},\n" % ", ".join("{%s}" % ", ".join(f32(x) for x in r) for r in after.tolist()))
    w("};\n\n")

    w("typedef struct golden_sched {\n  const char *name, *spec;\n  double base_lr;\n  int64_t warmup_epochs,"
      " steps_per_epoch, total_steps;\n  int per_epoch; /* lr[] has one value per epoch (MultiStepLR) */\n"
      "  int n;\n  double lr[128];\n} golden_sched;\n\n")
    w("static const golden_sched golden_scheds[] = {\n")
    for name, spec, lr, wu, spe, total, per_epoch, factory in SCHED_CASES:
        n = (total + spe - 1) // spe if per_epoch else total
        assert n <= 128
        vals = lrs_of(factory, n, lr)
        w('  {"%s", "%s", %s, %d, %d, %d, %d, %d,\n   {%s}},\n' %
          (name, spec, f64(lr), wu, spe, total, per_epoch, n, ", ".join(f64(v) for v in vals)))
    w("};\n\n#endif\n")


if __name__ == "__main__":
    main()
