#!/usr/bin/env python3
"""Derive the polynomial tables used by csrc/kernels/include/mps_ops/special_math.h.

Development-time tool only (never run at build or test time).  Requires numpy
and scipy.  Every fitted table is a near-minimax polynomial obtained with
Lawson's iteratively reweighted least squares on Chebyshev nodes, computed in
float64 against scipy.special (or a closed-form series where scipy would
cancel), in the monomial basis of the variable that the header evaluates with
Horner's rule, with float32 coefficients chosen one at a time (see
lawson_fit).  The Airy Maclaurin tables are the exact series coefficients
(A&S 10.4.2-3).

For every table the script also reports the error that remains after the
coefficients are rounded to float32 and the polynomial is evaluated in float32
(numpy emulation of the header's Horner loop), so a regression in the fit is
visible before the header is touched.

Usage:  python tools/fit_special_coefficients.py   > tables.txt
The printed block, from the "(begin)" to the "(end)" marker line, replaces
the same block in the header verbatim (coefficients are listed lowest degree
first, as `special_detail::horner` expects).  Diagnostics (fit errors, and
the error left after float32 rounding of the coefficients and float32
evaluation) go to stderr.
"""

import math
import sys

import numpy as np
import scipy.special as sp
from numpy.polynomial import chebyshev as C


# ---------------------------------------------------------------------------
# Fitting machinery
# ---------------------------------------------------------------------------

def _lawson(V, y, w0, iters):
    """Weighted minimax-ish solve of V c ~ y by Lawson's IRLS."""
    n = len(y)
    lw = np.full(n, 1.0 / n)
    c = None
    for _ in range(iters):
        sw = np.sqrt(lw) * w0
        c, *_ = np.linalg.lstsq(V * sw[:, None], y * sw, rcond=None)
        err = np.abs(V @ c - y) * w0
        lw = lw * err
        lw /= lw.sum()
    return c


def lawson_fit(func, a, b, deg, relative=True, n_nodes=4000, iters=40, weight=None):
    """Near-minimax polynomial of degree `deg` for func on [a, b], with
    float32 coefficients.

    The error is weighted by 1/|func| (relative=True), by 1 (relative=False),
    or by weight(v) when given.  Coefficients are fixed one at a time from
    the lowest degree: after rounding c_0..c_{j-1} to float32, the remaining
    ones are refitted to the residual (basis v^j T_k(s), Chebyshev T_k in
    the interval variable s) before c_j is rounded.  This keeps the rounding
    of the dominant low-order coefficients from leaving a systematic bias
    (worth ~1 ulp in the final functions).

    Returns (monomial coefficients in v, lowest first, float32-representable
    float64 values; max weighted error of the float64 evaluation of those
    coefficients on the nodes)."""
    k = np.arange(n_nodes)
    v = 0.5 * (a + b) + 0.5 * (b - a) * np.cos(np.pi * (k + 0.5) / n_nodes)
    y = func(v)
    if weight is not None:
        w0 = weight(v)
    else:
        w0 = 1.0 / np.abs(y) if relative else np.ones_like(y)
    s = (2.0 * v - (a + b)) / (b - a)
    alpha, beta = 2.0 / (b - a), -(a + b) / (b - a)
    fixed = []
    for j in range(deg + 1):
        resid = y - (np.polynomial.polynomial.polyval(v, fixed) if fixed else 0.0)
        V = C.chebvander(s, deg - j) * (v ** j)[:, None]
        c = _lawson(V, resid, w0, iters)
        # q(v) = sum_k c_k T_k(alpha v + beta); the free part is v^j q(v),
        # so its degree-j coefficient is q's constant term in powers of v.
        q = np.polynomial.Polynomial(C.cheb2poly(c))(np.polynomial.Polynomial([beta, alpha]))
        fixed.append(float(np.float32(q.coef[0])))
    coef = np.array(fixed)
    err = np.abs(np.polynomial.polynomial.polyval(v, coef) - y) * w0
    return coef, float(err.max())


