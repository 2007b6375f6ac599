"""Comparing a compiled model with torch eager, within the dtype's tolerance."""
import torch

# The tolerance of each dtype, relative to the output's scale (its largest magnitude):
# f32 keeps about 7 digits, so after a model's reductions a few units of 1e-5 of the
# scale; bf16 keeps 8 bits (2^-8 = 0.0039), a few units of that after a model.
TOL = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def assert_close(got, want, what=""):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, "%s[%d]" % (what, i))
        return
    assert got.shape == want.shape, "%s: shape %s, torch's %s" % (what, tuple(got.shape), tuple(want.shape))
    assert got.dtype == want.dtype, "%s: dtype %s, torch's %s" % (what, got.dtype, want.dtype)
    if not want.dtype.is_floating_point:
        assert torch.equal(got, want), "%s: %s != %s" % (what, got, want)
        return
    g, w = got.double(), want.double()
    assert torch.isfinite(g).all() == torch.isfinite(w).all(), "%s: non-finite values differ" % what
    scale = max(w.abs().max().item(), 1e-6)
    err = (g - w).abs().max().item()
    tol = TOL[want.dtype] * scale
    assert err <= tol, "%s: max error %.3g > tolerance %.3g (scale %.3g, %s)" % (
        what, err, tol, scale, want.dtype)
    return err / scale
