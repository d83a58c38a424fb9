"""mps_ops.audit: a model's aten ops with MPS device semantics, on this machine,
and what each torch release's MPS backend (and mps_ops) does with them.

The suite's conftest turns every override on, so the running release's
override ops show as on here.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import mps_ops
from mps_ops.audit import AuditError, coverage
from mps_ops.audit.__main__ import main as audit_main
from mps_ops.audit.examples import EXAMPLES

RUNNING = coverage.release_of(None)


def _ops(report) -> dict:
    return {use.op: use for use in report.ops}


def _assert_answers_follow_the_data(report):
    for use in report.ops:
        letter = coverage.status(use.op.split("::", 1)[-1], report.release)
        assert use.mps == coverage.STATUS_WORDS[letter], use


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_builtin_examples_forward_and_backward(name):
    model, inputs, kwargs = EXAMPLES[name]()
    report = mps_ops.audit(model, *inputs, backward=True, **kwargs)
    assert report.release == RUNNING and report.traced_on == "fake mps"
    assert sum(u.forward for u in report.ops) > 0 and sum(u.backward for u in report.ops) > 0
    _assert_answers_follow_the_data(report)
    expected = {
        "transformer": {"aten::native_layer_norm", "aten::native_layer_norm_backward",
                        "aten::_softmax_backward_data", "aten::linear"},
        "cnn": {"aten::convolution", "aten::native_batch_norm", "aten::native_batch_norm_backward",
                "aten::max_pool2d", "aten::max_pool2d_with_indices_backward", "aten::_log_softmax"},
        "lstm": {"aten::linear", "aten::sigmoid_", "aten::tanh_backward"},
    }[name]
    assert expected <= set(_ops(report)), sorted(_ops(report))
    # The module is left as it was: real CPU parameters, no gradients.
    assert all(p.device.type == "cpu" and p.grad is None and not isinstance(p, torch._subclasses.FakeTensor)
               for p in model.parameters())


def test_transformer_padding_mask_in_eval_needs_mps_ops_fill():
    """Eval mode without gradients: the encoder checks the mask's alignment
    with _nested_tensor_from_mask_left_aligned, which no release has on MPS,
    before it looks at the device; mps_ops fills it. Attention takes the MPS
    math kernel."""
    model, inputs, kwargs = EXAMPLES["transformer"]()
    model.eval()
    with torch.no_grad():
        report = mps_ops.audit(model, *inputs, **kwargs)
    uses = _ops(report)
    check = uses["aten::_nested_tensor_from_mask_left_aligned"]
    assert (check.mps, check.mps_ops, check.mps_ops_active, check.stand_in) == ("missing", "fill", True, True)
    assert "aten::_scaled_dot_product_attention_math_for_mps" in uses
    assert report.verdict.startswith(f"runs on MPS with torch {RUNNING[:4]} + mps_ops (1 op filled)")


@pytest.mark.parametrize("release", coverage.releases())
@pytest.mark.parametrize("training", [True, False])
def test_transformer_with_a_padding_mask_runs_on_every_release(release, training):
    """Issue 15's bar: nn.TransformerEncoder with a padding mask, train (with
    backward) and eval, dispatches no op a supported release lacks on MPS that
    mps_ops does not fill."""
    model, inputs, kwargs = EXAMPLES["transformer"]()
    model.train(training)
    with torch.set_grad_enabled(training):
        report = mps_ops.audit(model, *inputs, backward=training, torch_version=release, **kwargs)
    assert not report.failing, report.table()


def test_an_op_missing_in_one_release_and_present_in_the_next():
    """vdot: missing on MPS up to 2.10, on MPSGraph from 2.11. The example
    must be an op mps_ops does not fill (cholesky_inverse was, until mps_ops
    filled it); if vdot gets filled, pick another from ../shared/mps-coverage.md."""
    def dot(a, b):
        return torch.vdot(a, b)

    x = torch.ones(3)
    before = mps_ops.audit(dot, x, x, torch_version="2.10")
    after = mps_ops.audit(dot, x, x, torch_version="2.11.0")
    assert _ops(before)["aten::vdot"].mps == "missing"
    assert [u.op for u in before.failing] == ["aten::vdot"]
    assert before.verdict.startswith("does not run on MPS with torch 2.10")
    assert _ops(after)["aten::vdot"].mps == "mpsgraph" and not after.failing
    assert after.verdict.startswith("runs on MPS with torch 2.11")
    assert (before.release, after.release) == ("2.10.0", "2.11.0")


def test_an_op_mps_ops_fills():
    report = mps_ops.audit(lambda x: torch.special.ndtri(x) * 2, torch.rand(5))
    use = _ops(report)["aten::special_ndtri"]
    assert (use.mps, use.mps_ops, use.mps_ops_active) == ("missing", "fill", True)
    assert not report.failing and report.filled == [use]
    assert "(1 op filled)" in report.verdict
    older = _ops(mps_ops.audit(torch.special.ndtri, torch.rand(5), torch_version="2.9"))["aten::special_ndtri"]
    assert older.mps_ops == "fill" and older.mps_ops_active is None, "another release: no process state"


class SoftmaxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x):
        return torch.softmax(self.proj(x), dim=-1)


def test_an_op_on_mpsgraph_with_an_override():
    x = torch.randn(3, 8)
    report = mps_ops.audit(SoftmaxHead(), x, backward=True, torch_version="2.14")
    uses = _ops(report)
    for op in ("aten::_softmax", "aten::_softmax_backward_data"):
        assert (uses[op].mps, uses[op].mps_ops) == ("mpsgraph", "override"), uses[op]
    assert "overrides available for 2" in report.verdict
    # 2.15 ships a Metal softmax forward: no override there; the backward is still MPSGraph.
    newest = _ops(mps_ops.audit(SoftmaxHead(), x, backward=True, torch_version="2.15"))
    assert (newest["aten::_softmax"].mps, newest["aten::_softmax"].mps_ops) == ("metal", None)
    assert newest["aten::_softmax_backward_data"].mps_ops == "override"
    # The running release: whether the override is on in this process.
    running = _ops(mps_ops.audit(SoftmaxHead(), x, backward=True))["aten::_softmax_backward_data"]
    active = any(o == "_softmax_backward_data" for o in mps_ops._registry.active_overloads())
    assert running.mps_ops_active == active
    assert running.outcome == ("mps_ops's Metal kernel (override on)" if active else
                               "MPSGraph; mps_ops's Metal kernel once enable_overrides()")


def test_outputs_table_markdown_and_json():
    report = mps_ops.audit(SoftmaxHead(), torch.randn(2, 8), backward=True)
    table = report.table()
    assert table.splitlines()[-1] == report.verdict and "aten::_softmax" in table and str(report) == table
    markdown = report.markdown().splitlines()
    assert markdown[2] == "| op | calls | fwd | bwd | mps | mps_ops | on a Mac |"
    assert markdown[-1] == f"Verdict: {report.verdict}"
    data = json.loads(report.json())
    assert set(data) == {"schema", "torch_release", "running_torch", "traced_on", "backward", "verdict", "counts",
                         "ops"}
    assert data["ops"][0].keys() == {"op", "calls", "forward", "backward", "mps", "outcome", "mps_ops",
                                     "mps_ops_active", "stand_in"}
    assert sum(data["counts"].values()) == len(data["ops"])
    assert sum(op["calls"] for op in data["ops"]) == sum(op["forward"] + op["backward"] for op in data["ops"])


def test_command_line_runs_the_examples(capsys):
    assert audit_main(["cnn", "--json", "--torch", "2.12"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["cnn"] and out["cnn"]["torch_release"] == "2.12.1" and out["cnn"]["backward"]
    assert audit_main(["lstm", "--markdown", "--eval"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("### lstm:") and "Verdict: " in text and "forward)" in text


def test_bad_requests_say_what_is_wrong():
    with pytest.raises(ValueError, match=r"no MPS data for torch 2\.8; the data covers 2\.9\.1"):
        mps_ops.audit(torch.relu, torch.rand(2), torch_version="2.8")
    if torch.backends.mps.is_available():  # a Mac: the real thing
        assert mps_ops.audit(torch.relu, torch.rand(2), on_device=True).traced_on == "mps"
    else:
        with pytest.raises(AuditError, match="needs a working MPS device"):
            mps_ops.audit(torch.relu, torch.rand(2), on_device=True)

    def data_dependent(x):
        return x[x > 0]   # nonzero: the size depends on the data

    with pytest.raises(AuditError, match=r"aten::index\.Tensor cannot run on fake tensors \(DynamicOutputShape"):
        mps_ops.audit(data_dependent, torch.rand(4))


def test_readme_shows_the_transformer_audit_and_its_verdict():
    """The README's second example runs as written and prints the verdict its comment shows."""
    import contextlib
    import io
    import os
    import re

    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert "mps_ops.audit(model" in blocks[1], "the audit is the README's second example"
    code = blocks[1]
    shown = " ".join(line.strip().lstrip("#").strip() for line in code.splitlines()
                     if line.startswith("# ")).split()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    assert printed.getvalue().splitlines()[-1].split() == shown