def horner_f32(coef, v):
    """Float32 emulation of special_detail::horner (r = fma(r, v, c[i])).
    The float32 product is exact in float64, so one float64 add and one
    rounding to float32 emulate the fma (up to a negligible double
    rounding)."""
    c32 = np.asarray(coef, dtype=np.float32).astype(np.float64)
    v = np.asarray(v, dtype=np.float32).astype(np.float64)
    r = np.full_like(v, c32[-1]).astype(np.float32)
    for c in c32[-2::-1]:
        r = (r.astype(np.float64) * v + c).astype(np.float32)
    return r


def check_f32(coef, func, a, b, relative=True, n=200001, weight=None):
    v = np.linspace(a, b, n).astype(np.float32).astype(np.float64)
    y = func(v)
    got = horner_f32(coef, v).astype(np.float64)
    e = np.abs(got - y)
    if weight is not None:
        e = e * weight(v)
    elif relative:
        e = e / np.abs(y)
    return float(e.max())


def emit(name, coef, comment):
    c32 = np.asarray(coef, dtype=np.float32)
    print()
    print(f"// {comment}")
    print(f"constant float {name}[{len(c32)}] = {{")
    for c in c32:
        print(f"    {float(c):.9e}f,")
    print("};")


def table(name, func, a, b, deg, comment, relative=True, weight=None):
    coef, e64 = lawson_fit(func, a, b, deg, relative=relative, weight=weight)
    e32 = check_f32(coef, func, a, b, relative=relative, weight=weight)
    kind = "weighted" if weight is not None else ("rel" if relative else "abs")
    print(f"// fit {name}: degree {deg} on [{a:.6g}, {b:.6g}], float64 eval of f32 coefs {kind} err {e64:.3e},"
          f" float32 Horner {kind} err {e32:.3e}", file=sys.stderr)
    emit(name, coef, f"{comment}  [degree {deg}, fit {kind} err {e64:.2e}]")
    return coef


# ---------------------------------------------------------------------------
# Target functions (float64)
# ---------------------------------------------------------------------------

def erf_over_x(w):
    """erf(x)/x as a function of w = x^2 (series for tiny w avoids 0/0)."""
    x = np.sqrt(w)
    out = np.empty_like(w)
    small = x < 1e-4
    out[~small] = sp.erf(x[~small]) / x[~small]
    ws = w[small]
    out[small] = 2.0 / math.sqrt(math.pi) * (1.0 - ws / 3.0 + ws * ws / 10.0)
    return out


def log1p_tail(w):
    """(2*atanh(s) - 2*s) / s^3 = sum_k 2 w^k / (2k+3), w = s^2 (closed series)."""
    out = np.zeros_like(w)
    term = np.ones_like(w)
    for k in range(60):
        out += 2.0 * term / (2 * k + 3)
        term = term * w
    return out


def expm1_tail(v):
    """(exp(v) - 1 - v)/v^2, with its Taylor series near 0."""
    vs = np.where(np.abs(v) < 1e-3, 1.0, v)
    out = (np.expm1(vs) - vs) / (vs * vs)
    small = np.abs(v) < 1e-3
    vv = v[small]
    out[small] = 0.5 + vv / 6.0 + vv * vv / 24.0 + vv ** 3 / 120.0
    return out


def erfcx_asym(u):
    """z*erfcx(z) as a function of u = 1/z^2 (-> 1/sqrt(pi) as u -> 0)."""
    z = 1.0 / np.sqrt(np.maximum(u, 1e-300))
    out = z * sp.erfcx(z)
    # erfcx is fine for huge z but keep u == 0 exact.
    out[u <= 0] = 1.0 / math.sqrt(math.pi)
    return out


def erfcx_asym_tail(u):
    """(z erfcx(z) - 1/sqrt(pi)) / u, u = 1/z^2.  For small u the division
    would cancel, so the asymptotic series A&S 7.1.23 is used there
    (u < 1e-3: its truncation error is ~1e-18)."""
    s0 = 1.0 / math.sqrt(math.pi)
    out = np.empty_like(u)
    big = u >= 1e-3
    out[big] = (erfcx_asym(u[big]) - s0) / u[big]
    us = u[~big]
    # z erfcx(z) ~ (1/sqrt(pi)) sum_m (-1)^m (2m-1)!! / (2^m) u^m
    acc = np.zeros_like(us)
    coef = 1.0
    for m in range(1, 7):
        coef *= -(2 * m - 1) / 2.0
        acc += coef * us ** (m - 1)
    out[~big] = s0 * acc
    return out


