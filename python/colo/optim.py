"""The update rules colo's servers run (package ps/update), as Python values.

A table or a DistributedOptimizer names the rule it expects; the servers
run one rule for every key (``colo run --rule``), and a declaration whose
rule differs from the cluster's raises ColoValueError.

Rules, per value, with learning rate lr:

* ``SGD(lr)``: w -= lr * g
* ``Momentum(lr, momentum)``: v = momentum * v + g; w -= lr * v (PyTorch's SGD with momentum)
* ``Adagrad(lr, eps=1e-10)``: n += g*g; w -= lr * g / (sqrt(n) + eps) (PyTorch's default eps)
* ``Adam(lr, betas=(0.9, 0.999), eps=1e-8)``: PyTorch's Adam, the step counted per value
* ``Sum()``: w += g, the servers as accumulators

Weight decay is not available: the servers hold each value's displacement
from its initial value, which weight decay would not move correctly.
"""


class Rule:
    """An update rule: name and parameters as ps/update.Config spells them."""

    name = "sum"

    def __init__(self, **params):
        self.params = params

    def config(self):
        """Return the rule as ps/update.Config's JSON fields."""
        c = {"name": self.name}
        c.update(self.params)
        return c

    def __repr__(self):
        args = ", ".join("%s=%r" % kv for kv in sorted(self.params.items()))
        return "%s(%s)" % (type(self).__name__, args)

    def __eq__(self, other):
        return isinstance(other, Rule) and self.config() == other.config()


class Sum(Rule):
    name = "sum"

    def __init__(self):
        super().__init__()


class SGD(Rule):
    name = "sgd"

    def __init__(self, lr):
        super().__init__(lr=float(lr))


class Momentum(Rule):
    name = "momentum"

    def __init__(self, lr, momentum=0.9):
        super().__init__(lr=float(lr), momentum=float(momentum))


class Adagrad(Rule):
    name = "adagrad"

    def __init__(self, lr, eps=1e-10):
        super().__init__(lr=float(lr), eps=float(eps))


class Adam(Rule):
    name = "adam"

    def __init__(self, lr, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(lr=float(lr), beta1=float(betas[0]), beta2=float(betas[1]), eps=float(eps))


def from_torch(optimizer):
    """Return the Rule of a torch.optim optimizer (SGD, Adagrad, Adam), or
    raise ValueError naming the setting colo's servers cannot run."""
    import torch

    groups = optimizer.param_groups
    if not groups:
        raise ValueError("optimizer has no parameter groups")
    g = groups[0]
    for i, other in enumerate(groups[1:], 1):
        for k, v in g.items():
            if k != "params" and other.get(k) != v:
                raise ValueError(
                    "optimizer: parameter group %d has %s=%r, group 0 %r: colo's servers run one rule "
                    "for every parameter" % (i, k, other.get(k), v)
                )
    name = type(optimizer).__name__
    if g.get("weight_decay", 0):
        raise ValueError(
            "optimizer %s: weight_decay=%r: colo's servers hold displacements from the initial "
            "values, so weight decay is not available (want 0)" % (name, g["weight_decay"])
        )
    if isinstance(optimizer, torch.optim.SGD):
        if g.get("nesterov") or g.get("dampening", 0):
            raise ValueError("optimizer SGD: nesterov and dampening are not available on colo's servers")
        if g.get("momentum", 0):
            return Momentum(g["lr"], g["momentum"])
        return SGD(g["lr"])
    if isinstance(optimizer, torch.optim.Adagrad):
        if g.get("lr_decay", 0) or g.get("initial_accumulator_value", 0):
            raise ValueError("optimizer Adagrad: lr_decay and initial_accumulator_value must be 0 on colo's servers")
        return Adagrad(g["lr"], g["eps"])
    if isinstance(optimizer, torch.optim.Adam):
        if g.get("amsgrad"):
            raise ValueError("optimizer Adam: amsgrad is not available on colo's servers")
        return Adam(g["lr"], g["betas"], g["eps"])
    raise ValueError("optimizer %s: colo's servers run SGD (with momentum), Adagrad and Adam" % name)


def as_rule(x):
    """Return x as a Rule: a Rule, a torch optimizer, or None."""
    if x is None or isinstance(x, Rule):
        return x
    try:
        import torch

        if isinstance(x, torch.optim.Optimizer):
            return from_torch(x)
    except ImportError:
        pass
    raise TypeError("optimizer: want a colo.optim rule (SGD, Adagrad, Adam, …) or a torch.optim optimizer, not %r" % (x,))
