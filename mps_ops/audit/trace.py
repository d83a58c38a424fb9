"""Record the aten ops a callable would dispatch on a Mac, on any machine.

The callable runs on fake tensors whose device is "mps" (FakeTensorMode: meta
kernels compute shapes, no data), with autograd on, so torch's Python and C++
take the branches they take on a Mac: ``x.device.type == "mps"``, the
TransformerEncoder fast-path checks, the composite ops that autograd
decomposes. A torch built without MPS (every Linux wheel) needs three
stand-ins for what a Mac's build has, installed once per process
(`install_stand_ins`; never in a build with MPS) and touching only tensors on
"mps", which such a build cannot otherwise make:

- a no-op MPS device guard (mps_ops._C), which every device guard on an "mps"
  tensor asks for;
- an MPS kernel for each composite op that a Mac's build also gives an MPS
  kernel of its own (`linear`, `max_pool2d`...; from the per-release data), so
  that autograd keeps them whole as on a Mac instead of decomposing them;
- scaled_dot_product_attention's choice of kernel for "mps", which a build
  without MPS cannot make (its DispatchStub has no MPS slot): the math kernel
  for MPS when no gradient is wanted and no dropout, else the composite math.

The backward is recorded by replaying the forward's recorded ops on fake CPU
tensors with autograd on (autograd's engine wants a real accelerator for
"mps") and calling backward on the outputs: the same backward formulas, but for
the composites a Mac keeps whole (linear's backward is recorded as its
parts; docs/audit.md lists what the trace cannot see).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

def _stand_in_left_aligned(args, kwargs):
    # Data-dependent (a bool from the mask's values): assume a left-aligned
    # padding mask, the usual one. On MPS both answers lead to the same ops
    # (the fast path then stops at the device check).
    return True


# Ops without a meta kernel that the built-in examples meet: what the fake
# run returns in their place. Any other such op raises AuditError.
STAND_INS = {
    "_nested_tensor_from_mask_left_aligned": _stand_in_left_aligned,
}


class AuditError(RuntimeError):
    """The callable could not be traced with MPS semantics."""


@dataclass
class Call:
    op: str  # "aten::add.Tensor"
    phase: str  # "forward" or "backward"
    stand_in: bool = False  # no meta kernel: its result was made up (STAND_INS)


@dataclass
class _Logged:
    func: object
    args: tuple
    kwargs: dict
    out: object
    grad_enabled: bool
    stand_in: bool


@dataclass
class Trace:
    calls: list = field(default_factory=list)
    device_seen: str = ""  # the device of the callable's first tensor output
    real_mps: bool = False  # ran on real mps tensors (a Mac)


def _short(func) -> str:
    return func.name().split("::", 1)[-1]


def _differentiable(t) -> bool:
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


class Recorder(TorchDispatchMode):
    """Sits above the fake mode: sees every op at the Python key, below
    autograd, as a Mac's MPS backend would receive it."""

    def __init__(self, trace: Trace, phase: str, log: list | None = None):
        super().__init__()
        self.trace, self.phase, self.log = trace, phase, log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        call = Call(func.name(), self.phase)
        if func.namespace == "aten":  # prim:: ops (device, layout queries) reach no kernel
            self.trace.calls.append(call)
        try:
            out = func(*args, **kwargs)
        except Exception as error:  # no meta kernel, or data-dependent
            stand_in = STAND_INS.get(_short(func))
            if stand_in is None:
                raise AuditError(f"{func.name()} cannot run on fake tensors ({type(error).__name__}: "
                                 f"{str(error).splitlines()[0] if str(error) else ''}); "
                                 f"ops recorded so far: {len(self.trace.calls)}") from error
            out = stand_in(args, kwargs)
            call.stand_in = True
        if self.log is not None:
            self.log.append(_Logged(func, args, kwargs, out, torch.is_grad_enabled(), call.stand_in))
        return out


_stand_in_lock = threading.Lock()
_stand_in_library = None
_stood_in: set = set()


def install_stand_ins(mps_kernel_over_composite) -> None:
    """What a build without MPS needs to trace "mps" tensors (module
    docstring), installed once per overload and never in a build with MPS (a
    Mac's torch has the real ones, which these must not displace).
    mps_kernel_over_composite: the overloads ("linear") a Mac's build gives
    an MPS kernel although they are composite."""
    global _stand_in_library
    if torch.backends.mps.is_built():
        return
    from .. import _C

    with _stand_in_lock:
        if not _C.stand_in_mps_device_guard():
            raise AuditError("no MPS device guard could be stood in")
        if _stand_in_library is None:
            _stand_in_library = torch.library.Library("aten", "IMPL")
            _stand_in_library.impl("scaled_dot_product_attention", _sdpa_as_on_a_mac, "AutogradMPS")
        for overload in mps_kernel_over_composite:
            if overload in _stood_in or torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{overload}", "MPS"):
                continue
            # Never called: the fake mode computes the result; a real "mps"
            # tensor cannot exist in a build without MPS.
            _stand_in_library.impl(overload, _never_called, "MPS")
            _stood_in.add(overload)


def _never_called(*args, **kwargs):
    raise NotImplementedError("mps_ops.audit's stand-in MPS kernel ran on a real tensor")