def sin_pi_tail(v):
    """(sin(pi w) - pi w) / w^3 with v = w^2, by its Taylor series (the
    closed form cancels): sum_k>=1 (-1)^k pi^(2k+1) v^(k-1) / (2k+1)!."""
    return sum((-1) ** k * math.pi ** (2 * k + 1) * v ** (k - 1) / math.factorial(2 * k + 1) for k in range(1, 14))


def cos_pi_tail(v):
    """(cos(pi w) - 1) / w^2 with v = w^2: sum_k>=1 (-1)^k pi^(2k) v^(k-1) / (2k)!."""
    return sum((-1) ** k * math.pi ** (2 * k) * v ** (k - 1) / math.factorial(2 * k) for k in range(1, 14))


def airy_x_of_t(t):
    """x > 0 with zeta = 2/3 x^{3/2} = 1/t."""
    return (1.5 / t) ** (2.0 / 3.0)


def airy_h(t):
    """h(t) = 2 sqrt(pi) x^{1/4} e^{zeta} Ai(x), t = 1/zeta (A&S 10.4.59 form)."""
    out = np.empty_like(t)
    tiny = t < 1e-3
    tt = t[~tiny]
    x = airy_x_of_t(tt)
    out[~tiny] = 2.0 * math.sqrt(math.pi) * x ** 0.25 * sp.airye(x)[0]
    # asymptotic series in t (A&S 10.4.59, u_k of 10.4.58) where scipy's
    # x would be enormous; it is exact to double precision there.
    out[tiny] = airy_series(t[tiny], sign=-1)
    return out


def airy_u(k):
    """u_k of A&S 10.4.58: u_k = (2k+1)(2k+3)...(6k-1) / (216^k k!)."""
    num = 1.0
    for j in range(2 * k + 1, 6 * k, 2):
        num *= j
    return num / (216.0 ** k * math.factorial(k))


def airy_series(t, sign):
    """sum_k sign^k u_k t^k (first 8 terms; only used for t < 1e-3)."""
    out = np.zeros_like(t)
    for k in range(8):
        out += (sign ** k) * airy_u(k) * t ** k
    return out


def airy_PQ(t):
    """P(t), Q(t) of Ai(-x) = x^{-1/4}/sqrt(pi) [P sin(th) - Q cos(th)],
    Bi(-x) = x^{-1/4}/sqrt(pi) [P cos(th) + Q sin(th)], th = zeta + pi/4,
    t = 1/zeta (A&S 10.4.60 / 10.4.64 form), solved from scipy's Ai and Bi."""
    P = np.empty_like(t)
    Q = np.empty_like(t)
    tiny = t < 2e-3
    tt = t[~tiny]
    x = airy_x_of_t(tt)
    ai, _, bi, _ = sp.airy(-x)
    scale = math.sqrt(math.pi) * x ** 0.25
    a, b = ai * scale, bi * scale
    # zeta = 1/tt exactly by construction of x (up to x's rounding, which
    # is a relative 1e-16 change of zeta: harmless for zeta < 500).
    th = 2.0 / 3.0 * x * np.sqrt(x) + math.pi / 4
    s, c = np.sin(th), np.cos(th)
    P[~tiny] = a * s + b * c
    Q[~tiny] = b * s - a * c
    # A&S 10.4.60: P ~ sum (-1)^k u_{2k} t^{2k}, Q ~ sum (-1)^k u_{2k+1} t^{2k+1}
    ts = t[tiny]
    ps = np.zeros_like(ts)
    qs = np.zeros_like(ts)
    for k in range(5):
        ps += (-1) ** k * airy_u(2 * k) * ts ** (2 * k)
        qs += (-1) ** k * airy_u(2 * k + 1) * ts ** (2 * k + 1)
    P[tiny] = ps
    Q[tiny] = qs
    return P, Q


