"""How eigen-decompositions are compared: the CPU's order and phases are its
LAPACK's choice, so eigenvalues are compared as multisets (each of ours
matched to the nearest unmatched one of the reference) against the float64
result, held to the CPU's own float32 error or a backward-error floor, and
eigenvectors by unit norm and relative residual |A v - lambda v| / |A|."""

from __future__ import annotations

import torch

EPS = torch.finfo(torch.float32).eps


def matched_distance(ours, reference) -> float:
    """The largest distance between matched eigenvalues of two 1-D complex
    tensors, pairs taken greedily nearest first (ties of repeated
    eigenvalues pair up either way)."""
    ours, reference = ours.to(torch.complex128), reference.to(torch.complex128)
    distances = (ours[:, None] - reference[None, :]).abs()
    worst = 0.0
    for _ in range(ours.numel()):
        flat = int(distances.argmin())
        i, j = divmod(flat, distances.shape[1])
        worst = max(worst, float(distances[i, j]))
        distances[i, :] = float("inf")
        distances[:, j] = float("inf")
    return worst


def _matrices(a):
    return a.reshape(-1, a.shape[-2], a.shape[-1]) if a.numel() else a.reshape(0, *a.shape[-2:])


def assert_eigenvalues_valid(a, values, where="", slack=4.0):
    """Each matrix's eigenvalues: closed under conjugation (A is real), and
    within `slack` times the CPU's float32 error of the float64 eigenvalues,
    or within the floor n * 32 eps |A|_F (a backward-stable result of a
    well-conditioned matrix)."""
    assert values.dtype == torch.complex64, f"{where}: dtype {values.dtype}"
    assert values.shape == a.shape[:-1], f"{where}: shape {tuple(values.shape)}"
    n = a.shape[-1]
    for m, (matrix, ours) in enumerate(zip(_matrices(a), values.reshape(-1, n) if n else [])):
        truth = torch.linalg.eigvals(matrix.double())
        cpu = torch.linalg.eigvals(matrix)
        ours_error = matched_distance(ours, truth)
        cpu_error = matched_distance(cpu, truth)
        floor = 32 * n * EPS * float(matrix.double().norm())
        assert ours_error <= max(slack * cpu_error, floor), (
            f"{where} matrix {m}: eigenvalue error {ours_error:.3g}, the CPU's {cpu_error:.3g}, floor {floor:.3g}")
        assert matched_distance(ours, ours.conj()) == 0.0, f"{where} matrix {m}: not closed under conjugation"


def assert_eigenvectors_valid(a, values, vectors, where=""):
    """Unit 2-norm columns, each an eigenvector of its eigenvalue to a
    relative residual below n * 32 eps."""
    assert vectors.dtype == torch.complex64, f"{where}: dtype {vectors.dtype}"
    assert vectors.shape == a.shape, f"{where}: shape {tuple(vectors.shape)}"
    if a.numel() == 0:
        return
    n = a.shape[-1]
    v = vectors.to(torch.complex128)
    norms = v.norm(dim=-2)
    assert (norms - 1).abs().max() < 4 * n * EPS, f"{where}: norms {norms}"
    a64 = a.to(torch.complex128)
    residual = (a64 @ v - v * values.to(torch.complex128).unsqueeze(-2)).norm(dim=-2)
    scale = a.double().norm(dim=(-2, -1)).clamp_min(torch.finfo(torch.float32).tiny)
    relative = residual / scale.unsqueeze(-1)
    assert relative.max() < 32 * n * EPS, f"{where}: relative residual {float(relative.max()):.3g}"


def assert_eig_valid(a, result, where=""):
    values, vectors = result
    assert_eigenvalues_valid(a, values, where)
    assert_eigenvectors_valid(a, values, vectors, where)


def symmetric_from(a, uplo="L"):
    """The symmetric matrix A's UPLO triangle holds (the other is ignored)."""
    lower = uplo.upper() == "L"
    triangle = a.tril() if lower else a.triu()
    return triangle + (triangle.tril(-1) if lower else triangle.triu(1)).mT


def assert_eigh_valid(a, uplo, values, vectors, cpu_values, where=""):
    """linalg.eigh's results, whose eigenvectors' signs (and bases of
    repeated eigenvalues) are LAPACK's choice: ascending eigenvalues as near
    the CPU's as float32 rounding of a backward-stable result allows
    (n * 16 eps |A|_F), orthonormal eigenvectors, and a residual
    |A V - V diag(L)| within the same bound; float32 results, the CPU's
    shapes and strides."""
    assert values.dtype == torch.float32 and values.shape == cpu_values.shape, where
    s = symmetric_from(a.double(), uplo)
    n = a.shape[-1]
    if values.numel() == 0:
        return
    scale = float(torch.linalg.matrix_norm(s).max()) or 1.0
    bound = n * 16 * EPS * scale
    assert (values[..., 1:] >= values[..., :-1]).all(), f"{where}: eigenvalues not ascending"
    assert float((values.double() - cpu_values.double()).abs().max()) <= bound, f"{where}: eigenvalues"
    if vectors is None:
        return
    assert vectors.dtype == torch.float32 and vectors.shape == a.shape, where
    v = vectors.double()
    gram = v.mT @ v - torch.eye(n, dtype=torch.float64)
    assert float(gram.abs().max()) <= n * 16 * EPS, f"{where}: eigenvectors not orthonormal"
    residual = s @ v - v * values.double().unsqueeze(-2)
    assert float(residual.abs().max()) <= bound, f"{where}: residual {float(residual.abs().max()):.3g} > {bound:.3g}"


def assert_svd_valid(a, u, s, vh, where="", full_matrices=False):
    """linalg.svd's results, whose singular vectors' signs (and bases where
    singular values repeat or vanish) are LAPACK's choice: descending
    singular values within 4 max(m, n) eps |A|_2 of the float64 ones,
    orthonormal U and Vh (complete where full_matrices), and A rebuilt from
    them within the same bound."""
    m, n = a.shape[-2:]
    k = min(m, n)
    assert s.dtype == torch.float32 and s.shape == (*a.shape[:-2], k), where
    if s.numel():
        truth = torch.linalg.svdvals(a.double())
        bound = 4 * max(m, n) * EPS * max(float(truth.max()), 1e-30)
        assert (s[..., 1:] <= s[..., :-1]).all(), f"{where}: singular values not descending"
        error = float((s.double() - truth).abs().max())
        assert error <= bound, f"{where}: singular values off by {error:.3g} > {bound:.3g}"
    if u is None:
        return
    u_columns, vh_rows = (m, n) if full_matrices else (k, k)
    assert u.shape == (*a.shape[:-2], m, u_columns) and vh.shape == (*a.shape[:-2], vh_rows, n), where
    if u.numel():
        gram = u.double().mT @ u.double() - torch.eye(u_columns, dtype=torch.float64)
        assert float(gram.abs().max()) <= 4 * max(m, 1) * EPS, f"{where}: U not orthonormal"
    if vh.numel():
        gram = vh.double() @ vh.double().mT - torch.eye(vh_rows, dtype=torch.float64)
        assert float(gram.abs().max()) <= 4 * max(n, 1) * EPS * 16, f"{where}: Vh not orthonormal"
    if s.numel():
        rebuilt = (u[..., :, :k].double() * s.double().unsqueeze(-2)) @ vh[..., :k, :].double()
        residual = float((rebuilt - a.double()).abs().max())
        assert residual <= bound, f"{where}: U S Vh off A by {residual:.3g} > {bound:.3g}"