def _sdpa_as_on_a_mac(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                      enable_gqa=False):
    """What a Mac's scaled_dot_product_attention does with "mps" tensors: a
    boolean mask made additive, grouped key and value heads repeated, then
    the MPS math kernel where no gradient is wanted and no dropout, else the
    composite math."""
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.where(attn_mask.logical_not(), -float("inf"), 0.0).to(query.dtype)
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        repeats = query.size(-3) // key.size(-3)
        key, value = key.repeat_interleave(repeats, -3), value.repeat_interleave(repeats, -3)
    wants_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    if dropout_p == 0.0 and not wants_grad:
        return torch.ops.aten._scaled_dot_product_attention_math_for_mps(
            query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale)[0]
    return torch.ops.aten._scaled_dot_product_attention_math(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale)[0]


def _fake_like(t: torch.Tensor, device: str, requires_grad: bool) -> torch.Tensor:
    """Under a fake mode: an uninitialised fake tensor like `t` on `device`."""
    fake = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=device)
    return fake.requires_grad_(requires_grad and _differentiable(fake))


def _module_state(module):
    return dict(module.named_parameters(remove_duplicate=False)), dict(module.named_buffers(remove_duplicate=False))


def _call(fn, state, args, kwargs):
    if isinstance(fn, torch.nn.Module):
        # functional_call swaps the tensors in for the call and puts the
        # user's back: the module itself is left as it was.
        return torch.func.functional_call(fn, state, args, kwargs)
    return fn(*args, **kwargs)


def _tensor_outputs(out) -> list:
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def trace_on_fake_mps(fn, args, kwargs, backward: bool, mps_kernel_over_composite=()) -> Trace:
    install_stand_ins(mps_kernel_over_composite)
    trace = Trace()
    log: list = []
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    with fake_mode:
        params, buffers = _module_state(fn) if isinstance(fn, torch.nn.Module) else ({}, {})
        state = {name: _fake_like(p, "mps", p.requires_grad) for name, p in params.items()}
        state.update({name: _fake_like(b, "mps", False) for name, b in buffers.items()})
        fake_args, fake_kwargs = tree_map(
            lambda x: _fake_like(x, "mps", x.requires_grad) if isinstance(x, torch.Tensor) else x, (args, kwargs))
    with fake_mode, Recorder(trace, "forward", log=log if backward else None):
        out = _call(fn, state, fake_args, fake_kwargs)
    outputs = _tensor_outputs(out)
    trace.device_seen = str(outputs[0].device) if outputs else ""
    if backward:
        _replay_backward(trace, log, outputs)
    return trace


def _replay_backward(trace: Trace, log: list, outputs: list) -> None:
    """Run the recorded forward again on fake CPU tensors with autograd on,
    then backward from every output that requires grad (a gradient of ones,
    as .sum().backward() gives)."""
    replay_mode = FakeTensorMode(allow_non_fake_inputs=True)
    replayed: dict = {}

    def replay(x):
        if isinstance(x, torch.Tensor):
            if id(x) not in replayed:
                replayed[id(x)] = _fake_like(x, "cpu", x.requires_grad)
            return replayed[id(x)]
        if isinstance(x, torch.device) and x.type == "mps":
            return torch.device("cpu")
        return x

    with replay_mode:
        for entry in log:
            with torch.set_grad_enabled(entry.grad_enabled):
                args, kwargs = tree_map(replay, (entry.args, entry.kwargs))
                if entry.stand_in:  # its result is not differentiable here
                    out = tree_map(lambda t: _fake_like(t, "cpu", False) if isinstance(t, torch.Tensor) else t,
                                   entry.out)
                else:
                    out = entry.func(*args, **kwargs)
            for original, new in zip(tree_flatten(entry.out)[0], tree_flatten(out)[0]):
                if isinstance(original, torch.Tensor):
                    replayed[id(original)] = new
        roots = [replay(t) for t in outputs]
        roots = [r for r in roots if r.requires_grad]
        seeds = [torch.ones_like(r) for r in roots]
    if not roots:
        return
    with replay_mode, Recorder(trace, "backward"):
        torch.autograd.backward(roots, seeds)


def trace_on_real_mps(fn, args, kwargs, backward: bool) -> Trace:
    """On a Mac: the real thing (copies of the module's tensors on mps)."""
    trace = Trace(real_mps=True)
    to_mps = lambda x: x.detach().to("mps").requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x  # noqa: E731
    state = {}
    if isinstance(fn, torch.nn.Module):
        params, buffers = _module_state(fn)
        state = {name: to_mps(t) for name, t in {**params, **buffers}.items()}
    args, kwargs = tree_map(to_mps, (args, kwargs))
    with Recorder(trace, "forward"):
        out = _call(fn, state, args, kwargs)
    outputs = _tensor_outputs(out)
    trace.device_seen = str(outputs[0].device) if outputs else ""
    roots = [t for t in outputs if t.requires_grad]
    if backward and roots:
        seeds = [torch.ones_like(r) for r in roots]
        with Recorder(trace, "backward"):
            torch.autograd.backward(roots, seeds)
    return trace