def airy_maclaurin(n_terms):
    """A&S 10.4.2-3: Ai(x) = c1 f(x) - c2 g(x),
    f = sum 3^k (1/3)_k x^{3k}/(3k)!, g = sum 3^k (2/3)_k x^{3k+1}/(3k+1)!.
    Returned as coefficients of u = x^3 for c1*f and c2*g/x (exact rational
    recurrences evaluated in float64)."""
    c1 = 1.0 / (3.0 ** (2.0 / 3.0) * math.gamma(2.0 / 3.0))   # Ai(0)
    c2 = 1.0 / (3.0 ** (1.0 / 3.0) * math.gamma(1.0 / 3.0))   # -Ai'(0)
    f = [c1]
    g = [c2]
    for k in range(1, n_terms):
        # ratio of consecutive terms: 3 (k-1+1/3) / ((3k)(3k-1)(3k-2))
        f.append(f[-1] * 3.0 * (k - 1 + 1.0 / 3.0) / ((3 * k) * (3 * k - 1) * (3 * k - 2)))
        g.append(g[-1] * 3.0 * (k - 1 + 2.0 / 3.0) / ((3 * k + 1) * (3 * k) * (3 * k - 1)))
    return np.array(f), np.array(g)


def float_split(value_hi_prec, parts):
    """value = p0 + p1 + ... with each p_i the float32 nearest the remainder.
    value_hi_prec is a (float64 hi, float64 lo) pair, enough for 3 parts."""
    hi, lo = value_hi_prec
    out = []
    rem_hi, rem_lo = hi, lo
    for _ in range(parts):
        p = float(np.float32(rem_hi + rem_lo))
        out.append(p)
        # exact in float64: p and rem_hi agree to ~24 bits
        rem_hi, rem_lo = rem_hi - p, rem_lo
        rem_hi, rem_lo = rem_hi + rem_lo, (rem_hi - (rem_hi + rem_lo)) + rem_lo
    return out


def print_constants():
    """The float32 splits of exact constants used inline in the header
    (not fitted; printed so that they can be checked).  Each pair/triple is
    the float32 nearest the value, then the float32 nearest the remainder."""
    pi_hi, pi_lo = math.pi, 1.2246467991473532e-16        # pi = hi + lo
    ln2_hi, ln2_lo = math.log(2.0), 2.3190468138462996e-17  # ln 2 = hi + lo
    isqpi = 1.0 / math.sqrt(math.pi)
    isqpi_lo = -(isqpi * isqpi * math.pi - 1.0) * isqpi / 2.0  # one Newton step
    isq2 = math.sqrt(0.5)
    isq2_lo = -(2.0 * isq2 * isq2 - 1.0) * isq2 / 2.0
    rows = [
        ("pi/2 (kPio2_1..3)", float_split((pi_hi / 2, pi_lo / 2), 3)),
        ("pi/4 (kPio4Hi, kPio4Lo)", float_split((pi_hi / 4, pi_lo / 4), 2)),
        ("2/3 (kTwoThirdsHi, Lo)", float_split((2.0 / 3.0, 3.700743415417188e-17), 2)),
        ("1/sqrt(pi) (kInvSqrtPiHi, Lo)", float_split((isqpi, isqpi_lo), 2)),
        ("1/sqrt(2) (kInvSqrt2, kInvSqrt2Lo)", float_split((isq2, isq2_lo), 2)),
    ]
    ln2_hi15 = float.fromhex("0x1.62e4p-1")  # 0x3f317200: ln 2 to 15 bits
    rows.append(("ln2 (kLn2Hi = 0x3f317200, kLn2Lo)", [ln2_hi15, float(np.float32((ln2_hi - ln2_hi15) + ln2_lo))]))
    print("// constants used inline (float32 splits of exact values):")
    for name, parts in rows:
        print("//   %-36s %s" % (name, ", ".join("%.9ef" % p for p in parts)))


