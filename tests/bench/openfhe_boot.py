#!/usr/bin/env python3
"""OpenFHE's CKKS bootstrapping at parameters matching bench_boot (JSON).

Runs EvalBootstrap (CoeffsToSlots first) on random complex inputs in
[-1, 1] + i [-1, 1] and reports latency, levels left and precision
(-log2 |error| over all slots of all runs: mean, median, min), like
tests/bench/bench_boot.c. Threads: OpenFHE uses OpenMP, so run with
OMP_NUM_THREADS=1 for the single-thread figure.

Usage: openfhe_boot.py [--log-n 16] [--log-slots 15] [--levels-after 6]
                       [--level-budget 4 3] [--scale-bits 59] [--first-mod 60]
                       [--secret sparse|uniform] [--runs 3] [--insecure]
                       [--json PATH]
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--log-slots", type=int, default=15)
    ap.add_argument("--levels-after", type=int, default=6)
    ap.add_argument("--level-budget", type=int, nargs=2, default=[4, 3])
    ap.add_argument("--scale-bits", type=int, default=59)  # OpenFHE needs first - scale <= ~11
    ap.add_argument("--first-mod", type=int, default=60)
    ap.add_argument("--secret", choices=["sparse", "uniform"], default="sparse")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    import openfhe as o

    dist = (o.SecretKeyDist.SPARSE_TERNARY if a.secret == "sparse"
            else o.SecretKeyDist.UNIFORM_TERNARY)
    p = o.CCParamsCKKSRNS()
    p.SetSecretKeyDist(dist)
    p.SetSecurityLevel(o.SecurityLevel.HEStd_NotSet if a.insecure
                       else o.SecurityLevel.HEStd_128_classic)
    p.SetRingDim(1 << a.log_n)
    p.SetScalingModSize(a.scale_bits)
    p.SetFirstModSize(a.first_mod)
    p.SetScalingTechnique(o.ScalingTechnique.FLEXIBLEAUTO)
    slots = 1 << a.log_slots
    p.SetBatchSize(slots)
    p.SetCKKSDataType(o.CKKSDataType.COMPLEX)
    depth = a.levels_after + o.FHECKKSRNS.GetBootstrapDepth(a.level_budget, dist) \
        if hasattr(o, "FHECKKSRNS") else \
        a.levels_after + o.CryptoContext.GetBootstrapDepth(a.level_budget, dist)
    p.SetMultiplicativeDepth(depth)
    t0 = time.time()
    cc = o.GenCryptoContext(p)
    for f in (o.PKESchemeFeature.PKE, o.PKESchemeFeature.KEYSWITCH,
              o.PKESchemeFeature.LEVELEDSHE, o.PKESchemeFeature.ADVANCEDSHE,
              o.PKESchemeFeature.FHE):
        cc.Enable(f)
    cc.EvalBootstrapSetup(a.level_budget, [0, 0], slots)
    kp = cc.KeyGen()
    cc.EvalMultKeyGen(kp.secretKey)
    cc.EvalBootstrapKeyGen(kp.secretKey, slots)
    t_setup = time.time() - t0

    rng = random.Random(1)
    lat, cpu, bits, left = [], [], [], None
    for _ in range(a.runs):
        x = [complex(rng.uniform(-1, 1), rng.uniform(-1, 1)) for _ in range(slots)]
        pt = cc.MakeCKKSPackedPlaintext(x, 1, depth - 1, None, slots)
        ct = cc.Encrypt(kp.publicKey, pt)
        s, c = time.time(), time.process_time()
        out = cc.EvalBootstrap(ct)
        lat.append(time.time() - s)
        cpu.append(time.process_time() - c)
        left = depth - out.GetLevel() if hasattr(out, "GetLevel") else None
        dec = cc.Decrypt(out, kp.secretKey)
        dec.SetLength(slots)
        got = dec.GetCKKSPackedValue()
        for g, w in zip(got, x):
            e = abs(complex(g) - w)
            bits.append(-math.log2(e) if e > 0 else 60.0)
    bits.sort()
    lat.sort()
    cpu.sort()
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    res = {
        "library": "OpenFHE " + getattr(o, "__version__", "1.x"),
        "log_n": a.log_n, "slots": slots, "threads": int(threads), "runs": a.runs,
        "secret": a.secret, "level_budget": a.level_budget, "scale_bits": a.scale_bits,
        "first_mod_bits": a.first_mod, "depth": depth,
        "levels_left": left,
        "latency_s_median": round(lat[len(lat) // 2], 3), "latency_s_min": round(lat[0], 3),
        "cpu_s_median": round(cpu[len(cpu) // 2], 3),
        "precision_bits_mean": round(statistics.fmean(bits), 2),
        "precision_bits_median": round(bits[len(bits) // 2], 2),
        "precision_bits_min": round(bits[0], 2),
        "setup_keygen_s": round(t_setup, 2),
    }
    print("OpenFHE          N=2^%d slots=%-6d threads=%-2s latency %8.3f s (cpu %.3f s)  levels "
          "left %s  precision mean %.2f median %.2f min %.2f bits" % (a.log_n, slots, threads,
                                                   res["latency_s_median"], res["cpu_s_median"],
                                                   left,
                                                   res["precision_bits_mean"],
                                                   res["precision_bits_median"],
                                                   res["precision_bits_min"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