def ndtri_scale(w):
    """ndtri(p) / (2p - 1) as a function of w = -log(4 p (1 - p)), the
    function the header's ndtri tables fit (positive; sqrt(pi/2) at w = 0).
    With pm = min(p, 1 - p) = e^-w / (2 (1 + sqrt(1 - e^-w))) and
    |2p - 1| = sqrt(1 - e^-w): near the centre sqrt2 erfinv(x) / x (erfinv
    is well conditioned there), elsewhere -ndtri(pm) / x (scipy's ndtri
    keeps relative accuracy in the tail, where erfinv of x near 1 would not)."""
    w = np.asarray(w, dtype=np.float64)
    x = np.sqrt(-np.expm1(-w))
    out = np.empty_like(w)
    small = x < 1e-6
    out[small] = math.sqrt(math.pi / 2) * (1 + math.pi / 12 * x[small] ** 2)
    central = ~small & (w <= 0.5)
    out[central] = math.sqrt(2) * sp.erfinv(x[central]) / x[central]
    tail = w > 0.5
    pm = np.exp(-w[tail]) / (2 * (1 + x[tail]))
    out[tail] = -sp.ndtri(pm) / x[tail]
    return out


# ---------------------------------------------------------------------------

def main():
    print("// ---- generated by tools/fit_special_coefficients.py (begin) ----")
    print_constants()

    # erf(x) = x + x * P(x^2) for |x| <= 0.5; P = erf(x)/x - 1 is fitted
    # with its error weighted relative to erf(x)/x (the quantity that
    # matters once x is added back exactly).
    table("kErfSmall", lambda w: erf_over_x(w) - 1.0, 0.0, 0.25, 4,
          "erf(x) = x + x * P(x^2), |x| <= 0.5 (error relative to erf(x)/x)",
          weight=lambda w: 1.0 / erf_over_x(w))

    # erfcx(z) = exp(z^2) erfc(z) on [0, 2]: polynomial in v = z - 1
    table("kErfcxMid", lambda v: sp.erfcx(v + 1.0), -1.0, 1.0, 12,
          "erfcx(z) = P(z - 1), 0 <= z <= 2")

    # erfcx(z) = (1/z) * (1/sqrt(pi) + u P(u)), u = 1/z^2, z >= 2.  The
    # constant term is supplied by the header as a float pair, so P is
    # fitted for the remainder with its error weighted relative to the total.
    table("kErfcxAsym", erfcx_asym_tail, 0.0, 0.25, 7,
          "z erfcx(z) = 1/sqrt(pi) + u P(u), u = 1/z^2, z >= 2 (error relative to z erfcx(z))",
          weight=lambda u: u / erfcx_asym(u))

    # exp(v) = 1 + v + v^2 P(v), |v| <= 0.36 (after Cody-Waite reduction)
    table("kExpm1", expm1_tail, -0.36, 0.36, 5,
          "(exp(v) - 1 - v)/v^2 = P(v), |v| <= 0.36")

    # log1p(f) = f - s*(f - s^2 * P(s^2)), s = f/(2+f), |s| <= 1/3
    table("kLog1pTail", log1p_tail, 0.0, 1.0 / 9.0, 5,
          "(2 atanh(s) - 2 s)/s^3 = P(s^2), |s| <= 1/3")

    # ndtri(p) = (2p - 1) * S, S a function of w = -log(4 p (1 - p)) in
    # [0, 102] (p down to the smallest subnormal): a polynomial in w - 2.5
    # for w < 5, then in s = sqrt(w) (where S grows like s) about the
    # float32-exact midpoints of [sqrt5, 4.5] and [4.5, 10.125]; centred
    # variables, as powers of s itself were ill-conditioned.
    table("kNdtriCentral", lambda v: ndtri_scale(v + 2.5), -2.5, 2.5, 9,
          "ndtri(p) / (2p - 1) = P(w - 2.5), w = -log(4 p (1 - p)) < 5")
    table("kNdtriTailNear", lambda v: ndtri_scale((v + 3.375) ** 2), math.sqrt(5.0) - 3.375, 4.5 - 3.375, 10,
          "ndtri(p) / (2p - 1) = P(sqrt(w) - 3.375), sqrt5 <= sqrt(w) < 4.5")
    table("kNdtriTailFar", lambda v: ndtri_scale((v + 7.3125) ** 2), 4.5 - 7.3125, 10.125 - 7.3125, 8,
          "ndtri(p) / (2p - 1) = P(sqrt(w) - 7.3125), 4.5 <= sqrt(w) <= 10.125")

    # Airy Maclaurin series (exact coefficients, A&S 10.4.2-3)
    f, g = airy_maclaurin(12)
    # keep terms that matter for |x| <= 2 (|u| <= 8) at the 1e-11 level
    nf = int(np.max(np.nonzero(np.abs(f) * 8.0 ** np.arange(len(f)) > 1e-11)) + 1)
    ng = int(np.max(np.nonzero(np.abs(g) * 2 * 8.0 ** np.arange(len(g)) > 1e-11)) + 1)
    emit("kAiryF", f[:nf], "Ai(0) * f(x), f of A&S 10.4.2, in powers of u = x^3 (exact series)")
    emit("kAiryG", g[:ng], "-Ai'(0) * g(x)/x, g of A&S 10.4.3, in powers of u = x^3 (exact series)")
    print(f"// airy Maclaurin: {nf} f-terms, {ng} g-terms", file=sys.stderr)

    # Airy, x > 1: h(t), t = 1/zeta.  Two pieces: x in (1, 2]
    # (t in [0.53, 1.5], polynomial in t - 1) and x > 2 (t in (0, 0.53]);
    # a single polynomial on (0, 1.5] would cancel badly in float.
    t_two = 1.0 / (2.0 / 3.0 * 2.0 ** 1.5)
    # 1/(2 sqrt(pi)) is folded into the tables (one rounding less).
    k_pos = 0.5 / math.sqrt(math.pi)
    table("kAiryPosNear", lambda u: k_pos * airy_h(u + 1.0), t_two - 1.0, 0.5, 8,
          "x^(1/4) e^zeta Ai(x) = P(1/zeta - 1), 1 < x <= 2")
    table("kAiryPosFar", lambda t: k_pos * airy_h(t), 0.0, t_two, 8,
          "x^(1/4) e^zeta Ai(x) = P(1/zeta), x > 2")

    # Airy, x <= -2: P(t), Q(t)/t, t = 1/zeta in (0, 1/zeta(2)]
    t_neg = t_two
    # 1/sqrt(pi) is folded into both tables.
    k_neg = 1.0 / math.sqrt(math.pi)
    table("kAiryNegP", lambda t: k_neg * airy_PQ(t)[0], 0.0, t_neg, 9,
          "P(t)/sqrt(pi), P of A&S 10.4.60, x <= -2, t = 1/zeta")
    table("kAiryNegQ", lambda t: k_neg * airy_PQ(np.maximum(t, 1e-12))[1] / np.maximum(t, 1e-12),
          0.0, t_neg, 10,
          "Q(t)/(t sqrt(pi)), Q of A&S 10.4.60, x <= -2, t = 1/zeta")

    # Angles in half turns (mps_ops/half_turns.h), |w| <= 1/4, v = w^2:
    # sin(pi w) = pi w + w^3 P(v) and cos(pi w) = 1 + v Q(v), each error
    # weighted relative to the whole function.
    table("kSinPiTail", sin_pi_tail, 0.0, 1.0 / 16, 2,
          "sin(pi w) = pi w + w^3 P(w^2), |w| <= 1/4 (error relative to sin(pi w) / w)",
          weight=lambda v: v / (math.pi + v * sin_pi_tail(v)))
    table("kCosPiTail", cos_pi_tail, 0.0, 1.0 / 16, 3,
          "cos(pi w) = 1 + w^2 P(w^2), |w| <= 1/4 (error relative to cos(pi w))",
          weight=lambda v: v / (1.0 + v * cos_pi_tail(v)))
    print("// ---- generated by tools/fit_special_coefficients.py (end) ----")


if __name__ == "__main__":
    main()
